import {
  closeSync,
  constants,
  promises as fsp,
  fstatSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  type Stats,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { AgentChatError } from "../core/errors.js";

/**
 * The one place that opens, writes and removes files inside a root (docs/design.md §10). A root is
 * shared: cloned from git, written by `chat.py`, an editor, another person. So every entry in
 * it is someone else's input, and this module:
 *
 * - never follows a symbolic link: directories are checked with lstat, files are opened with
 *   `O_NOFOLLOW` (and lstat first, so that nothing but a regular file is ever opened);
 * - opens only regular files: a FIFO would block open(2) forever, a device could do anything;
 *   `O_NONBLOCK` covers a FIFO swapped in between the lstat and the open;
 * - caps what it reads, by the size fstat reports and by what read(2) returns (a file growing
 *   meanwhile is cut off, not read to the end);
 * - never writes through a link, symbolic or hard: data goes to a new temporary file that is
 *   renamed (replace) or hard-linked (exclusive create) into place, which replaces or refuses the
 *   directory entry and never touches what it pointed to;
 * - removes only what it can prove is its own, and never recursively.
 *
 * Callers pass paths they built from validated names (no `..`, no separators), so a path can
 * leave the root only through a link, and no link is ever followed.
 */

/** A refusal to touch an entry because of what it is (a link, a FIFO, a folder, ...). */
export function unsafeEntry(path: string, what: string): AgentChatError {
  return new AgentChatError("UNSAFE_FILE", `${path} ${what}; it is never followed or opened`);
}

export type EntryKind = "file" | "dir" | "link" | "other";

function kindOf(st: Stats): EntryKind {
  if (st.isSymbolicLink()) return "link";
  if (st.isFile()) return "file";
  if (st.isDirectory()) return "dir";
  return "other";
}

function describe(kind: EntryKind): string {
  switch (kind) {
    case "link":
      return "is a symbolic link";
    case "dir":
      return "is a folder, not a file";
    case "other":
      return "is not a regular file (a FIFO, socket or device)";
    default:
      return "is a file, not a folder";
  }
}

/** What `path` is, without following a link; undefined when nothing is there. */
export function entryKind(path: string): EntryKind | undefined {
  const st = lstatSync(path, { throwIfNoEntry: false });
  return st ? kindOf(st) : undefined;
}

/** Throws UNSAFE_FILE unless `path` is a real directory (ENOENT when it is missing). */
export function assertRealDir(path: string): void {
  const kind = kindOf(lstatSync(path));
  if (kind !== "dir") throw unsafeEntry(path, describe(kind));
}

/** Creates the real directory `path` unless it exists; throws UNSAFE_FILE if it is anything else. */
export function ensureRealDir(path: string): void {
  try {
    // Not recursive: a recursive mkdir walks through a parent that is a link.
    mkdirSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  assertRealDir(path);
}

export interface RootEntry {
  name: string;
  kind: EntryKind;
}

/**
 * The entries of the real directory `path` and what each is, without following any link
 * (UNSAFE_FILE when `path` itself is not a real directory, ENOENT when it is missing).
 */
export function listRealDir(path: string): RootEntry[] {
  assertRealDir(path);
  return readdirSync(path, { withFileTypes: true }).map((e) => {
    let kind: EntryKind;
    if (e.isSymbolicLink()) kind = "link";
    else if (e.isFile()) kind = "file";
    else if (e.isDirectory()) kind = "dir";
    // A file system that does not report types leaves them all false: ask lstat.
    else if (e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice()) {
      kind = "other";
    } else kind = entryKind(join(path, e.name)) ?? "other";
    return { name: e.name, kind };
  });
}

export interface RootFile {
  data: Buffer;
  mtimeMs: number;
  size: number;
  /** How many names the file has (more than one: it is hard-linked somewhere). */
  nlink: number;
  /** Its owner and permission bits, as the open file had them. */
  uid: number;
  mode: number;
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Reads the regular file `path`, at most `maxBytes` of it. Throws UNSAFE_FILE for a link, a
 * folder, a FIFO, socket or device, TOO_LARGE past the cap, and the native error (ENOENT, ...)
 * otherwise. Synchronous: files in a root are small, and a wake should not queue on the pool.
 */
export function readRootFileSync(path: string, maxBytes: number): RootFile {
  const before = lstatSync(path);
  if (!before.isFile()) throw unsafeEntry(path, describe(kindOf(before)));
  tooLarge(path, before.size, maxBytes);
  const fd = openSync(path, READ_FLAGS);
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.ino !== before.ino) throw unsafeEntry(path, describe(kindOf(st)));
    tooLarge(path, st.size, maxBytes);
    const data = Buffer.allocUnsafe(Math.min(st.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, data, length, data.length - length, null);
      if (n === 0) break;
      length += n;
      if (length === data.length) tooLarge(path, length, maxBytes);
    }
    const { mtimeMs, nlink, uid, mode } = st;
    return { data: data.subarray(0, length), mtimeMs, size: length, nlink, uid, mode };
  } finally {
    closeSync(fd);
  }
}

/** {@link readRootFileSync} decoded as UTF-8 (invalid bytes become U+FFFD). */
export function readRootTextSync(path: string, maxBytes: number): string {
  return readRootFileSync(path, maxBytes).data.toString("utf8");
}

/**
 * A small file that only this program writes, always by replacing it (`.seq`, a cursor), so it
 * never has a second name: one that does was hard-linked to a file elsewhere by someone else,
 * and is not ours to read.
 */
export function readOwnTextSync(path: string, maxBytes: number): string {
  const file = readRootFileSync(path, maxBytes);
  if (file.nlink > 1) throw unsafeEntry(path, "has another name (a hard link)");
  return file.data.toString("utf8");
}

/**
 * {@link readOwnTextSync} of a file that holds a secret (a token): it must also be this user's
 * and private (no one else may read or write it), else it was not written by us for us.
 */
export function readPrivateTextSync(path: string, maxBytes: number): string {
  const file = readRootFileSync(path, maxBytes);
  const uid = process.getuid?.();
  if (file.nlink > 1 || (uid !== undefined && file.uid !== uid) || (file.mode & 0o077) !== 0) {
    throw unsafeEntry(path, "is not this user's private file");
  }
  return file.data.toString("utf8");
}

const OVERWRITE_FLAGS =
  constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Overwrites the small file `dir/name` that only this program writes, in place when it is a
 * plain file with no other name (the common case: no new inode, no rename), else by replacing
 * the entry ({@link replaceFileSync}): a link, a hard link or a FIFO planted under the name is
 * never written through. A reader may see it torn; use it only where a torn value is harmless.
 */
export function overwriteOwnFileSync(dir: string, name: string, data: string): void {
  const path = join(dir, name);
  let fd: number;
  try {
    fd = openSync(path, OVERWRITE_FLAGS, 0o644);
  } catch {
    // A link (ELOOP), a FIFO without a reader (ENXIO), ...
    replaceFileSync(dir, name, data);
    return;
  }
  try {
    const st = fstatSync(fd);
    if (st.isFile() && st.nlink === 1) {
      const bytes = Buffer.from(data);
      writeSync(fd, bytes, 0, bytes.length, 0);
      if (st.size > bytes.length) ftruncateSync(fd, bytes.length);
      return;
    }
  } finally {
    closeSync(fd);
  }
  replaceFileSync(dir, name, data);
}

function tooLarge(path: string, size: number, maxBytes: number): void {
  if (size > maxBytes) {
    throw new AgentChatError(
      "TOO_LARGE",
      `${path} is larger than ${maxBytes} bytes; it is never read into memory`,
    );
  }
}

/** A name for a temporary file that every reader ignores (dot-files are never messages). */
export function tempName(): string {
  return `.tmp-${uniqueHex()}`;
}

let made = 0;

/**
 * 16 hex digits, 48 random bits and a per-process count: a part of a name that no other call
 * here or in another process makes. From `Math.random` (seeded per process by V8 from the OS),
 * not `node:crypto`: loading that costs every CLI start several milliseconds, and these names
 * must be unique, not secret — every file or link named with them is created exclusively, so
 * even a collision would fail loudly, never overwrite.
 */
export function uniqueHex(): string {
  made = (made + 1) % 0x10000;
  const random = Math.floor(Math.random() * 2 ** 48);
  return `${random.toString(16).padStart(12, "0")}${made.toString(16).padStart(4, "0")}`;
}

/** Writes a new temporary file in `dir` (exclusively: never through something planted there). */
function writeTemp(dir: string, data: string | Buffer, mode = 0o644): string {
  const tmp = join(dir, tempName());
  writeFileSync(tmp, data, { flag: "wx", mode });
  return tmp;
}

/**
 * Replaces `dir/name` with `data` atomically: readers see the old or the new file, never half
 * of one, and a link at `name` is replaced, not written through. `mode` is the file's from its
 * first byte (0600 for a private key).
 */
export function replaceFileSync(
  dir: string,
  name: string,
  data: string | Buffer,
  mode = 0o644,
): void {
  const tmp = writeTemp(dir, data, mode);
  try {
    renameSync(tmp, join(dir, name));
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * {@link replaceFileSync} on the thread pool, for files that may be large. `durable`: the file is
 * synced before the rename and the folder after it, so a power cut leaves the old file or the
 * whole new one (chat.py writes its `state.md` so).
 */
export async function replaceFile(
  dir: string,
  name: string,
  data: string | Buffer,
  { durable = false }: { durable?: boolean } = {},
): Promise<void> {
  const tmp = join(dir, tempName());
  try {
    const handle = await fsp.open(tmp, "wx", 0o644);
    try {
      await handle.writeFile(data);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(tmp, join(dir, name));
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  if (durable) await syncFolder(dir);
}

/** Syncs a folder's entries to disk; best effort (some file systems refuse it). */
async function syncFolder(dir: string): Promise<void> {
  const folder = await fsp.open(dir, "r").catch(() => undefined);
  await folder
    ?.sync()
    .catch(() => undefined)
    .finally(() => folder.close());
}

/**
 * Creates `dir/name` with `data` atomically and only if no entry of that name exists, of any
 * kind (EEXIST otherwise): `link` never replaces, unlike `rename`.
 */
export async function createFileExclusive(
  dir: string,
  name: string,
  data: string | Buffer,
): Promise<void> {
  const tmp = join(dir, tempName());
  await fsp.writeFile(tmp, data, { flag: "wx", mode: 0o644 });
  try {
    await fsp.link(tmp, join(dir, name));
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

/** Moves the temporary file `tmp` to `dir/name` only if no entry of that name exists (EEXIST). */
export function publishExclusiveSync(tmp: string, dir: string, name: string): void {
  linkSync(tmp, join(dir, name));
  unlinkSync(tmp);
}

/**
 * Removes the real, empty directory `path` that this program made, and the listed empty
 * sub-directories it may have made inside it. Never recursive, never through a link: anything
 * else found there (planted by someone) makes it give up and return false.
 */
export function removeOwnDir(path: string, children: readonly string[] = []): boolean {
  if (entryKind(path) !== "dir") return false;
  for (const child of children) {
    const sub = join(path, child);
    if (entryKind(sub) === "dir" && !succeeds(() => rmdirSync(sub))) return false;
  }
  return succeeds(() => rmdirSync(path));
}

/** Whether `remove` ran without throwing: a removal refused (not empty, gone, not ours) is false. */
function succeeds(remove: () => void): boolean {
  try {
    remove();
    return true;
  } catch {
    return false;
  }
}

/** Removes a file or link entry (never what a link points to); false when it is a folder. */
export function removeFileEntry(path: string): boolean {
  const kind = entryKind(path);
  if (kind === undefined || kind === "dir") return false;
  return succeeds(() => unlinkSync(path));
}

/**
 * Removes the real directory `path` and what is really inside it, for a tree the caller has
 * made its own (renamed out of the way under a private name first): a sub-directory is entered
 * only when lstat says it is a real directory, and a link, FIFO or file is removed as an entry,
 * never followed, so nothing outside the tree is ever removed. Throws UNSAFE_FILE when `path`
 * is not a real directory.
 */
export function removeTreeSync(path: string): void {
  for (const entry of listRealDir(path)) {
    const child = join(path, entry.name);
    if (entry.kind === "dir") removeTreeSync(child);
    else unlinkSync(child);
  }
  rmdirSync(path);
}
