import { promises as fsp } from "node:fs";
import { join } from "node:path";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { MAX_SEQ, parseMessage, seqOfFileName } from "../core/message.js";
import { parseMeta } from "../core/meta.js";
import { validateName } from "../core/names.js";
import {
  createFileExclusive,
  ensureRealDir,
  entryKind,
  readRootTextSync,
  replaceFile,
} from "../fsutil/root-files.js";
import type { ChannelDump, NatsStore } from "./nats/index.js";
import { leaseFileName, MAX_FRONTMATTER_BYTES, TASK_FILE } from "./shared/index.js";
import { DEFAULT_MAX_BODY_BYTES } from "./types.js";

export interface TransferSummary {
  channels: number;
  messages: number;
  cursors: number;
  tasks: number;
  /** Files passed over (not well-formed messages, duplicate seqs). */
  warnings: string[];
}

/** The largest file an import reads: a message at the default body limit with its frontmatter. */
const MAX_IMPORTED_FILE = DEFAULT_MAX_BODY_BYTES + MAX_FRONTMATTER_BYTES;

type ReadText = (path: string) => string;

/** The well-formed messages, sorted by seq, and the task markers of a channel folder. */
function readEntries(
  chDir: string,
  name: string,
  files: string[],
  read: ReadText,
  warnings: string[],
): Pick<ChannelDump, "messages" | "tasks"> {
  const messages: ChannelDump["messages"] = [];
  const tasks: ChannelDump["tasks"] = [];
  const skip = (file: string, why: string) =>
    warnings.push(`${name}/${file}: ${why}, not imported`);
  for (const file of files) {
    const seq = seqOfFileName(file);
    if (seq === undefined && !TASK_FILE.test(file)) continue;
    let text: string;
    try {
      text = read(join(chDir, file));
      if (seq === undefined) tasks.push({ file, text, ...readLease(chDir, file, read) });
    } catch (err) {
      skip(file, (err as Error).message);
      continue;
    }
    if (seq === undefined) continue;
    const parsed = parseMessage(text, file, name);
    if (parsed.ok) messages.push({ seq, file, text });
    else skip(file, parsed.reason);
  }
  messages.sort((a, b) => a.seq - b.seq || (a.file < b.file ? -1 : 1));
  return { messages, tasks };
}

/** `.cursors/<agent>.txt`: a plain file holding a message number, else passed over. */
async function readCursors(cursorDir: string, read: ReadText): Promise<Record<string, number>> {
  const cursors: Record<string, number> = {};
  const files = entryKind(cursorDir) === "dir" ? await fsp.readdir(cursorDir) : [];
  for (const file of files) {
    if (!file.endsWith(".txt") || file.startsWith(".")) continue;
    let n = 0;
    try {
      n = Number.parseInt(read(join(cursorDir, file)), 10);
    } catch {
      continue; // not a plain file
    }
    if (Number.isSafeInteger(n) && n > 0 && n <= MAX_SEQ) cursors[file.slice(0, -4)] = n;
  }
  return cursors;
}

/**
 * Moves each named channel with `move` and counts what it moved (undefined: the channel is
 * skipped), the same way out of NATS and into it.
 */
async function transferEach(
  names: readonly string[],
  move: (name: string, warnings: string[]) => Promise<ChannelDump | undefined>,
): Promise<TransferSummary> {
  const summary: TransferSummary = { channels: 0, messages: 0, cursors: 0, tasks: 0, warnings: [] };
  for (const name of names) {
    const dump = await move(name, summary.warnings);
    if (!dump) continue;
    summary.channels += 1;
    summary.messages += dump.messages.length;
    summary.cursors += Object.keys(dump.cursors).length;
    summary.tasks += dump.tasks.length;
  }
  return summary;
}

/**
 * Writes a NATS namespace out as the SPEC folder: `<dir>/<channel>/_meta.json`, the message files
 * under their seq-numbered names, `.cursors/<agent>.txt` and the task markers. The reference
 * `chat.py` and the folder store read the result as is. A channel folder that already holds a
 * `_meta.json` is never overwritten.
 */
export async function exportNamespace(
  store: NatsStore,
  dir: string,
  only?: readonly string[],
): Promise<TransferSummary> {
  const names = only ?? (await store.channels()).map((c) => c.name);
  return transferEach(names, async (name) => {
    validateName("channel", name);
    const dump = checkDump(await store.dump(name));
    const chDir = join(dir, name);
    await createChannelDir(dir, chDir, dump.metaText);
    try {
      await writeDump(chDir, dump);
    } catch (err) {
      throw wrapIoError(err, `cannot write ${chDir}`);
    }
    return dump;
  });
}

/** The channel's folder with its `_meta.json`, created exclusively: an export never overwrites. */
async function createChannelDir(dir: string, chDir: string, metaText: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true });
    ensureRealDir(chDir); // never written through a link
    await createFileExclusive(chDir, "_meta.json", metaText);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      throw new AgentChatError(
        "CHANNEL_EXISTS",
        `${join(chDir, "_meta.json")} already exists; export into an empty folder`,
        { cause: err },
      );
    }
    throw wrapIoError(err, `cannot write ${chDir}`);
  }
}

/** The messages, the high-water mark, the cursors and the task markers with their leases. */
async function writeDump(chDir: string, dump: ChannelDump): Promise<void> {
  for (const m of dump.messages) await replaceFile(chDir, m.file, m.text);
  const last = dump.messages.at(-1)?.seq;
  // The folder store's high-water mark, so that the folder continues the same numbering.
  if (last !== undefined) await replaceFile(chDir, ".seq", String(last));
  const cursors = Object.entries(dump.cursors);
  if (cursors.length > 0) ensureRealDir(join(chDir, ".cursors"));
  for (const [agent, seq] of cursors) {
    await replaceFile(join(chDir, ".cursors"), `${agent}.txt`, String(seq));
  }
  for (const t of dump.tasks) {
    await replaceFile(chDir, t.file, t.text);
    const id = TASK_FILE.exec(t.file)![1]!;
    if (t.lease !== undefined) await replaceFile(chDir, leaseFileName(id), t.lease);
  }
}

/**
 * Reads a SPEC folder into a NATS namespace, keeping every message's sequence number, the
 * cursors and the task markers. Channels that already exist in the namespace are refused
 * (CHANNEL_EXISTS) before anything of theirs is written.
 */
export async function importFolder(
  dir: string,
  store: NatsStore,
  only?: readonly string[],
): Promise<TransferSummary> {
  let entries: string[];
  try {
    entries = (await fsp.readdir(dir)).sort();
  } catch (err) {
    throw wrapIoError(err, `cannot read ${dir}`);
  }
  const names = only ?? entries.filter((n) => !n.startsWith(".") && !n.startsWith("_"));
  return transferEach(names, async (name, warnings) => {
    try {
      validateName("channel", name);
    } catch {
      return undefined;
    }
    const dump = await readChannel(join(dir, name), name, warnings);
    if (!dump) {
      if (only) throw new AgentChatError("CHANNEL_NOT_FOUND", `no channel ${name} in ${dir}`);
      return undefined;
    }
    await store.restore(dump);
    return dump;
  });
}

/** Agent names as cursor files carry them (the reference's slug, or a name of ours). */
const CURSOR_AGENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Refuses a dump whose file names are not what the SPEC folder holds: a namespace is shared,
 * and a peer could store a task holder such as `../../x` to make the export write outside it.
 */
function checkDump(dump: ChannelDump): ChannelDump {
  const names: Array<[string, boolean]> = [
    ...dump.messages.map((m): [string, boolean] => [m.file, seqOfFileName(m.file) !== undefined]),
    ...dump.tasks.map((t): [string, boolean] => [t.file, TASK_FILE.test(t.file)]),
    ...Object.keys(dump.cursors).map((agent): [string, boolean] => [
      agent,
      CURSOR_AGENT.test(agent),
    ]),
  ];
  const bad = names.find(([, ok]) => !ok);
  if (bad) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `channel ${dump.name} holds ${JSON.stringify(bad[0])}, which is not a SPEC folder name ` +
        "(a peer may have stored it to write outside the export); nothing of the channel was exported",
    );
  }
  return dump;
}

/**
 * The lease kept beside a task marker, when there is a readable one (it carries the token the
 * next grant must exceed); an unreadable one leaves the task without, as the store reads it.
 */
function readLease(
  chDir: string,
  file: string,
  read: (path: string) => string,
): { lease?: string } {
  const path = join(chDir, leaseFileName(TASK_FILE.exec(file)![1]!));
  try {
    return entryKind(path) === "file" ? { lease: read(path) } : {};
  } catch {
    return {};
  }
}

async function readChannel(
  chDir: string,
  name: string,
  warnings: string[],
): Promise<ChannelDump | undefined> {
  // The folder being imported is untrusted like any root: no links, no FIFOs, bounded reads.
  const read = (path: string) => readRootTextSync(path, MAX_IMPORTED_FILE);
  if (entryKind(chDir) !== "dir") return undefined;
  let metaText: string;
  try {
    metaText = read(join(chDir, "_meta.json"));
  } catch {
    return undefined; // not a channel
  }
  parseMeta(metaText, name);
  const { messages, tasks } = readEntries(chDir, name, await fsp.readdir(chDir), read, warnings);
  const unique = messages.filter((m, i) => {
    const duplicate = i > 0 && messages[i - 1]!.seq === m.seq;
    if (duplicate) warnings.push(`${name}/${m.file}: a second message #${m.seq}, not imported`);
    return !duplicate;
  });
  const cursors = await readCursors(join(chDir, ".cursors"), read);
  return { name, metaText, messages: unique, cursors, tasks };
}
