import { randomBytes } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { hostname } from "node:os";
import { basename, join } from "node:path";
import { AgentChatError, wrapIoError } from "../../core/errors.js";

/**
 * The channel's sequence lock: the directory `_seq.lock`, made with mkdir, exactly as the
 * reference `chat.py` takes it, so a `chat.py` posting into the same channel is excluded.
 *
 * Unlike the reference we record an owner (host, pid, token) inside the directory, in the NAME of
 * an empty file (`owner.<pid>.<token>.<host>`): creating a file is one atomic step, so the owner
 * is never seen half-written. A lock whose owner is a dead process on this host is stale at once;
 * any other lock (another host's, or one without an owner such as the reference's) only after
 * {@link STALE_MS}. Stealing is race-free: a stealer must first create `steal/` inside the very
 * lock instance it judged stale (only one mkdir can win), and then checks that the instance is
 * still the one it judged.
 *
 * The calls are synchronous on purpose: each is a few microseconds, and not returning to the
 * event loop between them keeps the lock held as briefly as possible when many processes post.
 */
export const LOCK_DIR = "_seq.lock";
export const STALE_MS = 30_000;
export const LOCK_TIMEOUT_MS = 10_000;
const OWNER_PREFIX = "owner.";
/** Released and stolen locks are renamed to these dot-names before they are removed. */
const RELEASED_PREFIX = ".seq.lock.released-";
const STALE_PREFIX = ".seq.lock.stale-";
const STEAL_DIR = "steal";
const INSPECT_EVERY_MS = 100;
const HOST = hostname();

export interface LockOwner {
  host: string;
  pid: number;
  token: string;
}

export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
  /**
   * How a waiting poster pauses before trying again: the folder store resolves it early when its
   * file watch sees the lock go, so that waiters retry at once instead of sleeping through the
   * free moment (which, under heavy contention, starves unlucky sleepers).
   */
  pause?: (ms: number) => Promise<void>;
}

export type Release = () => void;

export async function acquireSeqLock(
  channelDir: string,
  options: LockOptions = {},
): Promise<Release> {
  const lockDir = join(channelDir, LOCK_DIR);
  const timeoutMs = options.timeoutMs ?? LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? STALE_MS;
  const token = randomBytes(8).toString("hex");
  const ownerFile = join(lockDir, `${OWNER_PREFIX}${process.pid}.${token}.${HOST}`);
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  let nextInspection = 0;
  for (;;) {
    if (tryTake(lockDir, ownerFile, channelDir)) {
      const acquiredAt = Date.now();
      return () => releaseLock(lockDir, ownerFile, token, Date.now() - acquiredAt < staleMs);
    }
    // Whether the holder is stale changes slowly: look at most every INSPECT_EVERY_MS, so that
    // many waiters woken by one release each cost a single mkdir, not three calls.
    const now = Date.now();
    if (now < nextInspection && now < deadline) {
      await (options.pause ?? sleep)(delay * (0.5 + Math.random()));
      delay = Math.min(delay * 2, 25);
      continue;
    }
    nextInspection = now + INSPECT_EVERY_MS;
    const seen = inspectLock(lockDir);
    if (seen && isStale(seen, staleMs) && steal(lockDir, seen)) continue;
    if (Date.now() >= deadline) {
      const age = seen ? `, taken ${(seen.ageMs / 1000).toFixed(1)} s ago` : "";
      throw new AgentChatError(
        "LOCK_TIMEOUT",
        `${lockDir} is held by ${describeOwner(seen?.owner)}${age}; waited ${timeoutMs / 1000} s. ` +
          `If no poster is running, remove that directory`,
      );
    }
    // Short, growing, jittered pauses: a post holds the lock for well under a millisecond.
    await (options.pause ?? sleep)(delay * (0.5 + Math.random()));
    delay = Math.min(delay * 2, 25);
  }
}

/** mkdir the lock and name ourselves in it; false when someone else holds it. */
function tryTake(lockDir: string, ownerFile: string, channelDir: string): boolean {
  try {
    mkdirSync(lockDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code === "ENOENT") {
      throw new AgentChatError("CHANNEL_NOT_FOUND", `channel folder ${channelDir} is gone`, {
        cause: err,
      });
    }
    throw wrapIoError(err, `cannot take ${lockDir}`);
  }
  try {
    closeSync(openSync(ownerFile, "wx"));
  } catch (err) {
    rmSync(lockDir, { recursive: true, force: true });
    throw wrapIoError(err, `cannot take ${lockDir}`);
  }
  return true;
}

/**
 * Held for less than the stale rule by a live process, the lock is still ours. It is released in
 * one step, by renaming it out of the way, so that a poster killed while releasing never leaves
 * a lock without its owner (which only the 30 s rule would clear); the grave is removed after.
 * Held longer, another host may have taken it over, so only a lock that still names our token is
 * removed.
 */
function releaseLock(lockDir: string, ownerFile: string, token: string, surelyOurs: boolean): void {
  if (surelyOurs || readOwner(lockDir)?.token === token) {
    const grave = join(lockDir, "..", `${RELEASED_PREFIX}${token}`);
    try {
      renameSync(lockDir, grave);
    } catch {
      return; // already gone
    }
    try {
      unlinkSync(join(grave, basename(ownerFile)));
      rmdirSync(grave);
    } catch {
      rmSync(grave, { recursive: true, force: true });
    }
  }
}

interface SeenLock {
  ino: number;
  ageMs: number;
  owner?: LockOwner;
}

/** A held lock's identity; undefined when it vanished meanwhile. */
function inspectLock(lockDir: string): SeenLock | undefined {
  const st = statSync(lockDir, { throwIfNoEntry: false });
  if (!st) return undefined;
  const seen: SeenLock = { ino: st.ino, ageMs: Date.now() - st.mtimeMs };
  const owner = readOwner(lockDir);
  if (owner) seen.owner = owner;
  return seen;
}

/** The owner named in a lock; undefined for the reference's lock (judged by its age). */
function readOwner(lockDir: string): LockOwner | undefined {
  let names: string[];
  try {
    names = readdirSync(lockDir);
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (!name.startsWith(OWNER_PREFIX)) continue;
    const [pid, token, ...host] = name.slice(OWNER_PREFIX.length).split(".");
    if (pid && token && host.length > 0 && /^\d+$/.test(pid)) {
      return { pid: Number(pid), token, host: host.join(".") };
    }
  }
  return undefined;
}

function isStale(seen: SeenLock, staleMs: number): boolean {
  if (seen.owner && seen.owner.host === HOST && !processAlive(seen.owner.pid)) return true;
  return seen.ageMs > staleMs;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function steal(lockDir: string, seen: SeenLock): boolean {
  const stealDir = join(lockDir, STEAL_DIR);
  try {
    mkdirSync(stealDir);
  } catch {
    return false; // another stealer won this instance, or it is gone: retry from the top
  }
  const now = inspectLock(lockDir);
  if (!now || now.ino !== seen.ino || now.owner?.token !== seen.owner?.token) {
    try {
      rmdirSync(stealDir);
    } catch {
      // The instance is gone with our marker in it.
    }
    return false;
  }
  const grave = join(lockDir, "..", `${STALE_PREFIX}${randomBytes(6).toString("hex")}`);
  try {
    renameSync(lockDir, grave);
  } catch {
    return false;
  }
  rmSync(grave, { recursive: true, force: true });
  return true;
}

/** Whether some live poster holds the lock right now (used to spot a file still being written). */
export function lockHeld(channelDir: string, staleMs = STALE_MS): boolean {
  const seen = inspectLock(join(channelDir, LOCK_DIR));
  return seen !== undefined && !isStale(seen, staleMs);
}

function describeOwner(owner: LockOwner | undefined): string {
  return owner ? `pid ${owner.pid} on ${owner.host}` : "another poster";
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
