import { readFileSync, statSync } from "node:fs";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { DEFAULT_MAX_BODY_BYTES } from "../store/types.js";
import { UsageError } from "./context.js";
import { readAllStdin } from "./stdio.js";

export interface BodySources {
  body?: string;
  bodyFile?: string;
}

/**
 * The message body from `--body`, `--body-file` or stdin, refused past the size limit without
 * reading an oversized input into memory. With `orNone`, none given and stdin a terminal is an
 * empty body (a post whose title says it all), not a usage error.
 */
export async function readBody(
  sources: BodySources,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
  orNone = false,
): Promise<string> {
  if (sources.body !== undefined && sources.bodyFile !== undefined) {
    throw new UsageError("give the body with --body or --body-file, not both");
  }
  if (sources.body !== undefined) return sources.body;
  if (sources.bodyFile !== undefined) {
    const path = sources.bodyFile;
    // Asked for by name: read from a terminal too, until its end of input.
    if (path === "-") return readStdin(maxBytes, true);
    return decodeBody(readBodyFile(path, maxBytes), `body file ${path}`);
  }
  return readStdin(maxBytes, false, orNone);
}

/** Read synchronously: a one-shot command has nothing else to do meanwhile (no thread pool). */
function readBodyFile(path: string, maxBytes: number): Buffer {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    throw wrapIoError(err, `could not read body file ${path}`);
  }
  if (size > maxBytes) throw tooLarge(size, maxBytes);
  try {
    return readFileSync(path);
  } catch (err) {
    throw wrapIoError(err, `could not read body file ${path}`);
  }
}

/** All of stdin; a terminal only when asked for by name (`--body-file -`). */
async function readStdin(maxBytes: number, fromTerminal: boolean, orNone = false): Promise<string> {
  const read = await readAllStdin(maxBytes, { terminal: fromTerminal });
  if (!read && orNone) return "";
  if (!read) throw new UsageError("give the body with --body, --body-file FILE, or on stdin");
  if (read.over) throw tooLarge(0, maxBytes, true);
  return decodeBody(read.bytes, "the body on stdin");
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The text of a body, refused when it is not UTF-8: decoded leniently it would be posted with
 * U+FFFD in place of each bad byte, a message that is not what its author wrote.
 */
function decodeBody(data: Buffer, what: string): string {
  try {
    return STRICT_UTF8.decode(data);
  } catch {
    const at = firstInvalidByte(data);
    const byte = data[at]!.toString(16).padStart(2, "0");
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `${what} is not valid UTF-8 (byte 0x${byte} at offset ${at}); nothing was posted`,
    );
  }
}

/** The offset of the first byte that a lenient decoder replaced with U+FFFD. */
function firstInvalidByte(data: Buffer): number {
  const text = data.toString("utf8");
  for (let i = text.indexOf("\uFFFD"); i !== -1; i = text.indexOf("\uFFFD", i + 1)) {
    const at = Buffer.byteLength(text.slice(0, i));
    // A U+FFFD the author wrote is three valid bytes; a replacement stands for a bad one.
    if (data[at] !== 0xef || data[at + 1] !== 0xbf || data[at + 2] !== 0xbd) return at;
  }
  return 0;
}

function tooLarge(size: number, max: number, partial = false): AgentChatError {
  const shown = partial ? `more than ${max}` : String(size);
  return new AgentChatError(
    "TOO_LARGE",
    `message body is ${shown} bytes; the limit is ${max} (a channel takes more only when ` +
      `made so, up to 64 MiB: agent-chat --max-body BYTES init CHANNEL; then post with the same --max-body)`,
  );
}
