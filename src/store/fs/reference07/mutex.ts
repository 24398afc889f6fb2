import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { join } from "node:path";
import { AgentChatError } from "../../../core/errors.js";

/**
 * chat.py 0.7 serialises every change to a channel's path locks with an advisory `flock(2)` on
 * `CH/.path-locks.lock` (and takes `_seq.lock` inside it, to post its audit message). Node has
 * no `flock`, so util-linux's `flock(1)` takes it on a descriptor we opened and hand it: the
 * lock belongs to that open file, so it stays held after `flock(1)` exits and ends when we close
 * the descriptor, which also happens when this process dies (a crash never leaves it held).
 */
export const PATH_LOCKS_MUTEX = ".path-locks.lock";
/** Its mutex for every change of `CH/tasks/` and `CH/claims/` (the same kind of lock). */
export const TASKS_MUTEX = "_tasks.lock";
/** As long as chat.py waits for the same lock before it gives up. */
const WAIT_SECONDS = 10;
/** The descriptor number the lock file has in `flock(1)`. */
const CHILD_FD = 3;

/**
 * Runs `fn` holding chat.py's path-lock mutex of the channel folder `dir`. Where `flock(1)` is
 * missing (macOS, a minimal container) it runs `fn` without it: our own writers stay excluded
 * by the channel lock, but a chat.py 0.7 locking at the same instant is not.
 */
export function withPathLocksMutex<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  return withMutex(join(dir, PATH_LOCKS_MUTEX), fn);
}

/** Runs `fn` holding chat.py's task mutex (`_tasks.lock`) of the channel folder `dir`. */
export function withTasksMutex<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  return withMutex(join(dir, TASKS_MUTEX), fn);
}

async function withMutex<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const fd = openLockFile(path);
  try {
    // Loaded here, not at start-up: the hot commands (post, read, wait) never take it.
    const { spawn } = await import("node:child_process");
    await lock(spawn, fd, path);
    return await fn();
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens (creating) the lock file without following a link, and only as a regular file: the
 * root is untrusted, and a planted link must not make us create or lock a file elsewhere.
 * O_NONBLOCK keeps a planted FIFO from blocking the open.
 */
function openLockFile(path: string): number {
  const { O_RDONLY, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644);
  } catch (err) {
    throw new AgentChatError("UNSAFE_FILE", `${path} cannot be opened as a plain file; remove it`, {
      cause: err,
    });
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new AgentChatError("UNSAFE_FILE", `${path} is not a regular file; remove it`);
  }
  return fd;
}

type Spawn = typeof import("node:child_process").spawn;

/** Takes the exclusive lock on `fd` with `flock(1)`; resolves once it is held (or no flock). */
function lock(spawn: Spawn, fd: number, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("flock", ["-x", "-w", String(WAIT_SECONDS), String(CHILD_FD)], {
      stdio: ["ignore", "ignore", "ignore", fd],
    });
    child.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") resolve();
      else reject(err);
    });
    child.once("exit", (code) => {
      if (code === 0) return resolve();
      reject(
        new AgentChatError(
          "LOCK_TIMEOUT",
          `${path} is held by another writer (chat.py?) for over ${WAIT_SECONDS}s`,
        ),
      );
    });
  });
}
