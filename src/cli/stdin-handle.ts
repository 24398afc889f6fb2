import { fstatSync } from "node:fs";
import { readStdinReady } from "./stdio.js";

/**
 * Reading stdin through libuv's stream handle itself, as `process.stdin` does underneath, but
 * without the stream and `net` modules it loads first (a quarter of `node -e 0`'s CPU on a
 * hook's start). Node's `spawn` gives a child a socket as stdin; a synchronous read of it has
 * no timeout, and an `fs.read` left pending on the thread pool holds the process's exit for
 * ever, so a handle on the event loop is the one way to wait for it with a timeout. The handle
 * is Node's internal binding, reached through `process.binding`: every part of it is checked
 * before use, and anything unexpected means `undefined`, for the caller to use `process.stdin`.
 */
interface StreamHandle {
  open(fd: number): number;
  readStart(): number;
  readStop(): number;
  onread: (buffer: ArrayBuffer | undefined) => void;
}

interface HandleBinding {
  open(): StreamHandle;
  /** The last read's byte count (negative: an error or the end), and where its bytes start. */
  read: { state: Int32Array; bytes: number; offset: number };
}

/** What {@link readStdinHandle} read, and whether stdin held more than it may read. */
export interface StdinRead {
  bytes: Buffer;
  /** More than `max` bytes came: `bytes` holds those before the chunk that went past it. */
  over: boolean;
}

/**
 * All of stdin without Node's streams where Node allows, at most `max` bytes (and waiting at
 * most `ms` when given): a file or a pipe that holds it all already is read at once, a socket
 * (Node's spawn gives one) or a pipe still being written through the stream handle. `head`
 * instead when only `process.stdin` can read the rest (a terminal, a device, a Node without the
 * handle): the bytes already taken from a pipe, which the caller puts first.
 */
export async function readStdinWithoutStreams(
  max: number,
  ms?: number,
): Promise<{ read: StdinRead } | { head: Buffer }> {
  const ready = readStdinReady(max);
  if (ready?.complete) return { read: { bytes: ready.bytes, over: ready.over === true } };
  const head = ready?.bytes ?? Buffer.alloc(0);
  const rest = readStdinHandle(head, max, ms);
  return rest ? { read: await rest } : { head };
}

/**
 * Reads stdin (a socket, or a pipe still open) to its end, at most `max` bytes, and for at most
 * `ms` when given: what came by then, after `head` (what the caller read already). Undefined when
 * stdin is neither or this Node does not offer the handle as expected.
 */
function readStdinHandle(head: Buffer, max: number, ms?: number): Promise<StdinRead> | undefined {
  const binding = stdinIsStream() ? handleBinding() : undefined;
  const handle = binding && openHandle(binding);
  if (!binding || !handle) return undefined;
  return new Promise((resolve) => {
    const chunks = [head];
    let size = head.length;
    // Stopped, not closed: stdin stays open, as `process.stdin.pause()` leaves it, and a
    // handle that does not read holds the event loop no longer.
    const done = (over = false) => {
      clearTimeout(timer);
      handle.readStop();
      resolve({ bytes: Buffer.concat(chunks), over });
    };
    const timer = ms === undefined ? undefined : setTimeout(done, ms);
    handle.onread = (buffer) => {
      const n = binding.read.state[binding.read.bytes]!;
      if (n < 0 || !buffer) return done();
      const offset = binding.read.state[binding.read.offset]!;
      size += n;
      if (size > max) return done(true);
      chunks.push(Buffer.from(buffer, offset, n));
    };
    // Unreadable from the start: as an error of `process.stdin` would, it ends the input.
    if (handle.readStart() !== 0) done();
  });
}

function stdinIsStream(): boolean {
  try {
    const st = fstatSync(0);
    return st.isSocket() || st.isFIFO();
  } catch {
    return false;
  }
}

/** A handle on fd 0, or undefined when libuv refuses it (it then holds nothing). */
function openHandle(binding: HandleBinding): StreamHandle | undefined {
  try {
    const handle = binding.open();
    return handle.open(0) === 0 ? handle : undefined;
  } catch {
    return undefined;
  }
}

/** Node's pipe and stream bindings, when they have the shape this module relies on. */
function handleBinding(): HandleBinding | undefined {
  // `--pending-deprecation` makes every `process.binding` call print a warning.
  if (pendingDeprecation()) return undefined;
  try {
    const binding = (process as unknown as { binding(name: string): Record<string, unknown> })
      .binding;
    const pipe = binding("pipe_wrap");
    const stream = binding("stream_wrap");
    const Pipe = pipe.Pipe as (new (type: number) => StreamHandle) | undefined;
    const type = (pipe.constants as Record<string, unknown> | undefined)?.SOCKET;
    const { streamBaseState: state, kReadBytesOrError: bytes, kArrayBufferOffset: offset } = stream;
    if (typeof Pipe !== "function" || typeof type !== "number") return undefined;
    if (!(state instanceof Int32Array) || typeof bytes !== "number") return undefined;
    if (typeof offset !== "number") return undefined;
    return { open: () => new Pipe(type), read: { state, bytes, offset } };
  } catch {
    return undefined;
  }
}

function pendingDeprecation(): boolean {
  const flag = "--pending-deprecation";
  return (
    process.execArgv.includes(flag) ||
    (process.env.NODE_OPTIONS ?? "").includes(flag) ||
    process.env.NODE_PENDING_DEPRECATION === "1"
  );
}
