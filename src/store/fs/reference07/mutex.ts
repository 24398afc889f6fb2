import { lstatSync } from "node:fs";
import { join } from "node:path";
import { AgentChatError } from "../../../core/errors.js";

/**
 * chat.py 0.7 serialises every change to a channel's path locks with an advisory `flock(2)` on
 * `CH/.path-locks.lock` (and takes `_seq.lock` inside it, to post its audit message). Node has
 * no `flock`, so util-linux's `flock(1)` holds it for us: a child locks the file, says `locked`,
 * and keeps it until its standard input closes, which also happens when this process dies, so
 * a crash never leaves the lock held.
 */
export const PATH_LOCKS_MUTEX = ".path-locks.lock";
/** As long as chat.py waits for the same lock before it gives up. */
const WAIT_SECONDS = 10;

/**
 * Runs `fn` holding chat.py's path-lock mutex of the channel folder `dir`. Where `flock(1)` is
 * missing (macOS, a minimal container) it runs `fn` without it: our own writers stay excluded
 * by the channel lock, but a chat.py 0.7 locking at the same instant is not.
 */
export async function withPathLocksMutex<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const path = join(dir, PATH_LOCKS_MUTEX);
  const st = lstatSync(path, { throwIfNoEntry: false });
  // flock(1) follows a link and creates what it names: anything but a plain file is refused.
  if (st && !st.isFile()) {
    throw new AgentChatError("UNSAFE_FILE", `${path} is not a regular file; remove it`);
  }
  // Loaded here, not at start-up: the hot commands (post, read, wait) never lease paths.
  const { spawn } = await import("node:child_process");
  const release = await acquire(spawn, path);
  try {
    return await fn();
  } finally {
    await release();
  }
}

type Spawn = typeof import("node:child_process").spawn;

function acquire(spawn: Spawn, path: string): Promise<() => Promise<void>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "flock",
      ["-x", "-w", String(WAIT_SECONDS), path, "-c", "echo locked; exec cat >/dev/null"],
      { stdio: ["pipe", "pipe", "ignore"] },
    );
    child.stdin.on("error", () => {}); // a child that has gone already released the lock
    const exited = new Promise<void>((done) => child.once("close", () => done()));
    let held = false;
    child.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") resolve(async () => {});
      else reject(err);
    });
    child.stdout.on("data", (chunk: Buffer) => {
      if (held || !chunk.toString().includes("locked")) return;
      held = true;
      resolve(async () => {
        child.stdin.end();
        await exited;
      });
    });
    child.once("exit", (code) => {
      if (held || code === null) return;
      reject(
        new AgentChatError(
          "LOCK_TIMEOUT",
          `${path} is held by another writer (chat.py?) for over ${WAIT_SECONDS}s`,
        ),
      );
    });
  });
}
