/**
 * The daemon's wire protocol, shared by the server and the client: newline-delimited JSON in
 * UTF-8, one object per line (docs/daemon.md has the full contract).
 *
 * - A line with `op` (and an `id`) is a request; it gets exactly one response line
 *   `{id, ok: true, result}` or `{id, ok: false, error: {code, message}}`.
 * - `subscribe` answers with `{id, ok: true, result}` at once, then streams
 *   `{id, event: "message", message}` lines, and finally `{id, event: "end"}` (with `error`
 *   when the stream failed).
 * - A parked `wait` may send `{id, event: "warning", warning}` lines before its response, one
 *   for each file it passes over (too large for its reader, not a message), as it meets them.
 * - A line without `op` and `id` is a b00t envelope: fire-and-forget, no response unless it is
 *   refused (then `{id: null, ok: false, error}`).
 */
import { WIRE_OPERATIONS, type WireOp } from "../store/operations.js";

export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/**
 * Unfinished lines held across all connections, at most (default 64 MiB): the line limit bounds
 * one connection, this bounds the many (400 connections each 1 MiB short of a newline).
 */
export const DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/** JSON nested deeper than this is refused before it reaches the parser. */
export const MAX_JSON_DEPTH = 32;

/** The daemon's own ops: the store's come from the operation table (src/store/operations.ts). */
export const DAEMON_OPS = ["info", "hello", "cancel", "envelope", "presence"] as const;

export type DaemonOp = (typeof DAEMON_OPS)[number];

/** Every op a request may name. */
export const OPS: readonly string[] = [...DAEMON_OPS, ...WIRE_OPERATIONS.map((row) => row.op)];

export type Op = DaemonOp | WireOp;

export type RequestId = string | number;

/** An error on the wire: an `AgentChatError`'s fields (docs/daemon.md, "Answers"). */
export interface WireError {
  code: string;
  message: string;
  /**
   * chat.py 0.7's own code for the failure (`LEASE_CONFLICT`, `PATH_LOCK_CONFLICT`), when it is
   * one of its: a client of chat.py's grammar exits by it as on the folder. Absent otherwise.
   */
  reference?: string;
}

export type Response =
  | { id: RequestId | null; ok: true; result: unknown }
  | { id: RequestId | null; ok: false; error: WireError };

export type StreamEvent =
  | { id: RequestId; event: "message"; message: unknown }
  /** A `presence` stream: everyone's presence (or a channel's members'), each time it changed. */
  | { id: RequestId; event: "presence"; agents: unknown }
  | { id: RequestId; event: "end"; error?: WireError }
  /** A parked `wait` passed over a file: told now, not only with the messages it returns. */
  | { id: RequestId; event: "warning"; warning: string };

/** What `info` returns: enough for `agent-chat info` and for a client to size its requests. */
export interface DaemonInfo {
  root: string;
  pid: number;
  version: string;
  sockets: string[];
  maxLineBytes: number;
  /** The most bytes of unfinished lines held across all connections. */
  maxBufferedBytes: number;
  /** Bytes of unfinished lines held now. */
  bufferedBytes: number;
  autoCreate: boolean;
  startedAt: string;
  connections: number;
  subscriptions: number;
  /** This daemon takes `hello` (older ones do not): a client then says who it is, once. */
  hello?: true;
  /** b00t envelopes since the daemon started (absent from older daemons). */
  envelopes?: EnvelopeCounts;
}

/**
 * What became of envelopes, and of every line refused without an `id` (malformed JSON, a line
 * too long, an invalid envelope): nobody may be reading those answers (a b00t client never
 * does), so each is counted here, and logged by `serve`, instead of vanishing.
 */
export interface EnvelopeCounts {
  posted: number;
  refused: number;
  /** The latest refusal: when, and why. */
  lastRefusal: { at: string; code: string; message: string } | null;
}

/**
 * Whether a JSON text nests deeper than `limit`, found by one pass over its brackets (outside
 * strings) before parsing, so that a "JSON bomb" of a million `[` costs a scan, not a stack.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = closingQuote(text, i);
    else if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) depth--;
    if (depth > limit) return true;
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Where the string that opens at `start` closes (the text's end if it never does). */
function closingQuote(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return text.length;
}
