import {
  lstatSync,
  mkdirSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
} from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { entryKind, removeFileEntry, removeOwnDir, uniqueHex } from "./root-files.js";

/**
 * A folder's lock `_seq.lock`. In a channel it is the sequence lock, under the name the reference
 * `chat.py` takes with mkdir, so that a `chat.py` posting into the same channel is excluded: its
 * mkdir fails while ours exists. The daemon's socket folder and a K-folder are locked the same
 * way, so one tested lock (crash-safe, never following a planted link) serves all three.
 *
 * Ours is a symbolic link whose target names the owner, `.seq.lock.owner.<pid>.<token>.<host>`:
 * creating a symlink is one atomic step that fails when the name exists, so our lock is never
 * seen without its owner, even when its poster is killed between two system calls (a directory
 * with an owner file inside took two, and a poster killed between them left a lock nobody could
 * tell from a live `chat.py`'s, which only the 30 s rule cleared). The target is a real, empty
 * directory made just before, so that a reference which stats the lock finds a fresh directory.
 *
 * A lock whose owner is a dead process on this host is stale at once; any other lock (another
 * host's, or the reference's owner-less directory) only after {@link STALE_MS}. Stealing is
 * race-free: a stealer must first create `steal/` inside the very lock instance it judged stale
 * (only one mkdir can win), and then checks that the instance is still the one it judged.
 *
 * The root is untrusted (docs/design.md §10): a `_seq.lock` may be a link planted to point anywhere,
 * a file, a FIFO. Only a link whose target is one of our owner names (no separator) and leads
 * to a real directory is ours; only a real directory is the reference's. Anything else is
 * foreign: judged by its own age, marked for stealing by a sibling named after its inode, and
 * removed as the entry it is (unlink), never through it and never recursively.
 *
 * The calls are synchronous on purpose: each is a few microseconds, and not returning to the
 * event loop between them keeps the lock held as briefly as possible when many processes post.
 */
export const LOCK_DIR = "_seq.lock";
const STALE_MS = 30_000;
const LOCK_TIMEOUT_MS = 10_000;
/** Every name the lock leaves beside itself starts so (the store cleans up after the dead). */
export const LOCK_LEFTOVER_PREFIX = ".seq.lock.";
const OWNER_PREFIX = `${LOCK_LEFTOVER_PREFIX}owner.`;
/** Locks being stolen are renamed to these dot-names before they are removed. */
const STALE_PREFIX = `${LOCK_LEFTOVER_PREFIX}stale-`;
/** A stealer's marker, beside the lock and named after the lock instance's inode. */
const STEAL_PREFIX = `${LOCK_LEFTOVER_PREFIX}steal-`;
/** Where earlier versions put the marker: inside the lock instance's folder. */
const LEGACY_STEAL_DIR = "steal";
/** What our owner names look like: `<prefix><pid>.<hex token>.<host>`, never a path. */
const OWNER_NAME = /^\.seq\.lock\.owner\.(\d+)\.([A-Za-z0-9]+)\.([A-Za-z0-9_.-]+)$/;
const INSPECT_EVERY_MS = 100;
/** How far in the future a lock's time may be before it counts as stale. */
const FUTURE_SLACK_MS = 60_000;
const HOST = hostname();

interface LockOwner {
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

export async function acquireDirLock(
  channelDir: string,
  options: LockOptions = {},
): Promise<Release> {
  const lockPath = join(channelDir, LOCK_DIR);
  const timeoutMs = options.timeoutMs ?? LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? STALE_MS;
  const ownerName = `${OWNER_PREFIX}${process.pid}.${uniqueHex()}.${HOST}`;
  const ownerDir = join(channelDir, ownerName);
  makeOwnerDir(ownerDir, channelDir);
  const deadline = Date.now() + timeoutMs;
  const backOff = backOffPauses(options.pause ?? sleep);
  let nextInspection = 0;
  for (;;) {
    if (tryTake(lockPath, ownerName, ownerDir)) {
      const acquiredAt = Date.now();
      return () => releaseLock(lockPath, ownerName, ownerDir, Date.now() - acquiredAt < staleMs);
    }
    // Whether the holder is stale changes slowly: look at most every INSPECT_EVERY_MS, so that
    // many waiters woken by one release each cost a single symlink, not three calls.
    const now = Date.now();
    if (now < nextInspection && now < deadline) {
      await backOff();
      continue;
    }
    nextInspection = now + INSPECT_EVERY_MS;
    const seen = inspectLock(lockPath);
    if (seen && isStale(seen, staleMs) && steal(lockPath, seen)) continue;
    if (Date.now() >= deadline) {
      removeOwnerDir(ownerDir);
      throw lockTimeout(lockPath, seen, timeoutMs);
    }
    await backOff();
  }
}

/** Short, growing, jittered pauses: a post holds the lock for well under a millisecond. */
function backOffPauses(pause: (ms: number) => Promise<void>): () => Promise<void> {
  let delay = 1;
  return async () => {
    await pause(delay * (0.5 + Math.random()));
    delay = Math.min(delay * 2, 25);
  };
}

function lockTimeout(
  lockPath: string,
  seen: ReturnType<typeof inspectLock>,
  timeoutMs: number,
): AgentChatError {
  const age = seen ? `, taken ${(seen.ageMs / 1000).toFixed(1)} s ago` : "";
  return new AgentChatError(
    "LOCK_TIMEOUT",
    `${lockPath} is held by ${describeOwner(seen?.owner)}${age}; waited ${timeoutMs / 1000} s. ` +
      `If no poster is running, remove it`,
  );
}

function makeOwnerDir(ownerDir: string, channelDir: string): void {
  try {
    mkdirSync(ownerDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new AgentChatError("CHANNEL_NOT_FOUND", `channel folder ${channelDir} is gone`, {
        cause: err,
      });
    }
    throw wrapIoError(err, `cannot take ${join(channelDir, LOCK_DIR)}`);
  }
}

/** Points the lock at our owner directory; false when someone else holds it. */
function tryTake(lockPath: string, ownerName: string, ownerDir: string): boolean {
  try {
    symlinkSync(ownerName, lockPath);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    removeOwnerDir(ownerDir);
    throw wrapIoError(err, `cannot take ${lockPath}`);
  }
}

/**
 * Held for less than the stale rule by a live process, the lock is still ours and is released
 * in one step, by removing the link. Held longer, another host may have taken it over, so only
 * a lock that still names us is removed.
 */
function releaseLock(
  lockPath: string,
  ownerName: string,
  ownerDir: string,
  surelyOurs: boolean,
): void {
  if (surelyOurs || readTarget(lockPath) === ownerName) {
    try {
      unlinkSync(lockPath);
    } catch {
      // Already gone (taken over as stale).
    }
  }
  removeOwnerDir(ownerDir);
}

function removeOwnerDir(ownerDir: string): void {
  // An earlier version's stealer may have left its marker inside; nothing else ever is.
  removeOwnDir(ownerDir, [LEGACY_STEAL_DIR]);
}

interface SeenLock {
  ino: number;
  /** With the inode, what tells this instance from a successor that reused its inode number. */
  mtimeMs: number;
  ageMs: number;
  /**
   * `ours`: a link to one of our owner directories; `reference`: chat.py's real directory;
   * `foreign`: anything else (a link elsewhere, a file, a FIFO), planted or corrupt.
   */
  kind: "ours" | "reference" | "foreign";
  /** The link's target, for a link. */
  target?: string;
  owner?: LockOwner;
}

/** A held lock's identity; undefined when it vanished meanwhile. */
function inspectLock(lockPath: string): SeenLock | undefined {
  const st = lstatSync(lockPath, { throwIfNoEntry: false });
  if (!st) return undefined;
  const id = { ino: st.ino, mtimeMs: st.mtimeMs, ageMs: Date.now() - st.mtimeMs };
  if (st.isDirectory()) return { ...id, kind: "reference" };
  if (!st.isSymbolicLink()) return { ...id, kind: "foreign" };
  const target = readTarget(lockPath);
  if (target === undefined) return undefined;
  const owner = parseOwner(target);
  const ownerDir = join(dirname(lockPath), target);
  if (owner && entryKind(ownerDir) === "dir") return { ...id, kind: "ours", target, owner };
  return { ...id, kind: "foreign", target };
}

function readTarget(lockPath: string): string | undefined {
  try {
    return readlinkSync(lockPath);
  } catch {
    return undefined;
  }
}

/** The owner named by our lock's target; undefined for anything else (judged by its age). */
function parseOwner(target: string): LockOwner | undefined {
  const m = OWNER_NAME.exec(target);
  if (!m) return undefined;
  const pid = Number(m[1]);
  return Number.isSafeInteger(pid) ? { pid, token: m[2]!, host: m[3]! } : undefined;
}

function isStale(seen: SeenLock, staleMs: number): boolean {
  if (seen.owner && seen.owner.host === HOST && !processAlive(seen.owner.pid)) return true;
  // A lock dated in the future (planted, or a badly skewed clock) would otherwise never age.
  return seen.ageMs > staleMs || seen.ageMs < -FUTURE_SLACK_MS;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the lock instance `seen`. The stealer first creates the marker
 * `.seq.lock.steal-<inode>` beside it (only one mkdir can win an instance), then checks that
 * the lock is still that instance, so a stealer that judged an instance since released cannot
 * touch its successor. The marker sits beside the lock, not inside it: a `steal/` committed
 * inside a lock folder would otherwise block every stealer for good.
 */
function steal(lockPath: string, seen: SeenLock): boolean {
  const channelDir = dirname(lockPath);
  const marker = join(channelDir, `${STEAL_PREFIX}${seen.ino}`);
  try {
    mkdirSync(marker);
  } catch {
    return false; // another stealer won this instance, or it is gone: retry from the top
  }
  try {
    const now = inspectLock(lockPath);
    if (!sameInstance(now, seen)) return false;
    const grave = join(channelDir, `${STALE_PREFIX}${uniqueHex()}`);
    try {
      renameSync(lockPath, grave);
    } catch {
      return false;
    }
    // The grave is the lock entry itself: a link or file is unlinked, the reference's folder
    // removed only while empty (else it stays, a dot-name nobody reads), never recursively.
    if (seen.kind === "reference") removeOwnDir(grave, [LEGACY_STEAL_DIR]);
    else removeFileEntry(grave);
    if (seen.kind === "ours") removeOwnerDir(join(channelDir, seen.target!));
    return true;
  } finally {
    rmdirSync(marker);
  }
}

function sameInstance(now: SeenLock | undefined, seen: SeenLock): boolean {
  return (
    now !== undefined &&
    now.ino === seen.ino &&
    now.mtimeMs === seen.mtimeMs &&
    now.kind === seen.kind &&
    now.target === seen.target
  );
}

/**
 * Takes over the lock at once when it is ours and its owner is a dead process on this host, so
 * that a reference `chat.py` never meets it: chat.py judges a lock by its age and, after 30 s,
 * tries to rmdir it, which fails on our link and leaves it spinning. Parked waits, watches and
 * the daemon call this on each poll; it costs one lstat when no lock is held.
 */
export function clearDeadOwnerLock(channelDir: string): boolean {
  const lockPath = join(channelDir, LOCK_DIR);
  const seen = inspectLock(lockPath);
  if (seen?.kind !== "ours" || seen.owner!.host !== HOST) return false;
  return !processAlive(seen.owner!.pid) && steal(lockPath, seen);
}

/**
 * Whether `name`, a `.seq.lock.*` entry of `channelDir` that is `ageMs` old, was left by a
 * poster that died (or was stolen from) and may be removed: an owner directory of a dead
 * process on this host, or of another host after twice the stale rule, unless the lock still
 * points to it; anything else of ours (a stolen lock's grave) after a minute.
 */
export function abandonedLockLeftover(channelDir: string, name: string, ageMs: number): boolean {
  const owner = parseOwner(name);
  // Dated in the future: planted, or from a skewed clock; ours live for milliseconds.
  const future = ageMs < -FUTURE_SLACK_MS;
  if (!owner) return ageMs > 60_000 || future;
  if (readTarget(join(channelDir, LOCK_DIR)) === name) return false;
  return owner.host === HOST ? !processAlive(owner.pid) : ageMs > 2 * STALE_MS || future;
}

/**
 * Whether a reference `chat.py` holds the lock right now: it writes messages in place, so a
 * file that does not parse may be one it is still writing. Ours never writes in place.
 */
export function referenceLockHeld(channelDir: string, staleMs = STALE_MS): boolean {
  const seen = inspectLock(join(channelDir, LOCK_DIR));
  return seen?.kind === "reference" && !isStale(seen, staleMs);
}

function describeOwner(owner: LockOwner | undefined): string {
  return owner ? `pid ${owner.pid} on ${owner.host}` : "another poster";
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
