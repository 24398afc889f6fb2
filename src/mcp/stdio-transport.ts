import type { Readable, Writable } from "node:stream";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { LineSplitter } from "../core/ndjson.js";
import { paramsProblem } from "./request-params.js";

/** The longest JSON-RPC line accepted by default: a 1 MiB body, escaped, with room to spare. */
export const DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** How much of an oversized line is kept to find its `id`. */
const HEAD_BYTES = 4096;

export interface BoundedStdioOptions {
  maxMessageBytes?: number;
  /** Told about each refused line (the CLI prints it on stderr). */
  warn?: (message: string) => void;
}

/**
 * The stdio transport of the MCP server, framing lines itself instead of the SDK's
 * `StdioServerTransport`: that one holds a line of up to 10 MB, then gives up on the whole
 * session and closes, so one oversized message ended the server with status 0 and no word. Here
 * a line longer than the limit is answered at once with a JSON-RPC error (carrying its `id` when
 * the first bytes give it away), the rest of it is dropped as it arrives without being kept, and
 * the session goes on. A line that is not JSON gets the JSON-RPC parse error.
 */
export class BoundedStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  private readonly maxBytes: number;
  private readonly lines: LineSplitter;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly options: BoundedStdioOptions = {},
  ) {
    this.maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.lines = new LineSplitter({
      maxLineBytes: this.maxBytes,
      headBytes: HEAD_BYTES,
      onLine: (line) => this.onLine(line),
      onTooLong: ({ head }) => this.refuse(head),
    });
  }

  async start(): Promise<void> {
    this.input.on("data", this.onData);
    this.input.on("error", this.onInputError);
  }

  async close(): Promise<void> {
    this.input.off("data", this.onData);
    this.input.off("error", this.onInputError);
    this.input.pause();
    this.lines.reset();
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.output.write(serializeMessage(message))) resolve();
      else this.output.once("drain", resolve);
    });
  }

  private readonly onInputError = (error: Error) => this.onerror?.(error);

  private readonly onData = (data: Buffer | string) => {
    this.lines.push(typeof data === "string" ? Buffer.from(data) : data);
  };

  /** Answers an oversized line as soon as it passes the limit; its rest is dropped unread. */
  private refuse(head: Buffer): void {
    const message = `message refused: longer than ${this.maxBytes} bytes (the longest line this server accepts)`;
    this.options.warn?.(message);
    void this.sendError(topLevelId(head.toString("utf8")), -32600, message);
  }

  private onLine(raw: Buffer): void {
    const text = raw.toString("utf8");
    if (text.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch (err) {
      if (err instanceof SyntaxError) {
        void this.sendError(null, -32700, `parse error: ${err.message}`);
      } else this.onerror?.(err as Error);
      return;
    }
    const problem = paramsProblem(message);
    if (problem !== undefined && "id" in message) {
      void this.sendError(message.id ?? null, -32602, problem);
      return;
    }
    this.onmessage?.(message);
  }

  private sendError(id: string | number | null, code: number, message: string): Promise<void> {
    // The SDK's message type has no response with a null id, though JSON-RPC has one.
    return this.send({ jsonrpc: "2.0", id, error: { code, message } } as JSONRPCMessage);
  }
}

/**
 * The `id` of a JSON-RPC object from the first bytes of its text: the value of an `"id"` key at
 * the top level, when it is a number or a short string; else null.
 */
export function topLevelId(head: string): string | number | null {
  let depth = 0;
  for (let i = 0; i < head.length; i++) {
    const c = head[i]!;
    if (c === '"') {
      const end = stringEnd(head, i);
      if (end < 0) return null;
      const id =
        depth === 1 && head.slice(i, end + 1) === '"id"' ? idValueAfter(head, end + 1) : undefined;
      if (id !== undefined) return id;
      i = end;
    } else depth += NESTING[c] ?? 0;
  }
  return null;
}

/** How each bracket changes the nesting depth outside strings. */
const NESTING: Readonly<Record<string, number>> = { "{": 1, "[": 1, "}": -1, "]": -1 };

/** The index of the quote closing the JSON string opened at `open`; -1 when the head cuts it. */
function stringEnd(head: string, open: number): number {
  let j = open + 1;
  while (j < head.length && head[j] !== '"') j += head[j] === "\\" ? 2 : 1;
  return j < head.length ? j : -1;
}

/** The number or short string after an `"id"` key ending just before `from`, if it is whole. */
function idValueAfter(head: string, from: number): string | number | undefined {
  const m = /^\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*[,}]/.exec(head.slice(from));
  return m ? (JSON.parse(m[1]!) as string | number) : undefined;
}
