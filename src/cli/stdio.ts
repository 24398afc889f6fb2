import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from "node:fs";
import { EXIT } from "./exit-codes.js";

/**
 * Output of the lean entries, written with plain `write(2)` calls: the first touch of
 * `process.stdout` or `process.stderr` loads Node's whole stream stack, a few milliseconds of a
 * command that then prints one line. Writes are complete and in order, as the streams' are on
 * Linux for files, pipes and terminals. A reader that closed our stdout (`| head -1`) ends the
 * process quietly with the status of SIGPIPE (pipe.ts says why). A descriptor left non-blocking
 * by another process that is full (EAGAIN) hands the rest to the stream, which then takes every
 * later write of that descriptor, so nothing is reordered.
 */
const streamed = { out: false, err: false };

/**
 * Whether a write failed because the reader is gone: EPIPE for a pipe, ECONNRESET for a socket
 * (a host that runs us with a socket as stdout, as Node's own spawn does, and closes it early).
 */
export function readerGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "EPIPE" || code === "ECONNRESET";
}

/** From now on, every write goes through `process.stdout`/`process.stderr` (the full CLI's). */
export function useStreams(): void {
  streamed.out = true;
  streamed.err = true;
}

/**
 * Ends the process with `code` once a lean command is done: its answer is written and its
 * store closed (the records that follow the answer written, its watches and timers gone), so
 * nothing is left for Node's own teardown of the heap to wait for, a few milliseconds more on a
 * busy machine between the answer and the exit its caller waits for. When some output went to
 * a stream (a full pipe left non-blocking), Node ends as usual, once the stream drained.
 */
export function exitWhenWritten(code: number): void {
  process.exitCode = code;
  if (!streamed.out && !streamed.err) process.exit(code);
}

export function writeStdout(text: string): void {
  if (streamed.out) {
    process.stdout.write(text);
    return;
  }
  const rest = writeAll(1, text);
  if (rest === "broken") process.exit(EXIT.BROKEN_PIPE);
  if (rest === undefined) return;
  streamed.out = true;
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (readerGone(err)) process.exit(EXIT.BROKEN_PIPE);
    throw err;
  });
  process.stdout.write(rest);
}

export function writeStderr(text: string): void {
  if (streamed.err) {
    process.stderr.write(text);
    return;
  }
  const rest = writeAll(2, text);
  // Nobody reads our errors any more: there is no one left to tell.
  if (rest === undefined || rest === "broken") return;
  streamed.err = true;
  process.stderr.write(rest);
}

/** Writes all of `text`; what is left when the descriptor would block, or "broken" (reader gone). */
function writeAll(fd: number, text: string): Buffer | "broken" | undefined {
  const bytes = Buffer.from(text);
  let done = 0;
  while (done < bytes.length) {
    try {
      done += writeSync(fd, bytes, done);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EINTR") continue;
      if (readerGone(err)) return "broken";
      if (code === "EAGAIN") return bytes.subarray(done);
      throw err;
    }
  }
  return undefined;
}

/** All of stdin that was read, and whether it held more than the reader may take. */
export interface StdinRead {
  bytes: Buffer;
  /** More than `max` bytes came: `bytes` holds those before the read that went past it. */
  over: boolean;
}

/**
 * All of stdin, at most `max` bytes, waiting at most `ms` when given (then what came by then);
 * undefined when stdin is a terminal and `terminal` is false. A file, or a pipe whose writer is
 * done (a host writes a hook's JSON before the hook starts), is read at once without Node's
 * streams ({@link readStdinReady}); a socket (what Node's `spawn` gives), a pipe still being
 * written or a terminal is read on through `process.stdin`, the one public way to wait on it with
 * a timeout (a pending `fs.read` would hold the process's exit for ever), after the bytes taken.
 */
export async function readAllStdin(
  max: number,
  options: { ms?: number; terminal: boolean },
): Promise<StdinRead | undefined> {
  const ready = readStdinReady(max);
  if (ready?.complete) return { bytes: ready.bytes, over: ready.over === true };
  // Loaded only here: `node:tty` loads `node:net`, which the lean commands otherwise never need.
  if (!ready && !options.terminal && (await import("node:tty")).isatty(0)) return undefined;
  return readStdinStream(ready?.bytes ?? Buffer.alloc(0), max, options.ms);
}

/** The rest of stdin through `process.stdin`, after `head`; rejects when reading it fails. */
function readStdinStream(head: Buffer, max: number, ms?: number): Promise<StdinRead> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    const chunks = [head];
    let size = head.length;
    const settle = (over: boolean, err?: Error) => {
      clearTimeout(timer);
      stdin.off("data", onData).off("end", onEnd).off("error", onError);
      // Paused, not destroyed: stdin stays open for the host, and holds the event loop no longer.
      stdin.pause();
      if (err) reject(err);
      else resolve({ bytes: Buffer.concat(chunks), over });
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) return settle(true);
      chunks.push(chunk);
    };
    const onEnd = () => settle(false);
    const onError = (err: Error) => settle(false, err);
    const timer = ms === undefined ? undefined : setTimeout(onEnd, ms);
    stdin.on("data", onData).once("end", onEnd).once("error", onError);
  });
}

/** What {@link readStdinReady} read: all of stdin (`complete`), or what was there so far. */
export interface StdinPart {
  bytes: Buffer;
  complete: boolean;
  /** Stdin held more than `max` bytes: `bytes` holds those before the read that went past. */
  over?: boolean;
}

/**
 * Reads what stdin already holds without Node's streams: all of a file, or of a pipe whose
 * writer has written and closed it (as a host tool does with a hook's JSON before the hook has
 * started). A pipe still open is read without blocking, through a second, non-blocking opening
 * of it (Linux's /proc/self/fd/0); what was there so far is returned incomplete, for
 * {@link readAllStdin} to read the rest with `process.stdin`. Undefined for a terminal or anything else: the caller
 * reads it all that way. At most `max` bytes.
 */
export function readStdinReady(max: number): StdinPart | undefined {
  let fd: number;
  try {
    const st = fstatSync(0);
    if (st.isFile()) return { bytes: readUpTo(0, max).bytes, complete: true };
    if (!st.isFIFO()) return undefined;
    fd = openSync("/proc/self/fd/0", constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    return readUpTo(fd, max);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readUpTo(fd: number, max: number): StdinPart {
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
      return { bytes: Buffer.concat(chunks), complete: false };
    }
    if (n === 0) return { bytes: Buffer.concat(chunks), complete: true };
    if (size + n > max) return { bytes: Buffer.concat(chunks), complete: true, over: true };
    chunks.push(chunk.subarray(0, n));
    size += n;
  }
}
