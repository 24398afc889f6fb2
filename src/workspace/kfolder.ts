import { randomBytes } from "node:crypto";
import { constants, promises as fsp } from "node:fs";
import { join, resolve, sep } from "node:path";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import {
  type FolderRef,
  formatFolderRef,
  ROOT_NAME,
  type TreeFolder,
  validateDescription,
  validateFileName,
  validateFolderName,
} from "../core/kfile.js";
import { acquireSeqLock } from "../store/fs/seq-lock.js";
import { replaceFile } from "../store/root-files.js";

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
 */
export const META_FILE = ".kfolder.json";
export const FOCUS_FILE = ".focus";
export const KFILE_FILE = ".kfile";
export const DEFAULT_ROOT_DESCRIPTION = "shared workspace";
const MAX_DEPTH = 32;

export interface Folder {
  name: string;
  description: string;
  /** Folder names from the root; [] is the root. */
  path: string[];
  created: number;
  files: string[];
  children: Folder[];
}

export interface Snapshot {
  root: Folder;
  /** The focused folder's path; a focus on a folder that no longer exists reads as the root. */
  focus: string[];
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

  /** Creates the workspace folder (and its root description) when it does not exist yet. */
  async ensure(): Promise<void> {
    try {
      await fsp.mkdir(this.dir, { recursive: true });
      const meta: FolderMeta = { description: DEFAULT_ROOT_DESCRIPTION, created: 0 };
      await fsp.writeFile(join(this.dir, META_FILE), `${JSON.stringify(meta)}\n`, { flag: "wx" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        throw wrapIoError(err, `cannot create workspace ${this.dir}`);
      }
    }
  }

  /** Runs `fn` holding the workspace lock. */
  async locked<T>(fn: () => Promise<T>): Promise<T> {
    await this.ensure();
    const release = await acquireSeqLock(this.dir);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  async snapshot(): Promise<Snapshot> {
    await this.ensure();
    const root = await this.readFolder([], ROOT_NAME, 0);
    let focus: string[] = [];
    try {
      const text = (await fsp.readFile(join(this.dir, FOCUS_FILE), "utf8")).trim();
      const path = text === "" ? [] : text.split("/");
      if (findByPath(root, path)) focus = path;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        throw wrapIoError(err, "cannot read the workspace focus");
      }
    }
    return { root, focus };
  }

  private async readFolder(path: string[], name: string, depth: number): Promise<Folder> {
    const dir = this.pathOf(path);
    const meta = await this.readMeta(dir, path.length === 0);
    const folder: Folder = { name, path, files: [], children: [], ...meta };
    let entries: import("node:fs").Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      // A folder removed by someone else between two reads is simply not there any more.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return folder;
      throw wrapIoError(err, `cannot list ${dir}`);
    }
    for (const e of entries) {
      if (!isTreeName(e.name)) continue;
      // Symbolic links are never followed: nothing outside the workspace is part of it.
      if (e.isDirectory() && depth < MAX_DEPTH) {
        folder.children.push(await this.readFolder([...path, e.name], e.name, depth + 1));
      } else if (e.isFile()) {
        folder.files.push(e.name);
      }
    }
    folder.files.sort();
    folder.children.sort((a, b) => a.created - b.created || (a.name < b.name ? -1 : 1));
    return folder;
  }

  private async readMeta(dir: string, isRoot: boolean): Promise<FolderMeta> {
    const fallback: FolderMeta = {
      description: isRoot ? DEFAULT_ROOT_DESCRIPTION : "",
      created: Number.MAX_SAFE_INTEGER,
    };
    try {
      const data = JSON.parse(await fsp.readFile(join(dir, META_FILE), "utf8")) as FolderMeta;
      return {
        description: typeof data.description === "string" ? data.description : "",
        created: typeof data.created === "number" ? data.created : fallback.created,
      };
    } catch {
      // A directory made by hand (no meta) is still a folder, listed last, without description.
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

  filePath(path: readonly string[], file: string): string {
    validateFileName(file);
    return join(this.pathOf(path), file);
  }

  // The mutations below expect the caller to hold the lock (see `locked`) and to have checked,
  // against a snapshot taken under that lock, that the operation makes sense.

  async createFolder(parent: string[], name: string, description: string): Promise<void> {
    validateFolderName(name);
    validateDescription(description);
    const parentDir = this.pathOf(parent);
    const staging = join(parentDir, `.tmp-${randomBytes(8).toString("hex")}`);
    try {
      await fsp.mkdir(staging);
      const meta: FolderMeta = { description, created: Date.now() };
      await fsp.writeFile(join(staging, META_FILE), `${JSON.stringify(meta)}\n`);
      await fsp.rename(staging, join(parentDir, name));
    } catch (err) {
      await fsp.rm(staging, { recursive: true, force: true });
      throw wrapIoError(err, `cannot create folder ${[...parent, name].join("/")}`);
    }
  }

  async setFocus(path: string[]): Promise<void> {
    this.pathOf(path);
    await replaceFile(this.dir, FOCUS_FILE, path.join("/"));
  }

  async setDescription(path: string[], description: string): Promise<void> {
    validateDescription(description);
    const dir = this.pathOf(path);
    const meta = await this.readMeta(dir, path.length === 0);
    await replaceFile(dir, META_FILE, `${JSON.stringify({ ...meta, description })}\n`);
  }

  /** Renames or moves a folder (one atomic rename) and keeps the focus on it if it had it. */
  async relocateFolder(from: string[], to: string[], focus: string[]): Promise<void> {
    const src = this.pathOf(from);
    const dst = this.pathOf(to);
    if (await exists(dst)) {
      throw new AgentChatError("INVALID_ARGUMENT", `${to.join("/")} already exists`);
    }
    try {
      await fsp.rename(src, dst);
    } catch (err) {
      throw wrapIoError(err, `cannot move ${from.join("/")} to ${to.join("/")}`);
    }
    if (startsWith(focus, from)) await this.setFocus([...to, ...focus.slice(from.length)]);
  }

  /** Takes the folder out of the tree in one rename, then removes it; the focus falls back. */
  async deleteFolder(path: string[], focus: string[]): Promise<void> {
    if (path.length === 0) throw new AgentChatError("INVALID_ARGUMENT", "cannot delete the root");
    const grave = join(this.dir, `.trash-${randomBytes(8).toString("hex")}`);
    try {
      await fsp.rename(this.pathOf(path), grave);
    } catch (err) {
      throw wrapIoError(err, `cannot delete ${path.join("/")}`);
    }
    if (startsWith(focus, path)) await this.setFocus(path.slice(0, -1));
    await fsp.rm(grave, { recursive: true, force: true });
  }

  async writeFile(path: string[], file: string, content: string): Promise<void> {
    const target = this.filePath(path, file);
    await refuseLink(target);
    await replaceFile(this.pathOf(path), file, content);
  }

  async readFile(path: string[], file: string): Promise<string> {
    const target = this.filePath(path, file);
    let fh: import("node:fs/promises").FileHandle;
    try {
      fh = await fsp.open(target, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ELOOP") {
        throw new AgentChatError(
          "NOT_FOUND",
          `no file ${[...path, file].join("/")} in the workspace`,
        );
      }
      throw wrapIoError(err, `cannot read ${target}`);
    }
    try {
      return await fh.readFile("utf8");
    } finally {
      await fh.close();
    }
  }

  async renameFile(path: string[], file: string, toPath: string[], toFile: string): Promise<void> {
    const src = this.filePath(path, file);
    const dst = this.filePath(toPath, toFile);
    await refuseLink(src);
    if (await exists(dst)) {
      throw new AgentChatError("INVALID_ARGUMENT", `${[...toPath, toFile].join("/")} exists`);
    }
    try {
      await fsp.rename(src, dst);
    } catch (err) {
      throw wrapIoError(err, `cannot move ${[...path, file].join("/")}`);
    }
  }

  async deleteFile(path: string[], file: string): Promise<void> {
    try {
      await fsp.unlink(this.filePath(path, file));
    } catch (err) {
      throw wrapIoError(err, `cannot delete ${[...path, file].join("/")}`);
    }
  }

  /** Writes the K-file of the current turn where both sides can read it. */
  async writeKFile(text: string): Promise<void> {
    await replaceFile(this.dir, KFILE_FILE, text);
  }

  async readState(name: string): Promise<string | undefined> {
    try {
      return await fsp.readFile(join(this.dir, name), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw wrapIoError(err, `cannot read ${name}`);
    }
  }

  async writeState(name: string, text: string): Promise<void> {
    await replaceFile(this.dir, name, text);
  }

  async removeState(name: string): Promise<void> {
    await fsp.rm(join(this.dir, name), { force: true });
  }
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

async function exists(path: string): Promise<boolean> {
  try {
    await fsp.lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function refuseLink(path: string): Promise<void> {
  try {
    if ((await fsp.lstat(path)).isSymbolicLink()) {
      throw new AgentChatError("INVALID_NAME", `${path} is a symbolic link; it is not followed`);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
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
