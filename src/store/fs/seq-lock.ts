import { randomBytes } from "node:crypto";
import { promises as fsp } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { AgentChatError, wrapIoError } from "../../core/errors.js";

/**
 * The channel's sequence lock: the directory `_seq.lock`, made with mkdir, exactly as the
 * reference `chat.py` takes it, so a `chat.py` posting into the same channel is excluded.
 *
 * Unlike the reference we record an owner (host, pid, token) inside the directory. A lock whose
 * owner is a dead process on this host is stale at once; any other lock (another host's, or
 * one without an owner such as the reference's) only after {@link STALE_MS}. Stealing is
 * race-free: a stealer must first create `steal/` inside the very lock instance it judged stale
 * (only one mkdir can win), and then checks that the instance is still the one it judged.
 */
export const LOCK_DIR = "_seq.lock";
export const STALE_MS = 30_000;
export const LOCK_TIMEOUT_MS = 10_000;
const OWNER_FILE = "owner.json";
const STEAL_DIR = "steal";
const HOST = hostname();

export interface LockOwner {
  host: string;
  pid: number;
  token: string;
}

export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

export type Release = () => Promise<void>;

export async function acquireSeqLock(
  channelDir: string,
  options: LockOptions = {},
): Promise<Release> {
  const lockDir = join(channelDir, LOCK_DIR);
  const timeoutMs = options.timeoutMs ?? LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? STALE_MS;
  const owner: LockOwner = { host: HOST, pid: process.pid, token: randomBytes(8).toString("hex") };
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  for (;;) {
    try {
      await fsp.mkdir(lockDir);
      const acquiredAt = Date.now();
      await fsp.writeFile(join(lockDir, OWNER_FILE), JSON.stringify(owner));
      return () => releaseLock(lockDir, owner.token, Date.now() - acquiredAt < staleMs);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") {
        throw new AgentChatError("CHANNEL_NOT_FOUND", `channel folder ${channelDir} is gone`, {
          cause: err,
        });
      }
      if (code !== "EEXIST") throw wrapIoError(err, `cannot take ${lockDir}`);
    }
    const seen = await inspectLock(lockDir);
    if (seen && isStale(seen, staleMs) && (await steal(lockDir, seen))) continue;
    if (Date.now() >= deadline) {
      throw new AgentChatError(
        "LOCK_TIMEOUT",
        `${lockDir} is held by ${describeOwner(seen?.owner)} for more than ${timeoutMs / 1000} s; ` +
          `if no poster is running, remove that directory`,
      );
    }
    // Short, growing, jittered sleeps: a post holds the lock for well under a millisecond.
    await sleep(delay * (0.5 + Math.random()));
    delay = Math.min(delay * 2, 25);
  }
}

/**
 * Held for less than the stale rule by a live process, the lock is still ours: remove the owner
 * file and the directory (the cheap path of every post). Held longer, another host may have
 * taken it over, so only a lock that still carries our token is removed.
 */
async function releaseLock(lockDir: string, token: string, surelyOurs: boolean): Promise<void> {
  if (surelyOurs) {
    try {
      await fsp.unlink(join(lockDir, OWNER_FILE));
      await fsp.rmdir(lockDir);
      return;
    } catch {
      // Something else is inside (a stealer's marker): fall through to the careful path.
    }
  }
  const owner = await readOwner(lockDir);
  if (owner && owner.token !== token) return;
  await fsp.rm(lockDir, { recursive: true, force: true });
}

interface SeenLock {
  ino: number;
  ageMs: number;
  owner?: LockOwner;
}

/** Reads a held lock's identity; undefined when it vanished meanwhile. */
async function inspectLock(lockDir: string): Promise<SeenLock | undefined> {
  let ino: number;
  let mtimeMs: number;
  try {
    const st = await fsp.stat(lockDir);
    ino = st.ino;
    mtimeMs = st.mtimeMs;
  } catch {
    return undefined;
  }
  const seen: SeenLock = { ino, ageMs: Date.now() - mtimeMs };
  const owner = await readOwner(lockDir);
  if (owner) seen.owner = owner;
  return seen;
}

export async function readOwner(lockDir: string): Promise<LockOwner | undefined> {
  try {
    const data = JSON.parse(await fsp.readFile(join(lockDir, OWNER_FILE), "utf8")) as LockOwner;
    if (typeof data.pid === "number" && typeof data.host === "string") return data;
  } catch {
    // No owner (the reference's lock, or an owner still being written): judged by age.
  }
  return undefined;
}

function isStale(seen: SeenLock, staleMs: number): boolean {
  if (seen.owner && seen.owner.host === HOST && !processAlive(seen.owner.pid)) return true;
  return seen.ageMs > staleMs;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function steal(lockDir: string, seen: SeenLock): Promise<boolean> {
  const stealDir = join(lockDir, STEAL_DIR);
  try {
    await fsp.mkdir(stealDir);
  } catch {
    return false; // another stealer won this instance, or it is gone: retry from the top
  }
  const now = await inspectLock(lockDir);
  if (!now || now.ino !== seen.ino || now.owner?.token !== seen.owner?.token) {
    await fsp.rmdir(stealDir).catch(() => {});
    return false;
  }
  const grave = join(lockDir, "..", `.seq.lock.stale-${randomBytes(6).toString("hex")}`);
  try {
    await fsp.rename(lockDir, grave);
  } catch {
    return false;
  }
  await fsp.rm(grave, { recursive: true, force: true });
  return true;
}

/** Whether some live poster holds the lock right now (used to spot a file still being written). */
export async function lockHeld(channelDir: string, staleMs = STALE_MS): Promise<boolean> {
  const seen = await inspectLock(join(channelDir, LOCK_DIR));
  return seen !== undefined && !isStale(seen, staleMs);
}

function describeOwner(owner: LockOwner | undefined): string {
  return owner ? `pid ${owner.pid} on ${owner.host}` : "another poster";
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
