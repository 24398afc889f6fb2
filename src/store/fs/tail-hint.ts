import { lstatSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { MAX_SEQ, MESSAGE_FILE, parseSeqText } from "../../core/message.js";
import { readOwnTextSync, replaceFileSync } from "../../fsutil/root-files.js";
import { TASK_FILE } from "../shared/index.js";

/**
 * The tail of a channel folder as a full listing found it, kept for the next fresh process
 * (a CLI command, a hook) so that it need not list a folder of 100,000 files to learn its last
 * few messages: the names of the newest {@link TAIL} message numbers and the claimed task
 * markers, stamped with the folder's identity and change time (`dev`, `ino`, `ctime`, `mtime`
 * in nanoseconds).
 *
 * It is a hint, never the truth: it is believed only while the folder's change time is exactly
 * the one it was stamped with. A file created, renamed or removed in the folder since (a post
 * by anyone, chat.py's included: it never writes anything of ours) changes the folder's ctime,
 * which no one can set back; then the caller lists the folder as before. The stamp is taken
 * only from a listing that no change can have escaped: the folder's stat was the same before
 * and after the listing, and its ctime lay more than {@link SETTLED_MS} before the listing
 * began (a change in the same clock tick as the stamp would carry the same time). Each name is
 * checked as a listed name is (a message file's shape, no separator), and the newest file must
 * still be there; anything else wrong (a torn, truncated, edited or foreign file) and it is
 * ignored.
 *
 * It is kept in the user's own folder, never in the root (which others write): `<dir>/tail-
 * <dev>-<ino>.json`, holding the channel folder's path, so that no one else can plant one.
 */
export const TAIL = 256;
/** How long before a listing the folder must have last changed for its stamp to be kept. */
export const SETTLED_MS = 1_000;
/** A channel smaller than this is listed in less time than reading a hint would save. */
export const HINT_MIN_NAMES = 512;
const VERSION = 1;
const MAX_HINT_BYTES = 256 * 1024;

/** The folder's identity and change times, exactly (nanoseconds). */
export interface Stamp {
  dev: string;
  ino: string;
  ctimeNs: string;
  mtimeNs: string;
}

export interface Hint {
  /** The message files of the newest numbers, ascending by number. */
  names: string[];
  /** Whether {@link names} is every message file of the folder (a small one). */
  complete: boolean;
  /** Claimed task markers (`task-<id>.CLAIMED-<holder>.md`). */
  claimed: string[];
  /** How many message files the folder held (the tail's and all before it). */
  count: number;
  stamp: Stamp;
}

/** The folder's stamp now; undefined when it cannot be had. */
export function stampOf(dir: string): Stamp | undefined {
  try {
    const st = statSync(dir, { bigint: true });
    if (!st.isDirectory()) return undefined;
    return {
      dev: String(st.dev),
      ino: String(st.ino),
      ctimeNs: String(st.ctimeNs),
      mtimeNs: String(st.mtimeNs),
    };
  } catch {
    return undefined;
  }
}

export function sameStamp(a: Stamp | undefined, b: Stamp | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.ctimeNs === b.ctimeNs &&
    a.mtimeNs === b.mtimeNs
  );
}

/** Whether a stamp taken just before a listing begun at `startedAt` may be kept (see above). */
export function settled(stamp: Stamp, startedAt: number): boolean {
  const changedAt = Number(BigInt(stamp.ctimeNs) / 1_000_000n);
  const modifiedAt = Number(BigInt(stamp.mtimeNs) / 1_000_000n);
  return Math.max(changedAt, modifiedAt) < startedAt - SETTLED_MS;
}

function hintName(stamp: Stamp): string {
  return `tail-${stamp.dev}-${stamp.ino}.json`;
}

/**
 * The hint for the folder `dir` whose stamp is `now`, if one was kept under exactly that stamp
 * and passes every check; undefined otherwise.
 */
export function loadHint(hintDir: string, dir: string, now: Stamp): Hint | undefined {
  const d = ownFolder(hintDir) ? readHint(join(hintDir, hintName(now))) : undefined;
  if (d?.v !== VERSION || d.dir !== dir || !sameStamp(now, stampIn(d.stamp))) return undefined;
  const names = d.names;
  const claimed = d.claimed;
  const count = d.count;
  if (!Array.isArray(names) || !Array.isArray(claimed) || typeof d.complete !== "boolean") return;
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < names.length) return;
  if (d.complete && count !== names.length) return undefined;
  if (names.length > TAIL * 4 || claimed.length > 10_000) return undefined;
  const last = lastOfAscending(names);
  // Our posts record their number in `.seq` under the lock: a hint that ends before it is not
  // the folder's (a deleted newest message aside, which then costs a listing each time).
  if (last === undefined || highWater(dir) > last) return undefined;
  if (!claimed.every((n) => typeof n === "string" && TASK_FILE.exec(n)?.[2] !== undefined)) return;
  return { names, complete: d.complete, claimed, count, stamp: now };
}

/** The hint file's fields when its checksum holds (not torn, not edited by accident). */
function readHint(path: string): Record<string, unknown> | undefined {
  try {
    const raw = readOwnTextSync(path, MAX_HINT_BYTES);
    const cut = raw.indexOf("\n");
    const text = raw.slice(cut + 1);
    if (cut < 0 || raw.slice(0, cut) !== checksum(text)) return undefined;
    const data: unknown = JSON.parse(text);
    return typeof data === "object" && data !== null
      ? (data as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined; // none, not ours to read, or not JSON
  }
}

function stampIn(value: unknown): Stamp | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const s = value as Record<string, unknown>;
  const [dev, ino, ctimeNs, mtimeNs] = [s.dev, s.ino, s.ctimeNs, s.mtimeNs].map(String);
  return { dev: dev!, ino: ino!, ctimeNs: ctimeNs!, mtimeNs: mtimeNs! };
}

/**
 * The number of the last of `names` when each is a message file's name as a listing gives it,
 * ascending by number; undefined otherwise (0 for none).
 */
function lastOfAscending(names: unknown[]): number | undefined {
  let last = 0;
  for (const name of names) {
    const seq = hintedSeq(name);
    if (seq === undefined || seq < last) return undefined;
    last = seq;
  }
  return last;
}

/** The channel's `.seq`; 0 when missing or not a number (anyone can write it). */
function highWater(dir: string): number {
  try {
    return parseSeqText(readOwnTextSync(join(dir, ".seq"), 32));
  } catch {
    return 0;
  }
}

/** A real folder of this user's that no one else may write: the only place a hint is read from. */
function ownFolder(path: string): boolean {
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st?.isDirectory() || (st.mode & 0o022) !== 0) return false;
    return typeof process.getuid !== "function" || st.uid === process.getuid();
  } catch {
    return false; // a file where a folder on the way should be (ENOTDIR), one we cannot enter
  }
}

/** The number of a name from a hint when it is a message file's name, as a listing checks it. */
function hintedSeq(name: unknown): number | undefined {
  if (typeof name !== "string" || name.includes("\0") || !MESSAGE_FILE.test(name)) return;
  const seq = Number.parseInt(name, 10);
  return Number.isSafeInteger(seq) && seq <= MAX_SEQ ? seq : undefined;
}

/** Keeps the hint (replacing the file whole: a reader never sees it torn); best effort. */
export function saveHint(hintDir: string, dir: string, hint: Hint): void {
  try {
    mkdirSync(hintDir, { recursive: true, mode: 0o700 });
    const text = JSON.stringify({
      v: VERSION,
      dir,
      stamp: hint.stamp,
      complete: hint.complete,
      names: hint.names,
      claimed: hint.claimed,
      count: hint.count,
    });
    replaceFileSync(hintDir, hintName(hint.stamp), `${checksum(text)}\n${text}`, 0o600);
  } catch {
    // A read-only home, a full disk: the next process lists the folder, as without a hint.
  }
}

/** FNV-1a (32 bits) of the text: catches a torn or truncated file, not an adversary's edit. */
export function checksum(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}
