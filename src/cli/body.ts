import { promises as fsp } from "node:fs";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { DEFAULT_MAX_BODY_BYTES } from "../store/types.js";
import { UsageError } from "./context.js";

export interface BodySources {
  body?: string;
  bodyFile?: string;
}

/**
 * The message body from `--body`, `--body-file` or stdin, refused past the size limit without
 * reading an oversized input into memory.
 */
export async function readBody(
  sources: BodySources,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
): Promise<string> {
  if (sources.body !== undefined && sources.bodyFile !== undefined) {
    throw new UsageError("give the body with --body or --body-file, not both");
  }
  if (sources.body !== undefined) return sources.body;
  if (sources.bodyFile !== undefined) {
    const path = sources.bodyFile;
    if (path === "-") return readStdin(maxBytes);
    let size: number;
    try {
      size = (await fsp.stat(path)).size;
    } catch (err) {
      throw wrapIoError(err, `cannot read body file ${path}`);
    }
    if (size > maxBytes) throw tooLarge(size, maxBytes);
    try {
      return await fsp.readFile(path, "utf8");
    } catch (err) {
      throw wrapIoError(err, `cannot read body file ${path}`);
    }
  }
  if (process.stdin.isTTY) {
    throw new UsageError("give the body with --body, --body-file FILE, or on stdin");
  }
  return readStdin(maxBytes);
}

async function readStdin(maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of process.stdin) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > maxBytes) {
      process.stdin.destroy();
      throw tooLarge(total, maxBytes, true);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function tooLarge(size: number, max: number, partial = false): AgentChatError {
  const shown = partial ? `more than ${max}` : String(size);
  return new AgentChatError(
    "TOO_LARGE",
    `message body is ${shown} bytes; the limit is ${max} (raise it with --max-body)`,
  );
}
