import { promises as fsp, mkdirSync, renameSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { AgentChatError, isAgentChatError, wrapIoError } from "../core/errors.js";
import {
  type FolderRef,
  formatFolderRef,
  ROOT_NAME,
  type TreeFolder,
  validateDescription,
  validateFileName,
  validateFolderName,
} from "../core/kfile/index.js";
import { acquireDirLock } from "../fsutil/dir-lock.js";
import {
  assertRealDir,
  createFileExclusive,
  type EntryKind,
  ensureRealDir,
  entryKind,
  listRealDir,
  publishExclusiveSync,
  readRootTextSync,
  removeFileEntry,
  removeOwnDir,
  removeTreeSync,
  replaceFile,
  tempName,
  uniqueHex,
  unsafeEntry,
} from "../fsutil/root-files.js";

/**
 * The K-folder on disk. Each folder is a real directory (so the workspace can be browsed and
 * committed to git); its short description lives in `.kfolder.json` inside it. The workspace
 * keeps its own state in names that are never folders or files of the tree:
 *
 * - `.kfolder.json`  root description and creation time (in every folder)
 * - `.focus`         the focused folder's path from the root (`blog/drafts`; empty = root)
 * - `.kfile`         the K-file of the latest turn, in its three-line text form
 * - `.pending-<who>.json`  a K-file waiting for its requester's confirmation
 * - `_seq.lock`      the lock every mutation holds (the same lock as a channel's)
 *
 * Every write is a temporary dot-file renamed into place, and every mutation runs under the
 * lock, so concurrent turns from several processes never see or leave a half-done tree. A
 * folder is created by renaming a fully prepared directory into place, and deleted by renaming
 * it out of the tree before removing it.
 *
 * A workspace in a channel is part of a shared root, so everything in it is untrusted input
 * (docs/design.md §10): all file access goes through `fsutil/root-files`, which never follows a link
 * and opens only regular files. The workspace folder and every folder on a path must be real
 * directories (UNSAFE_FILE otherwise); an entry the tree cannot hold (a link, a FIFO, a name the
 * K-folder rules refuse, like `c++`) is skipped and reported in `Snapshot.skipped`.
 */
export const META_FILE = ".kfolder.json";
export const FOCUS_FILE = ".focus";
export const KFILE_FILE = ".kfile";
export const DEFAULT_ROOT_DESCRIPTION = "shared workspace";
const MAX_DEPTH = 32;
/** `.kfolder.json` and `.focus` hold a line or two; anything bigger was not written by us. */
const MAX_META_BYTES = 64 * 1024;
/** A stored file, or a pending K-file with its content: far above any message body. */
export const MAX_WORKSPACE_FILE_BYTES = 16 * 1024 * 1024;

export interface Folder {
  name: string;
  description: string;
  /** Folder names from the root; [] is the root. */
  path: string[];
  created: number;
  files: string[];
  children: Folder[];
}

/** An entry on disk that is not part of the tree, and why. */
export interface Skipped {
  /** From the workspace folder: `blog/c++`. */
  path: string;
  reason: string;
}

export interface Snapshot {
  root: Folder;
  /** The focused folder's path; a focus on a folder that no longer exists reads as the root. */
  focus: string[];
  /** Entries with a tree name that the tree cannot hold (links, FIFOs, invalid names). */
  skipped: Skipped[];
}

export type Resolution =
  | { kind: "found"; folder: Folder }
  | { kind: "missing"; reason: string }
  | { kind: "ambiguous"; reason: string; candidates: Folder[] };

interface FolderMeta {
  description: string;
  created: number;
}

export class KFolder {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  /**
   * Creates the workspace folder (and its root description) when it does not exist yet; throws
   * UNSAFE_FILE when it is a link or anything but a real directory.
   */
  async ensure(): Promise<void> {
    try {
      // The parents are the caller's (a channel folder the store checked, or --workspace DIR);
      // the workspace folder itself is created alone, so that it is never made through a link.
      mkdirSync(dirname(this.dir), { recursive: true });
      ensureRealDir(this.dir);
    } catch (err) {
      throw wrapIoError(err, `cannot create workspace ${this.dir}`);
    }
    const meta: FolderMeta = { description: DEFAULT_ROOT_DESCRIPTION, created: 0 };
    try {
      await createFileExclusive(this.dir, META_FILE, `${JSON.stringify(meta)}\n`);
    } catch (err) {
      // Any entry of that name, even a link or a FIFO, is left alone: it is never written through.
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        throw wrapIoError(err, `cannot create workspace ${this.dir}`);
      }
    }
  }

  /** Runs `fn` holding the workspace lock. */
  async locked<T>(fn: () => Promise<T>): Promise<T> {
    await this.ensure();
    const release = await acquireDirLock(this.dir);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  async snapshot(): Promise<Snapshot> {
    await this.ensure();
    const skipped: Skipped[] = [];
    const root = this.readFolder([], ROOT_NAME, 0, skipped);
    let focus: string[] = [];
    const text = readSmall(join(this.dirOf([]), FOCUS_FILE), MAX_META_BYTES)?.trim();
    if (text) {
      const path = text.split("/");
      if (findByPath(root, path)) focus = path;
    }
    return { root, focus, skipped };
  }

  private readFolder(path: string[], name: string, depth: number, skipped: Skipped[]): Folder {
    const dir = join(this.dir, ...path);
    const meta = this.readMeta(dir, path.length === 0);
    const folder: Folder = { name, path, files: [], children: [], ...meta };
    let entries: ReturnType<typeof listRealDir>;
    try {
      entries = listRealDir(dir);
    } catch (err) {
      // A sub-folder removed (or swapped for a link) by someone else between two reads is
      // simply not there any more; the workspace folder itself must be real.
      const code = (err as NodeJS.ErrnoException).code;
      if (path.length > 0 && (code === "ENOENT" || isAgentChatError(err, "UNSAFE_FILE"))) {
        return folder;
      }
      throw wrapIoError(err, `cannot list ${dir}`);
    }
    for (const e of entries) {
      if (!isTreeName(e.name)) continue;
      const problem = unusable(e.name, e.kind, depth);
      if (problem) {
        skipped.push({ path: [...path, e.name].join("/"), reason: problem });
      } else if (e.kind === "dir") {
        folder.children.push(this.readFolder([...path, e.name], e.name, depth + 1, skipped));
      } else {
        folder.files.push(e.name);
      }
    }
    folder.files.sort();
    folder.children.sort((a, b) => a.created - b.created || (a.name < b.name ? -1 : 1));
    if (depth === 0) skipped.sort((a, b) => (a.path < b.path ? -1 : 1));
    return folder;
  }

  private readMeta(dir: string, isRoot: boolean): FolderMeta {
    const fallback: FolderMeta = {
      description: isRoot ? DEFAULT_ROOT_DESCRIPTION : "",
      created: Number.MAX_SAFE_INTEGER,
    };
    try {
      // A directory made by hand (no meta), or a meta that is a link, a FIFO or not JSON, is
      // still a folder: listed last, without description.
      const text = readSmall(join(dir, META_FILE), MAX_META_BYTES);
      if (text === undefined) return fallback;
      const data = JSON.parse(text) as { description?: unknown; created?: unknown } | null;
      return {
        description: typeof data?.description === "string" ? data.description : "",
        created: Number.isSafeInteger(data?.created) ? (data?.created as number) : fallback.created,
      };
    } catch {
      return fallback;
    }
  }

  /** The directory of a folder path, checked to stay inside the workspace. */
  pathOf(path: readonly string[]): string {
    for (const seg of path) validateFolderName(seg);
    const full = resolve(this.dir, ...path);
    if (full !== this.dir && !full.startsWith(this.dir + sep)) {
      throw new AgentChatError("INVALID_NAME", `${path.join("/")} is outside the workspace`);
    }
    return full;
  }

  /**
   * The directory of an existing folder, each level of it checked to be a real directory (never
   * a link): UNSAFE_FILE otherwise, NOT_FOUND when it is missing.
   */
  private dirOf(path: readonly string[]): string {
    const full = this.pathOf(path);
    let dir = this.dir;
    try {
      assertRealDir(dir);
      for (const seg of path) {
        dir = join(dir, seg);
        assertRealDir(dir);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        throw new AgentChatError("NOT_FOUND", `no folder ${displayPath(path)} in the workspace`);
      }
      throw wrapIoError(err, `cannot open ${full}`);
    }
    return full;
  }

  filePath(path: readonly string[], file: string): string {
    validateFileName(file);
    return join(this.pathOf(path), file);
  }

  // The mutations below expect the caller to hold the lock (see `locked`) and to have checked,
  // against a snapshot taken under that lock, that the operation makes sense.

  async createFolder(parent: string[], name: string, description: string): Promise<void> {
    validateFolderName(name);
    validateDescription(description);
    const parentDir = this.dirOf(parent);
    const staging = join(parentDir, tempName());
    try {
      mkdirSync(staging);
      const meta: FolderMeta = { description, created: Date.now() };
      await createFileExclusive(staging, META_FILE, `${JSON.stringify(meta)}\n`);
      renameSync(staging, join(parentDir, name));
    } catch (err) {
      removeFileEntry(join(staging, META_FILE));
      removeOwnDir(staging);
      throw wrapIoError(err, `cannot create folder ${[...parent, name].join("/")}`);
    }
  }

  async setFocus(path: string[]): Promise<void> {
    this.dirOf(path);
    await replaceFile(this.dirOf([]), FOCUS_FILE, path.join("/"));
  }

  async setDescription(path: string[], description: string): Promise<void> {
    validateDescription(description);
    const dir = this.dirOf(path);
    const meta = this.readMeta(dir, path.length === 0);
    await replaceFile(dir, META_FILE, `${JSON.stringify({ ...meta, description })}\n`);
  }

  /** Renames or moves a folder (one atomic rename) and keeps the focus on it if it had it. */
  async relocateFolder(from: string[], to: string[], focus: string[]): Promise<void> {
    const src = this.dirOf(from);
    const dst = join(this.dirOf(to.slice(0, -1)), validateFolderName(to[to.length - 1]!));
    if (entryKind(dst) !== undefined) {
      throw new AgentChatError("INVALID_ARGUMENT", `${to.join("/")} already exists`);
    }
    try {
      // rename(2) moves the entry itself: a link is never followed at either end.
      await fsp.rename(src, dst);
    } catch (err) {
      throw wrapIoError(err, `cannot move ${from.join("/")} to ${to.join("/")}`);
    }
    if (startsWith(focus, from)) await this.setFocus([...to, ...focus.slice(from.length)]);
  }

  /**
   * Takes the folder out of the tree in one rename, then removes what is really inside it (a
   * link inside is removed as a link; a folder that is itself a link loses only the link). The
   * focus falls back to the parent.
   */
  async deleteFolder(path: string[], focus: string[]): Promise<void> {
    if (path.length === 0) throw new AgentChatError("INVALID_ARGUMENT", "cannot delete the root");
    const target = join(this.dirOf(path.slice(0, -1)), validateFolderName(path[path.length - 1]!));
    const grave = join(this.dirOf([]), `.trash-${uniqueHex()}`);
    try {
      await fsp.rename(target, grave);
    } catch (err) {
      throw wrapIoError(err, `cannot delete ${path.join("/")}`);
    }
    if (startsWith(focus, path)) await this.setFocus(path.slice(0, -1));
    try {
      if (entryKind(grave) === "dir") removeTreeSync(grave);
      else removeFileEntry(grave);
    } catch (err) {
      throw wrapIoError(err, `cannot remove ${path.join("/")} (left as ${grave})`);
    }
  }

  async writeFile(path: string[], file: string, content: string): Promise<void> {
    const dir = this.dirOf(path);
    const target = join(dir, validateFileName(file));
    refuseUnlessFile(target, entryKind(target));
    await replaceFile(dir, file, content);
  }

  async readFile(path: string[], file: string): Promise<string> {
    const target = join(this.dirOf(path), validateFileName(file));
    try {
      return readRootTextSync(target, MAX_WORKSPACE_FILE_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        throw new AgentChatError(
          "NOT_FOUND",
          `no file ${[...path, file].join("/")} in the workspace`,
        );
      }
      throw wrapIoError(err, `cannot read ${target}`);
    }
  }

  /** Moves a file without ever replacing what is at the destination (EEXIST is refused). */
  async renameFile(path: string[], file: string, toPath: string[], toFile: string): Promise<void> {
    const src = join(this.dirOf(path), validateFileName(file));
    const dstDir = this.dirOf(toPath);
    validateFileName(toFile);
    const kind = entryKind(src);
    if (kind === undefined) {
      throw new AgentChatError(
        "NOT_FOUND",
        `no file ${[...path, file].join("/")} in the workspace`,
      );
    }
    refuseUnlessFile(src, kind);
    try {
      publishExclusiveSync(src, dstDir, toFile);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") {
        throw new AgentChatError("INVALID_ARGUMENT", `${[...toPath, toFile].join("/")} exists`);
      }
      throw wrapIoError(err, `cannot move ${[...path, file].join("/")}`);
    }
  }

  /** Removes a file entry (a link is removed as a link, never what it points to). */
  async deleteFile(path: string[], file: string): Promise<void> {
    if (!removeFileEntry(join(this.dirOf(path), validateFileName(file)))) {
      throw new AgentChatError("NOT_FOUND", `no file ${[...path, file].join("/")} to delete`);
    }
  }

  /** Writes the K-file of the current turn where both sides can read it. */
  async writeKFile(text: string): Promise<void> {
    await replaceFile(this.dirOf([]), KFILE_FILE, text);
  }

  /** A state file's text; undefined when it is missing or not a regular file (never ours). */
  async readState(name: string): Promise<string | undefined> {
    try {
      return readSmall(join(this.dirOf([]), name), MAX_WORKSPACE_FILE_BYTES);
    } catch (err) {
      throw wrapIoError(err, `cannot read ${name}`);
    }
  }

  async writeState(name: string, text: string): Promise<void> {
    await replaceFile(this.dirOf([]), name, text);
  }

  async removeState(name: string): Promise<void> {
    removeFileEntry(join(this.dirOf([]), name));
  }
}

/**
 * The text of a small file of the workspace's own; undefined when it is missing or is not a
 * regular file (a link or FIFO planted there is never followed or opened, just ignored).
 */
function readSmall(path: string, maxBytes: number): string | undefined {
  try {
    return readRootTextSync(path, maxBytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || isAgentChatError(err, "UNSAFE_FILE")) {
      return undefined;
    }
    throw err;
  }
}

/** Why an entry with a tree name cannot be part of the tree; undefined when it can. */
function unusable(name: string, kind: EntryKind, depth: number): string | undefined {
  if (kind === "link") return "is a symbolic link; it is never followed";
  if (kind === "other")
    return "is not a regular file (a FIFO, socket or device); it is never opened";
  try {
    if (kind === "dir") validateFolderName(name);
    else validateFileName(name);
  } catch (err) {
    const why = (err as Error).message.replace(/^invalid (folder|file) name "[^"]*": /, "");
    return `is not a valid ${kind === "dir" ? "folder" : "file"} name (${why})`;
  }
  if (kind === "dir" && depth >= MAX_DEPTH) return `is deeper than ${MAX_DEPTH} folders`;
  return undefined;
}

function refuseUnlessFile(path: string, kind: EntryKind | undefined): void {
  if (kind === undefined || kind === "file") return;
  throw unsafeEntry(
    path,
    kind === "link"
      ? "is a symbolic link"
      : kind === "dir"
        ? "is a folder"
        : "is not a regular file",
  );
}

/** Only names a user could have given are part of the tree; `.x` and `_x` are the workspace's. */
function isTreeName(name: string): boolean {
  return /^[A-Za-z0-9]/.test(name);
}

function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((seg, i) => path[i] === seg);
}

export function isInside(path: readonly string[], ancestor: readonly string[]): boolean {
  return startsWith(path, ancestor);
}

export function findByPath(root: Folder, path: readonly string[]): Folder | undefined {
  let at: Folder | undefined = root;
  for (const seg of path) {
    at = at?.children.find((c) => c.name === seg);
    if (!at) return undefined;
  }
  return at;
}

export function allFolders(root: Folder): Folder[] {
  const out: Folder[] = [];
  const walk = (f: Folder) => {
    out.push(f);
    for (const c of f.children) walk(c);
  };
  walk(root);
  return out;
}

/** Resolves a folder reference against the tree (see `FolderRef` for its meaning). */
export function resolveFolder(root: Folder, ref: FolderRef): Resolution {
  const [first, ...rest] = ref.segments;
  const shown = formatFolderRef(ref);
  let starts: Folder[];
  if (first === ROOT_NAME) starts = [root];
  else starts = allFolders(root).filter((f) => f.path.length > 0 && f.name === first);
  const ends = starts.map((s) => findByPath(s, rest)).filter((f): f is Folder => f !== undefined);
  if (ends.length === 1) return { kind: "found", folder: ends[0]! };
  if (ends.length === 0) {
    return { kind: "missing", reason: `there is no folder ${shown}` };
  }
  return {
    kind: "ambiguous",
    reason: `${shown} is ambiguous: ${ends.map((f) => displayPath(f.path)).join(", ")}`,
    candidates: ends,
  };
}

/** `[root]/[a]/[b]`: the unambiguous way to name a folder. */
export function displayPath(path: readonly string[]): string {
  return formatFolderRef({ segments: [ROOT_NAME, ...path] });
}

/** The shortest reference to a folder that is unambiguous in this tree. */
export function shortRef(root: Folder, path: readonly string[]): FolderRef {
  if (path.length === 0) return { segments: [ROOT_NAME] };
  const name = path[path.length - 1]!;
  const same = allFolders(root).filter((f) => f.path.length > 0 && f.name === name);
  return same.length === 1 ? { segments: [name] } : { segments: [ROOT_NAME, ...path] };
}

export function toTree(snapshot: Snapshot): TreeFolder {
  const convert = (f: Folder): TreeFolder => ({
    name: f.name,
    description: f.description,
    focus:
      f.path.length === snapshot.focus.length && f.path.every((s, i) => snapshot.focus[i] === s),
    files: f.files,
    children: f.children.map(convert),
  });
  return convert(snapshot.root);
}
