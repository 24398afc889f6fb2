import { lstatSync, renameSync } from "node:fs";
import { join } from "node:path";
import { type Message, parseMessage, seqOfFileName } from "../../core/message.js";
import { identity } from "../../core/names.js";
import {
  ensureRealDir,
  entryKind,
  listRealDir,
  readRootFileSync,
  removeFileEntry,
} from "../../fsutil/root-files.js";
import type { ArchiveOptions, ArchiveResult, PrunedAgent, PruneOptions } from "../find-types.js";
import { checkArchiveOptions } from "../records/index.js";

/**
 * Retention for the folder store (docs/search.md). Old messages move to
 * `<channel>/_archive/<YYYY-MM>/` under their own file names: chat.py lists only the channel
 * folder's own `NNNN-*.md` files, and a name starting with `_` is never a message or a channel,
 * so it neither reads them nor counts them.
 *
 * Crash safety: each message moves by one `rename` within the channel folder, which the file
 * system makes atomic: at every moment the file is either hot or archived, never both and never
 * neither, so a SIGKILL at any point loses nothing and duplicates nothing; running archive
 * again finishes the job. Numbering: the newest well-formed message always stays hot, and the
 * `.seq` high-water mark is raised to it first (under the seq lock), so our next number and the
 * reference's (one past the largest file name in the folder) stay the same. Cursors are seq
 * numbers and never change; a reader whose cursor is below an archived message no longer gets
 * it from `read` (it is still in `peek`, `search` and `thread` with `--archived`).
 */
export const ARCHIVE_DIR = "_archive";
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** What archiving needs from the folder store, which keeps its locks and caches private. */
export interface ArchiveHost {
  dir: string;
  channel: string;
  /** Takes the seq lock, finds the newest well-formed message and raises `.seq` to it. */
  pinNewest(): Promise<number>;
  /** The channel's message files by seq, ascending, as the store's index knows them now. */
  files(): Promise<Array<[number, readonly string[]]>>;
  parse(name: string, seq: number): Promise<Message | undefined>;
  /** The file `name` (with `seq`) left the hot folder. */
  moved(seq: number, name: string): void;
  now: number;
  /** The largest message file read. */
  maxBytes: number;
}

export async function archiveChannel(
  host: ArchiveHost,
  options: ArchiveOptions,
): Promise<ArchiveResult> {
  checkArchiveOptions(options);
  const newest = await host.pinNewest();
  const moves = await chooseMoves(host, options, newest);
  const result: ArchiveResult = {
    channel: host.channel,
    moved: [],
    folders: [],
    dryRun: options.dryRun === true,
  };
  if (newest > 0) result.kept = newest;
  const folders = new Set<string>();
  for (const move of moves) {
    const folder = `${ARCHIVE_DIR}/${move.folder}`;
    if (!options.dryRun && !moveOne(host, move, folder)) continue;
    if (result.moved.at(-1) !== move.seq) result.moved.push(move.seq);
    folders.add(folder);
  }
  result.folders = [...folders].sort();
  return result;
}

interface Move {
  seq: number;
  name: string;
  /** The month folder, `2026-11`. */
  folder: string;
}

/** The well-formed messages below `newest` that the options pick, in seq order. */
async function chooseMoves(
  host: ArchiveHost,
  options: ArchiveOptions,
  newest: number,
): Promise<Move[]> {
  const cutoff = options.olderThanMs === undefined ? undefined : host.now - options.olderThanMs;
  const end = Math.min(newest, options.before ?? newest);
  const moves: Move[] = [];
  for (const [seq, names] of await host.files()) {
    if (seq >= end) break;
    for (const name of names) {
      const message = await host.parse(name, seq);
      // A file that is not a well-formed message stays where it is, for a person to look at.
      if (!message) continue;
      if (cutoff !== undefined && !(Date.parse(message.ts) < cutoff)) continue;
      moves.push({ seq, name, folder: monthOf(message.ts) });
    }
  }
  return moves;
}

/** Moves one file by an atomic rename; false when its place in the archive is taken. */
function moveOne(host: ArchiveHost, move: { seq: number; name: string }, folder: string): boolean {
  ensureRealDir(join(host.dir, ARCHIVE_DIR));
  const target = join(host.dir, folder);
  ensureRealDir(target);
  // A file already there (put by hand) is never replaced: this one stays hot.
  if (lstatSync(join(target, move.name), { throwIfNoEntry: false })) return false;
  try {
    renameSync(join(host.dir, move.name), join(target, move.name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false; // another archive took it
    throw err;
  }
  host.moved(move.seq, move.name);
  return true;
}

/** `2026-11` from a message's time stamp; `undated` when it has none that reads. */
function monthOf(ts: string): string {
  return /^(\d{4})-(\d{2})/.exec(ts)?.slice(1, 3).join("-") ?? "undated";
}

/**
 * The archived messages of a channel folder, in seq order. Only real folders and regular files
 * are read (a link planted in the archive is passed over, docs/design.md §10), each at most `maxBytes`.
 */
export function readArchive(
  dir: string,
  channel: string,
  maxBytes: number,
  warn: (warning: string) => void,
): Message[] {
  const root = join(dir, ARCHIVE_DIR);
  if (entryKind(root) !== "dir") return [];
  const out: Message[] = [];
  for (const month of listRealDir(root)) {
    if (month.kind !== "dir") continue;
    const folder = join(root, month.name);
    for (const file of listRealDir(folder)) {
      if (file.kind !== "file" || seqOfFileName(file.name) === undefined) continue;
      const message = readArchived(join(folder, file.name), file.name, channel, maxBytes, warn);
      if (message) out.push(message);
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

function readArchived(
  path: string,
  name: string,
  channel: string,
  maxBytes: number,
  warn: (warning: string) => void,
): Message | undefined {
  try {
    const text = UTF8.decode(readRootFileSync(path, maxBytes).data);
    const parsed = parseMessage(text, name, channel);
    if (parsed.ok) return parsed.message;
    warn(`${ARCHIVE_DIR}: ${name}: ${parsed.reason}, skipped`);
  } catch (err) {
    warn(`${ARCHIVE_DIR}: ${name}: ${(err as Error).message}, skipped`);
  }
  return undefined;
}

/**
 * The cursors of agents not seen for `olderThanMs` in one channel folder: a cursor file is
 * rewritten whenever its agent reads something new, so its time is when the agent was last
 * seen reading. One of an agent in `keep` (seen lately, or parked: its presence says so) stays
 * however old. Removed unless `dryRun`; a link or anything but a regular file is left alone.
 */
export function pruneChannel(
  dir: string,
  channel: string,
  options: PruneOptions,
  now: number,
  keep: ReadonlySet<string>,
): PrunedAgent[] {
  const cursors = join(dir, ".cursors");
  if (entryKind(cursors) !== "dir") return [];
  const out: PrunedAgent[] = [];
  for (const entry of listRealDir(cursors)) {
    if (entry.kind !== "file" || !entry.name.endsWith(".txt")) continue;
    const path = join(cursors, entry.name);
    const mtimeMs = lstatSync(path).mtimeMs;
    if (now - mtimeMs <= options.olderThanMs) continue;
    if (keep.has(identity(entry.name.slice(0, -".txt".length)))) continue;
    if (!options.dryRun && !removeFileEntry(path)) continue;
    out.push({
      channel,
      agent: entry.name.slice(0, -".txt".length),
      files: [`.cursors/${entry.name}`],
      lastSeen: new Date(mtimeMs).toISOString(),
    });
  }
  return out;
}
