import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  symlinkSync,
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
 * Ours is what chat.py's is, an empty directory made with mkdir, so that chat.py can take over a
 * lock of ours whose poster was killed: after 30 s it removes it with rmdir, which fails on
 * anything but an empty directory (on a link or a folder with a file inside it would spin
 * forever). The owner is written beside the lock, as the link `.seq.lock.by.<inode>.<mtime>`
 * naming `.seq.lock.owner.<pid>.<token>.<host>`: named after the lock instance, it is found
 * with one readlink and can never be taken for the owner of a later lock.
 *
 * A poster killed between the mkdir and that link must not leave a lock only the 30 s rule
 * clears, so every poster first makes its owner directory `.seq.lock.owner.<pid>.<token>.<host>`
 * (kept until it has released), and makes the lock with the sticky bit, which chat.py's never
 * has: a sticky lock without an owner link was made by one of the posters whose owner
 * directories stand beside it, so when all of them are dead processes on this host, it is stale.
 *
 * A lock whose owner is a dead process on this host is stale at once; any other lock (another
 * host's, or the reference's owner-less directory) only after {@link STALE_MS}. Stealing is
 * race-free: a stealer must first create a marker named after the very lock instance it judged
 * stale (only one mkdir can win), and then checks that the instance is still the one it judged.
 *
 * The root is untrusted (docs/design.md §10): a `_seq.lock` may be a link planted to point anywhere,
 * a file, a FIFO. Only a real directory is a lock (ours when its owner link names it, else the
 * reference's), and a link to one of our owner directories is an earlier version's lock. Anything
 * else is foreign: judged by its own age, marked for stealing by a sibling named after its inode,
 * and removed as the entry it is (unlink), never through it and never recursively.
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
/** The link beside a lock instance that names its owner: `<prefix><inode>.<mtime in ns>`. */
const RECORD_PREFIX = `${LOCK_LEFTOVER_PREFIX}by.`;
/** Locks being stolen are renamed to these dot-names before they are removed. */
const STALE_PREFIX = `${LOCK_LEFTOVER_PREFIX}stale-`;
/** A stealer's marker, beside the lock and named after the lock instance's inode. */
const STEAL_PREFIX = `${LOCK_LEFTOVER_PREFIX}steal-`;
/** Where earlier versions put the marker: inside the lock instance's folder. */
const LEGACY_STEAL_DIR = "steal";
/** What our owner names look like: `<prefix><pid>.<hex token>.<host>`, never a path. */
const OWNER_NAME = /^\.seq\.lock\.owner\.(\d+)\.([A-Za-z0-9]+)\.([A-Za-z0-9_.-]+)$/;
/** Ours are made sticky (chat.py's never are): see {@link makerGone}. */
const OUR_LOCK_MODE = 0o1755;
const STICKY = 0o1000;
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
    const stamp = tryTake(lockPath, ownerName);
    if (stamp) {
      const acquiredAt = Date.now();
      return () => {
        releaseLock(lockPath, stamp, Date.now() - acquiredAt < staleMs);
        removeOwnerDir(ownerDir);
      };
    }
    // Whether the holder is stale changes slowly: look at most every INSPECT_EVERY_MS, so that
    // many waiters woken by one release each cost a single mkdir, not three calls.
    const now = Date.now();
    if (now < nextInspection && now < deadline) {
      await backOff();
      continue;
    }
    nextInspection = now + INSPECT_EVERY_MS;
    const seen = inspectLock(lockPath);
    if (seen && isStale(channelDir, seen, staleMs, ownerName) && steal(lockPath, seen)) continue;
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

function removeOwnerDir(ownerDir: string): void {
  // An earlier version's stealer may have left its marker inside; nothing else ever is.
  removeOwnDir(ownerDir, [LEGACY_STEAL_DIR]);
}

/**
 * Makes the lock directory and writes its owner beside it; the lock instance's stamp, or
 * undefined when someone else holds it.
 */
function tryTake(lockPath: string, ownerName: string): string | undefined {
  try {
    mkdirSync(lockPath, OUR_LOCK_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return undefined;
    throw wrapIoError(err, `cannot take ${lockPath}`);
  }
  const stamp = stampOf(lockPath)!;
  writeOwnerRecord(recordPath(lockPath, stamp), ownerName);
  return stamp;
}

/**
 * A record of the same name is one an earlier lock instance left when its poster died between
 * the two steps of a release, and whose inode and time this new instance happens to share: it
 * names a dead owner, so it is replaced, lest our live lock be judged his and stolen.
 */
function writeOwnerRecord(record: string, ownerName: string): void {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      symlinkSync(ownerName, record);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") return; // judged as chat.py's
      removeFileEntry(record);
    }
  }
}

/** What tells one lock instance from any other: its inode and modification time. */
function stampOf(lockPath: string): string | undefined {
  const st = lstatSync(lockPath, { throwIfNoEntry: false, bigint: true });
  return st ? `${st.ino}.${st.mtimeNs}` : undefined;
}

function recordPath(lockPath: string, stamp: string): string {
  return join(dirname(lockPath), `${RECORD_PREFIX}${stamp}`);
}

/**
 * Held for less than the stale rule by a live process, the lock is still ours and is released
 * at once. Held longer, another poster may have taken it over, so only a lock that is still our
 * instance is removed. The lock goes first: a poster killed between the two steps leaves a
 * record that names no lock, not a lock without its owner.
 */
function releaseLock(lockPath: string, stamp: string, surelyOurs: boolean): void {
  if (surelyOurs || stampOf(lockPath) === stamp) removeOwnDir(lockPath, [LEGACY_STEAL_DIR]);
  removeFileEntry(recordPath(lockPath, stamp));
}

interface SeenLock {
  ino: bigint;
  /** The inode and modification time: what tells this instance from a successor. */
  stamp: string;
  ageMs: number;
  /**
   * `ours`: a directory whose owner record names it, or an earlier version's link to one of our
   * owner directories; `unbound`: our sticky directory whose owner record is not written (yet,
   * or ever: its poster was killed in between); `reference`: chat.py's (owner-less) directory;
   * `foreign`: anything else (a link elsewhere, a file, a FIFO), planted or corrupt.
   */
  kind: "ours" | "unbound" | "reference" | "foreign";
  /** The link's target, for a link. */
  target?: string;
  owner?: LockOwner;
}

/** A held lock's identity; undefined when it vanished meanwhile. */
function inspectLock(lockPath: string): SeenLock | undefined {
  const st = lstatSync(lockPath, { throwIfNoEntry: false, bigint: true });
  if (!st) return undefined;
  const ageMs = Date.now() - Number(st.mtimeNs / 1_000_000n);
  const id = { ino: st.ino, stamp: `${st.ino}.${st.mtimeNs}`, ageMs };
  if (st.isDirectory()) {
    const owner = parseOwner(readTarget(recordPath(lockPath, id.stamp)));
    if (owner) return { ...id, kind: "ours", owner };
    return { ...id, kind: (Number(st.mode) & STICKY) !== 0 ? "unbound" : "reference" };
  }
  if (!st.isSymbolicLink()) return { ...id, kind: "foreign" };
  const target = readTarget(lockPath);
  if (target === undefined) return undefined;
  const owner = parseOwner(target);
  const ownerDir = join(dirname(lockPath), target);
  if (owner && entryKind(ownerDir) === "dir") return { ...id, kind: "ours", target, owner };
  return { ...id, kind: "foreign", target };
}

function readTarget(linkPath: string): string | undefined {
  try {
    return readlinkSync(linkPath);
  } catch {
    return undefined;
  }
}

/** The owner named by our lock's target; undefined for anything else (judged by its age). */
function parseOwner(target: string | undefined): LockOwner | undefined {
  const m = OWNER_NAME.exec(target ?? "");
  if (!m) return undefined;
  const pid = Number(m[1]);
  return Number.isSafeInteger(pid) ? { pid, token: m[2]!, host: m[3]! } : undefined;
}

/** `ownerName` is the judge's own, when it is a poster: not one that may have made the lock. */
function isStale(channelDir: string, seen: SeenLock, staleMs: number, ownerName?: string): boolean {
  if (seen.owner && seen.owner.host === HOST && !processAlive(seen.owner.pid)) return true;
  if (seen.kind === "unbound" && makerGone(channelDir, ownerName)) return true;
  // A lock dated in the future (planted, or a badly skewed clock) would otherwise never age.
  return seen.ageMs > staleMs || seen.ageMs < -FUTURE_SLACK_MS;
}

/**
 * Whether the poster that made an unbound lock of ours is gone: each poster makes its owner
 * directory before the lock and removes it only after releasing, so when every owner directory
 * beside the lock (but the judge's own) is a dead process's on this host, none holds the lock.
 */
function makerGone(channelDir: string, ownName?: string): boolean {
  let names: string[];
  try {
    names = readdirSync(channelDir);
  } catch {
    return false;
  }
  return names.every((name) => {
    if (name === ownName || !name.startsWith(OWNER_PREFIX)) return true;
    const owner = parseOwner(name);
    return owner !== undefined && owner.host === HOST && !processAlive(owner.pid);
  });
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
 * touch its successor. The marker sits beside the lock, not inside it: a marker inside a lock
 * folder would keep chat.py's rmdir from ever removing it.
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
    buryStolen(grave, seen);
    return true;
  } finally {
    rmdirSync(marker);
  }
}

/**
 * The grave is the lock entry itself: a link or file is unlinked, a folder removed only while
 * empty (else it stays, a dot-name nobody reads), never recursively; then its owner's record.
 */
function buryStolen(grave: string, seen: SeenLock): void {
  const channelDir = dirname(grave);
  if (entryKind(grave) === "dir") removeOwnDir(grave, [LEGACY_STEAL_DIR]);
  else removeFileEntry(grave);
  if (seen.kind !== "ours") return;
  const { pid, token, host } = seen.owner!;
  if (!seen.target) removeFileEntry(join(channelDir, `${RECORD_PREFIX}${seen.stamp}`));
  removeOwnerDir(join(channelDir, `${OWNER_PREFIX}${pid}.${token}.${host}`));
}

function sameInstance(now: SeenLock | undefined, seen: SeenLock): boolean {
  return (
    now !== undefined &&
    now.stamp === seen.stamp &&
    now.kind === seen.kind &&
    now.target === seen.target &&
    now.owner?.token === seen.owner?.token
  );
}

/**
 * Takes over the lock at once when it is ours and its owner is a dead process on this host, so
 * that a reference `chat.py` waits for it no longer than a moment: chat.py judges a lock by its
 * age alone and takes it over only after 30 s. Parked waits, watches and the daemon call this on
 * each poll; it costs one lstat when no lock is held.
 */
export function clearDeadOwnerLock(channelDir: string): boolean {
  const lockPath = join(channelDir, LOCK_DIR);
  const seen = inspectLock(lockPath);
  if (seen?.kind === "unbound") return makerGone(channelDir) && steal(lockPath, seen);
  if (seen?.kind !== "ours" || seen.owner!.host !== HOST) return false;
  return !processAlive(seen.owner!.pid) && steal(lockPath, seen);
}

/**
 * Whether `name`, a `.seq.lock.*` entry of `channelDir` that is `ageMs` old, was left by a
 * poster that died (or was stolen from) and may be removed: an owner record that names no
 * current lock (its lock was released, or taken over by chat.py); an earlier version's owner
 * directory of a dead process on this host, or of another host after twice the stale rule,
 * unless the lock still points to it; anything else of ours (a stolen lock's grave) after a
 * minute.
 */
export function abandonedLockLeftover(channelDir: string, name: string, ageMs: number): boolean {
  const lockPath = join(channelDir, LOCK_DIR);
  if (name.startsWith(RECORD_PREFIX)) return stampOf(lockPath) !== name.slice(RECORD_PREFIX.length);
  const owner = parseOwner(name);
  // Dated in the future: planted, or from a skewed clock; ours live for milliseconds.
  const future = ageMs < -FUTURE_SLACK_MS;
  if (!owner) return ageMs > 60_000 || future;
  if (readTarget(lockPath) === name) return false;
  return owner.host === HOST ? !processAlive(owner.pid) : ageMs > 2 * STALE_MS || future;
}

/**
 * Whether a reference `chat.py` holds the lock right now: it writes messages in place, so a
 * file that does not parse may be one it is still writing. Ours never writes in place.
 */
export function referenceLockHeld(channelDir: string, staleMs = STALE_MS): boolean {
  const seen = inspectLock(join(channelDir, LOCK_DIR));
  return seen?.kind === "reference" && !isStale(channelDir, seen, staleMs);
}

function describeOwner(owner: LockOwner | undefined): string {
  return owner ? `pid ${owner.pid} on ${owner.host}` : "another poster";
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
