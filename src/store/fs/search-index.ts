import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { lstatSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Message } from "../../core/message.js";
import {
  ensureRealDir,
  entryKind,
  readOwnTextSync,
  replaceFileSync,
} from "../../fsutil/root-files.js";
import {
  type Candidate,
  intersect,
  matchMessage,
  type Term,
  union,
  words,
} from "../records/index.js";

/**
 * The folder store's stored search index (docs/search.md): `CH/.search/index-<id>.json`, a list
 * of the channel's message files with what the filters need (time, sender, recipients, status)
 * and for each word the files it occurs in. chat.py lists only `NNNN-*.md` files, and the folder
 * holds a `.gitignore` of `*`, so neither it nor git ever sees it.
 *
 * It exists so that a one-shot `agent-chat search` costs a `readdir` and one file read rather
 * than reading every message (a scan of 100,000 files costs seconds). It is anyone's input, like
 * the rest of the root, so it only ever proposes candidates, and only one its user wrote: it is
 * stored with a MAC under a secret of the user's (`<id>` names the secret, not the user), so an
 * index anyone else wrote or edited, or one copied from another channel, is rebuilt from the
 * messages instead of believed (a well-formed edit could otherwise hide a message from every
 * search). It is read without
 * following a link or a second name, its shape is checked (anything wrong and it is rebuilt),
 * it is brought up to date against the folder's file names on every use (names gone are
 * dropped, new ones read and added), and every hit shown is read from its own file and checked
 * by the same matcher as the scan. Message files are never edited (SPEC §4), so a file name
 * stands for its content; a file written in the last {@link SETTLE_MS} may still be being
 * written in place (chat.py) and is matched this time but not stored.
 */
export const INDEX_DIR = ".search";
const VERSION = 2;
/** An index of a huge channel is tens of MB; past this, searching scans instead. */
const MAX_INDEX_BYTES = 512 * 1024 * 1024;
const SETTLE_MS = 2_000;

/** name, ts, from, to, status: what the filters and the order need before a file is read. */
type Doc = [string, string, string, string, string];
/** A word and the ascending ids of the docs it occurs in, each stored as the gap to the last. */
type Posting = [string, number[]];

interface Stored {
  docs: Doc[];
  vocab: Posting[];
}

/** What the index needs from the folder store, which keeps its caches and locks private. */
export interface IndexHost {
  dir: string;
  channel: string;
  /** The user's own secret (never in the root) the index is kept under. */
  secret: string;
  /** The channel's message files by seq, as the store's index knows them now. */
  files(): Promise<Array<[number, readonly string[]]>>;
  /** The message in that file now; undefined when it is not (yet) a well-formed message. */
  parse(name: string, seq: number): Promise<Message | undefined>;
  now: number;
}

/**
 * The hot messages that contain every word of `terms` (a superset of the matches), by the
 * stored index brought up to date first; undefined when the index cannot answer (a literal
 * term, or no index can be kept here: then the caller scans).
 */
export async function storedCandidates(
  host: IndexHost,
  terms: Term[],
): Promise<Candidate[] | undefined> {
  if (terms.some((t) => t.kind === "literal")) return undefined;
  const indexDir = join(host.dir, INDEX_DIR);
  try {
    ensureRealDir(indexDir);
  } catch {
    return undefined; // a link or a file planted there: never followed, never written through
  }
  const seqs = new Map<string, number>();
  for (const [seq, names] of await host.files()) for (const name of names) seqs.set(name, seq);
  const { stored, fresh } = await update(host, indexDir, seqs);
  const ids = lookup(stored, terms);
  if (!ids) return undefined;
  const out: Candidate[] = [];
  for (const id of ids) {
    const [name, ts, from, to, status] = stored.docs[id]!;
    const seq = seqs.get(name)!;
    out.push({
      meta: { seq, channel: host.channel, ts, from, to, status },
      load: () => host.parse(name, seq),
    });
  }
  for (const message of fresh) {
    if (matchMessage(terms, message)) out.push({ meta: message, load: async () => message });
  }
  return out;
}

/** The stored index with the folder's names gone dropped and its new ones added, saved. */
async function update(
  host: IndexHost,
  indexDir: string,
  seqs: Map<string, number>,
  trust = true,
): Promise<{ stored: Stored; fresh: Message[] }> {
  const file = indexFile(host.secret);
  const loaded = trust ? load(indexDir, file, host) : undefined;
  const stored = loaded ?? { docs: [], vocab: [] };
  const known = new Set<string>();
  const keep: number[] = [];
  stored.docs.forEach((doc, id) => {
    if (seqs.has(doc[0]) && !known.has(doc[0])) {
      known.add(doc[0]);
      keep.push(id);
    }
  });
  const added: Message[] = [];
  const fresh: Message[] = [];
  for (const [name, seq] of seqs) {
    if (known.has(name)) continue;
    const message = await host.parse(name, seq);
    if (!message) continue; // not a message (yet): looked at again next time
    const mtime = lstatSync(join(host.dir, name), { throwIfNoEntry: false })?.mtimeMs ?? 0;
    (host.now - mtime < SETTLE_MS ? fresh : added).push(message);
  }
  if (loaded && added.length === 0 && keep.length === stored.docs.length) {
    return { stored, fresh };
  }
  const next = rebuild(stored, keep, added);
  if (!next) return update(host, indexDir, seqs, false); // a posting list is corrupt: start over
  try {
    if (entryKind(join(indexDir, ".gitignore")) === undefined) {
      writeFileSync(join(indexDir, ".gitignore"), "*\n", { flag: "wx" });
    }
    const text = JSON.stringify({ v: VERSION, channel: host.channel, ...next });
    replaceFileSync(indexDir, file, `${mac(host.secret, text)}\n${text}`);
  } catch {
    // A read-only root, or another process at it: this search still uses what it built.
  }
  return { stored: next, fresh };
}

/** The index file of a secret: each user's own, so that two users never rebuild each other's. */
function indexFile(secret: string): string {
  const id = createHash("sha256").update(`agent-chat search index\n${secret}`).digest("hex");
  return `index-${id.slice(0, 16)}.json`;
}

function mac(secret: string, text: string): string {
  return createHmac("sha256", secret).update(text).digest("hex");
}

/**
 * The stored index if it is one this user wrote for this channel: its MAC checks under the
 * user's secret (read without following a link or a second name).
 */
function load(indexDir: string, file: string, host: IndexHost): Stored | undefined {
  try {
    const raw = readOwnTextSync(join(indexDir, file), MAX_INDEX_BYTES);
    const cut = raw.indexOf("\n");
    const text = raw.slice(cut + 1);
    const want = Buffer.from(mac(host.secret, text));
    const got = Buffer.from(raw.slice(0, Math.max(0, cut)));
    if (cut < 0 || got.length !== want.length || !timingSafeEqual(got, want)) return;
    const data = JSON.parse(text);
    if (data?.v !== VERSION || data.channel !== host.channel) return;
    if (!Array.isArray(data.docs) || !Array.isArray(data.vocab)) return;
    const docs = data.docs as unknown[];
    const vocab = data.vocab as unknown[];
    const isDoc = (d: unknown) =>
      Array.isArray(d) && d.length === 5 && d.every((f) => typeof f === "string");
    const isPosting = (p: unknown) =>
      Array.isArray(p) && p.length === 2 && typeof p[0] === "string" && Array.isArray(p[1]);
    if (!docs.every(isDoc) || !vocab.every(isPosting)) return;
    return { docs: docs as Doc[], vocab: vocab as Posting[] };
  } catch {
    return undefined; // none yet, a link, a hard link, cut short or not JSON: rebuilt
  }
}

/** The ids of a posting list, or undefined when they are not ascending ids of the docs. */
function decode(gaps: number[], docCount: number): number[] | undefined {
  const ids: number[] = [];
  let id = -1;
  for (const gap of gaps) {
    if (!Number.isSafeInteger(gap) || gap < 1) return undefined;
    id += gap;
    if (id >= docCount) return undefined;
    ids.push(id);
  }
  return ids;
}

function encode(ids: number[]): number[] {
  return ids.map((id, i) => id - (i === 0 ? -1 : ids[i - 1]!));
}

/** The index of the kept docs (renumbered) and the added messages. */
function rebuild(stored: Stored, keep: number[], added: Message[]): Stored | undefined {
  const renumber = new Map(keep.map((old, id) => [old, id]));
  const postings = new Map<string, number[]>();
  for (const [word, gaps] of stored.vocab) {
    const ids = decode(gaps, stored.docs.length);
    if (!ids) return undefined;
    const kept = ids.map((id) => renumber.get(id)).filter((id) => id !== undefined);
    if (kept.length > 0) postings.set(word, kept);
  }
  const docs = keep.map((id) => stored.docs[id]!);
  for (const m of added) {
    const id = docs.length;
    docs.push([m.file, m.ts, m.from, m.to, m.status]);
    for (const word of new Set(words(`${m.title}\n${m.body}`))) {
      const ids = postings.get(word);
      if (ids) ids.push(id);
      else postings.set(word, [id]);
    }
  }
  return { docs, vocab: [...postings].map(([word, ids]) => [word, encode(ids)]) };
}

/**
 * The docs holding every whole word of the terms and a word starting with each prefix; undefined
 * when a posting list is not well-formed (the index is not used for this search).
 */
function lookup(stored: Stored, terms: Term[]): number[] | undefined {
  const wanted: Array<(word: string) => boolean> = [];
  for (const term of terms) {
    term.words.forEach((w, i) => {
      const prefix = term.kind === "prefix" && i === term.words.length - 1;
      wanted.push(prefix ? (word) => word.startsWith(w) : (word) => word === w);
    });
  }
  const found: number[][][] = wanted.map(() => []);
  for (const [word, gaps] of stored.vocab) {
    for (let i = 0; i < wanted.length; i++) {
      if (!wanted[i]!(word)) continue;
      const ids = decode(gaps, stored.docs.length);
      if (!ids) return undefined;
      found[i]!.push(ids);
    }
  }
  return intersect(found.map(union));
}
