import {
  closeSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import { identity } from "../../core/names.js";
import { ensureRealDir } from "../../fsutil/root-files.js";
import type {
  ArchiveOptions,
  ArchiveResult,
  PrunedAgent,
  PrunedPresence,
  PruneOptions,
  PruneResult,
} from "../find-types.js";
import { checkArchiveOptions, checkPruneOptions, type PresenceEntry } from "../records/index.js";

/**
 * Retention on NATS (docs/search.md): the channel's old messages are exported into a SPEC folder
 * (`<export>/<channel>/`, a `_meta.json` and one file per message, readable by chat.py and by
 * `agent-chat` on that folder), each file and the folder fsynced, and only then purged from the
 * stream, below the stream seq of the first message kept. A crash between the two loses
 * nothing: running archive again finds the files already there (the same text) and purges.
 * Numbering never goes back: the newest message always stays, and a post numbers on from the
 * channel's high-water mark (see NatsStore.lastOf). Cursors are numbers and stay valid. A
 * message this store could not read (not written by agent-chat) is never purged unexported:
 * the cut stops before it.
 */
export interface NatsArchiveHost {
  channel: string;
  /** The channel's messages as delivered, with their stream seqs, in order. */
  held(): readonly { seq: number; streamSeq: number; message: Message; text: string }[];
  /** The stream seq of the first message the feed skipped, if any. */
  firstSkipped(): number | undefined;
  metaText(): Promise<string>;
  /** Purges the channel's messages below this stream seq. */
  purge(cut: number): Promise<void>;
  now: number;
}

export async function archiveNats(
  host: NatsArchiveHost,
  options: ArchiveOptions,
): Promise<ArchiveResult> {
  checkArchiveOptions(options);
  if (options.exportTo === undefined && !options.dryRun) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      "on NATS, archive exports what it drops first: give the folder (--export DIR)",
    );
  }
  const held = host.held();
  const newest = held.at(-1);
  const dropped = chooseDropped(host, options);
  const result: ArchiveResult = {
    channel: host.channel,
    moved: dropped.map((e) => e.seq),
    folders: options.exportTo === undefined ? [] : [join(options.exportTo, host.channel)],
    dryRun: options.dryRun === true,
  };
  if (newest) result.kept = newest.seq;
  if (options.dryRun || dropped.length === 0 || options.exportTo === undefined) return result;
  exportMessages(join(options.exportTo, host.channel), await host.metaText(), dropped);
  const kept = held[dropped.length]!; // the newest always stays, so there is one
  await host.purge(kept.streamSeq);
  return result;
}

/**
 * The oldest messages the options pick, in a row from the first (a purge drops everything below
 * one stream seq): never the newest, never past a message the feed skipped.
 */
function chooseDropped(host: NatsArchiveHost, options: ArchiveOptions) {
  const held = host.held();
  const cutoff = options.olderThanMs === undefined ? undefined : host.now - options.olderThanMs;
  const skipped = host.firstSkipped() ?? Number.POSITIVE_INFINITY;
  const out: (typeof held)[number][] = [];
  for (const entry of held.slice(0, -1)) {
    if (entry.streamSeq > skipped) break;
    if (options.before !== undefined && entry.seq >= options.before) break;
    if (cutoff !== undefined && !(Date.parse(entry.message.ts) < cutoff)) break;
    out.push(entry);
  }
  return out;
}

/** Each message durably in `dir` before anything is purged; a file already there is kept. */
function exportMessages(
  dir: string,
  metaText: string,
  messages: readonly { message: Message; text: string }[],
): void {
  mkdirSync(join(dir, ".."), { recursive: true });
  ensureRealDir(dir); // never written through a link
  writeDurably(dir, "_meta.json", metaText, true);
  for (const { message, text } of messages) writeDurably(dir, message.file, text, false);
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd); // the names, too, before the purge
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `name` (fsynced) unless it exists: an export from an earlier run cut short holds the
 * same text; a different file of that name is someone else's, and archive stops before purging.
 */
function writeDurably(dir: string, name: string, text: string, keepOther: boolean): void {
  const path = join(dir, name);
  const there = lstatSync(path, { throwIfNoEntry: false });
  if (there) {
    if (keepOther || (there.isFile() && readFileSync(path, "utf8") === text)) return;
    throw new AgentChatError(
      "CHANNEL_EXISTS",
      `${path} already exists with other content; nothing was purged`,
    );
  }
  const tmp = join(dir, `.${name}.${process.pid}.tmp`);
  const fd = openSync(tmp, "wx", 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path); // never replaces a file that appeared meanwhile
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** A KV entry as prune sees it: its key, when it was last written, and its revision. */
export interface AgedEntry {
  key: string;
  written: Date;
  revision: number;
  /** The value, for a presence record (what prune keeps depends on it). */
  text?: string;
}

export interface NatsPruneHost {
  /** The live (not deleted) entries whose key matches a KV filter (`cursor.>`). */
  entries(filter: string): Promise<AgedEntry[]>;
  /** Deletes the entry if it is still at that revision (false: written since, so kept). */
  remove(entry: AgedEntry): Promise<boolean>;
  /** The channel of a cursor key and the agent, or undefined for a key of another shape. */
  cursorOf(key: string): { channel: string; agent: string } | undefined;
  presencePrefix: string;
  now: number;
  /** The agents whose cursors and presence stay however old (the search feature's rule). */
  keep(entries: readonly PresenceEntry[], now: number, olderThanMs: number): Set<string>;
}

/**
 * Prune on NATS: the cursors and presence records not written for `olderThanMs`, except those
 * of agents seen lately or parked ({@link NatsPruneHost.keep}). A KV entry's
 * own time is when it was last written, as a cursor file's mtime is on a folder (written at each
 * read that moved it; presence at each activity). An entry written after it was listed is kept:
 * each delete is checked against the revision listed.
 */
export async function pruneNats(host: NatsPruneHost, options: PruneOptions): Promise<PruneResult> {
  checkPruneOptions(options);
  const cutoff = host.now - options.olderThanMs;
  const records = await host.entries(`${host.presencePrefix}*`);
  const agentOf = (entry: AgedEntry) => entry.key.slice(host.presencePrefix.length);
  const keep = host.keep(
    records.map((e) => ({ key: agentOf(e), text: e.text, writtenMs: e.written.getTime() })),
    host.now,
    options.olderThanMs,
  );
  const old = async (filter: string) =>
    (await host.entries(filter)).filter((e) => e.written.getTime() < cutoff);
  const removed: PrunedAgent[] = [];
  for (const entry of await old("cursor.>")) {
    const of = host.cursorOf(entry.key);
    if (!of || keep.has(identity(of.agent))) continue;
    if (!options.dryRun && !(await host.remove(entry))) continue;
    removed.push({ ...of, files: [entry.key], lastSeen: entry.written.toISOString() });
  }
  const presence: PrunedPresence[] = [];
  for (const entry of records.filter((e) => e.written.getTime() < cutoff)) {
    const agent = agentOf(entry);
    if (keep.has(agent)) continue;
    if (!options.dryRun && !(await host.remove(entry))) continue;
    presence.push({ agent, file: entry.key, lastSeen: entry.written.toISOString() });
  }
  return { removed, presence, dryRun: options.dryRun === true };
}
