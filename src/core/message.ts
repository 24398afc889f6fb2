import { AgentChatError } from "./errors.js";
import { identity, slug } from "./names.js";

/**
 * What a reader knows of a message's author: `verified` (signed by the sender's pinned key),
 * `unsigned` (no signature: chat.py's posts, or a poster without a key) or `forged` (a bad or
 * malformed signature, or a key that is not the sender's pinned key).
 */
export type Trust = "verified" | "unsigned" | "forged";

/** A message as the SPEC defines it, with its recipients already parsed. */
export interface Message {
  seq: number;
  from: string;
  /** The `to` field as written (`all` for a broadcast). */
  to: string;
  replyTo?: number;
  channel: string;
  ts: string;
  status: string;
  title: string;
  /** The markdown body, right-trimmed. */
  body: string;
  /** Frontmatter keys beyond the SPEC's, in file order (e.g. `metadata` from a b00t envelope). */
  extra: Record<string, string>;
  /** The file name inside the channel folder. */
  file: string;
  /**
   * Who wrote it, as far as a reader can tell (src/core/signature.ts): set by every reader of
   * this package; absent only on a message parsed by hand.
   */
  trust?: Trust;
  /** Why a message is `forged`, in a few words. */
  trustNote?: string;
  /** Set by a reader when the channel's membership is strict and the sender is no member. */
  nonMember?: true;
  /** Set by the parser when a `sig` line is present but the file around it is not as signed. */
  sigDefect?: string;
}

export interface NewMessage {
  seq: number;
  from: string;
  to?: string | readonly string[];
  replyTo?: number;
  channel: string;
  ts: string;
  status?: string;
  title: string;
  body: string;
  extra?: Record<string, string>;
}

export const DEFAULT_STATUS = "discussion";
export const BROADCAST = "all";

/** Matches a message file name: digits, `-`, anything, `.md`. The digits are the seq. */
export const MESSAGE_FILE = /^(\d+)-[^/\\]*\.md$/;

/**
 * The largest sequence number ever read or issued. Numbers come from file names and `.seq`,
 * which anyone can write: one near 2^53 would leave no room to count on (and 2^53 + 1 is not a
 * distinct double). A million years of a message a second stays below it.
 */
export const MAX_SEQ = 1e12;

/**
 * How far past the channel's last message a number may lie and still belong to it. A number
 * further on (a planted `999999999999-x.md`, or a `.seq` saying so) is not part of the sequence:
 * it is reported and ignored, and numbering goes on from the last real message, so that no
 * single file can use the numbers up. A gap this wide never happens by itself: it would take a
 * million numbers burned in a row.
 */
export const MAX_SEQ_GAP = 1_000_000;

/** The seq encoded in a message file name, or undefined when the name is not a message's. */
export function seqOfFileName(name: string): number | undefined {
  const m = MESSAGE_FILE.exec(name);
  if (!m) return undefined;
  const seq = Number(m[1]);
  return Number.isSafeInteger(seq) && seq <= MAX_SEQ ? seq : undefined;
}

/**
 * A sequence number kept as text (`.seq`, a cursor file): decimal digits only (surrounding white
 * space aside), at most {@link MAX_SEQ}; 0 for anything else, since anyone can write those files.
 */
export function parseSeqText(text: string): number {
  const trimmed = text.trim();
  const n = /^\d{1,13}$/.test(trimmed) ? Number(trimmed) : 0;
  return n <= MAX_SEQ ? n : 0;
}

/**
 * A cursor's number (empty: 0, as chat.py reads it); undefined when it holds anything else,
 * which chat.py reads as 0 too, handing the agent the whole channel again.
 */
export function cursorSeq(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return 0;
  const n = /^\d{1,16}$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  return n <= MAX_SEQ ? n : undefined;
}

/** Whether `name` looks like a message file but its number is beyond {@link MAX_SEQ}. */
export function hasOversizedSeq(name: string): boolean {
  const m = MESSAGE_FILE.exec(name);
  return m !== null && !(Number(m[1]) <= MAX_SEQ);
}

export function messageFileName(seq: number, from: string, title: string): string {
  return `${String(seq).padStart(4, "0")}-${slug(from)}-${slug(title)}.md`;
}

/**
 * Every character that some reader (Python's `str.splitlines` included) treats as a line break.
 * Replacing them with a space keeps a frontmatter value on its one line, so it cannot forge a
 * field or close the block early.
 */
const LINE_BREAKS = /\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/g;

export function oneLine(value: string): string {
  return value.replace(LINE_BREAKS, " ").trim();
}

export interface Recipients {
  broadcast: boolean;
  /** Identities of the named recipients (empty for a broadcast). */
  names: string[];
}

/** Parses `to`: empty, `all`, `*` or `[]` (any case) is a broadcast; else a comma list. */
export function parseTo(raw: string | undefined): Recipients {
  let text = (raw ?? "").trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const items = text
    .split(",")
    .map((item) => item.trim().replace(/^["']|["']$/g, ""))
    .filter((item) => item !== "");
  if (items.length === 0 || items.some((item) => item === "*" || item.toLowerCase() === "all")) {
    return { broadcast: true, names: [] };
  }
  return { broadcast: false, names: items.map(identity) };
}

/** Normalises a user-given recipient list to the `to` value written in the file. */
export function formatTo(to: string | readonly string[] | undefined): string {
  const list = typeof to === "string" ? [to] : (to ?? []);
  const joined = list
    .flatMap((item) => oneLine(item).split(","))
    .map((item) => item.trim())
    .filter((item) => item !== "")
    .join(",");
  return parseTo(joined).broadcast ? BROADCAST : joined;
}

/** A message is relevant to an agent when someone else sent it to everyone or to that agent. */
export function isRelevant(message: Pick<Message, "from" | "to">, agent: string): boolean {
  const me = identity(agent);
  if (identity(message.from) === me) return false;
  const recipients = recipientsOf(message.to);
  return recipients === "broadcast" || recipients.has(me);
}

/**
 * The recipients of recent `to` values, parsed once: a daemon holding thousands of waiters asks
 * each of them about the same new message, whose `to` may name hundreds of agents.
 */
const recentRecipients = new Map<string, "broadcast" | ReadonlySet<string>>();
const RECENT_RECIPIENTS = 64;

function recipientsOf(to: string): "broadcast" | ReadonlySet<string> {
  let recipients = recentRecipients.get(to);
  if (recipients === undefined) {
    const parsed = parseTo(to);
    recipients = parsed.broadcast ? "broadcast" : new Set(parsed.names);
    recentRecipients.set(to, recipients);
    if (recentRecipients.size > RECENT_RECIPIENTS) {
      recentRecipients.delete(recentRecipients.keys().next().value as string);
    }
  }
  return recipients;
}

/** The seq of the message this one answers, when `reply_to` holds one. */
function parseReplyTo(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** Serialises a message byte-compatibly with the reference `chat.py`. */
export function serializeMessage(message: NewMessage): string {
  const lines = [
    "---",
    `seq: ${message.seq}`,
    `from: ${oneLine(message.from)}`,
    `to: ${formatTo(message.to)}`,
  ];
  if (message.replyTo !== undefined) lines.push(`reply_to: ${message.replyTo}`);
  lines.push(
    `channel: ${oneLine(message.channel)}`,
    `ts: ${oneLine(message.ts)}`,
    `status: ${oneLine(message.status ?? "") || DEFAULT_STATUS}`,
    `title: ${oneLine(message.title)}`,
  );
  for (const [key, value] of Object.entries(message.extra ?? {})) {
    const k = slugKey(key);
    lines.push(`${k}: ${oneLine(value)}`);
  }
  lines.push("---");
  return `${lines.join("\n")}\n${message.body.trimEnd()}\n`;
}

const SPEC_KEYS = new Set(["seq", "from", "to", "reply_to", "channel", "ts", "status", "title"]);

/** Extra frontmatter keys are restricted to `[a-z0-9_]`, so a key can never carry a `:`. */
function slugKey(key: string): string {
  const k = key.toLowerCase().replace(/[^a-z0-9_]+/g, "_");
  if (k === "" || SPEC_KEYS.has(k)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `frontmatter key ${JSON.stringify(key)} is reserved`,
    );
  }
  return k;
}

export type ParseResult = { ok: true; message: Message } | { ok: false; reason: string };

const FENCE = "---";

/**
 * Parses the text of a message file. The frontmatter format is "split each line at its first
 * colon, trim both sides" (not YAML: `title: Re: schema` is legal). A file without a closed
 * frontmatter block, or without `from`, is not a message and is never delivered.
 */
export function parseMessage(text: string, file: string, channel: string): ParseResult {
  const seq = seqOfFileName(file);
  if (seq === undefined) return { ok: false, reason: "file name is not NNNN-….md" };
  let src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (src.includes("\r")) src = src.replace(/\r\n?/g, "\n");
  if (src.includes("\0")) return { ok: false, reason: "binary content" };
  const firstEnd = src.indexOf("\n");
  if (firstEnd < 0 || src.slice(0, firstEnd).trimEnd() !== FENCE) {
    return { ok: false, reason: "no frontmatter" };
  }
  const front = readFrontmatter(src, firstEnd + 1);
  if (front === undefined) return { ok: false, reason: "unclosed frontmatter" };
  const from = front.fields.get("from");
  if (!from) return { ok: false, reason: "frontmatter has no 'from'" };
  const message = messageOf(front, { seq, from, channel, file }, src);
  if (front.fields.has("sig")) {
    const defect = front.duplicateSig ? "two signature lines" : notAsWritten(message, src);
    if (defect !== undefined) message.sigDefect = defect;
  }
  return { ok: true, message };
}

interface Frontmatter {
  /** The first value of each key, trimmed, in file order. */
  fields: Map<string, string>;
  duplicateSig: boolean;
  /** Where the body starts: just after the closing fence. */
  bodyStart: number;
}

/** The frontmatter lines from `pos` up to the closing fence; undefined when it never closes. */
function readFrontmatter(src: string, pos: number): Frontmatter | undefined {
  const fields = new Map<string, string>();
  let duplicateSig = false;
  while (pos < src.length) {
    let end = src.indexOf("\n", pos);
    if (end < 0) end = src.length;
    const line = src.slice(pos, end);
    pos = end + 1;
    if (line.trim() === FENCE)
      return { fields, duplicateSig, bodyStart: Math.min(pos, src.length) };
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    if (key === "sig" && fields.has(key)) duplicateSig = true;
    if (key !== "" && !fields.has(key)) fields.set(key, line.slice(colon + 1).trim());
  }
  return undefined;
}

function messageOf(
  { fields, bodyStart }: Frontmatter,
  known: Pick<Message, "seq" | "from" | "channel" | "file">,
  src: string,
): Message {
  const extra: Record<string, string> = {};
  for (const [key, value] of fields) if (!SPEC_KEYS.has(key)) extra[key] = value;
  const message: Message = {
    seq: known.seq,
    from: known.from,
    to: fields.get("to") ?? BROADCAST,
    // The folder a message lives in is its channel, whatever a copied file claims.
    channel: known.channel,
    ts: fields.get("ts") ?? "",
    status: fields.get("status") || DEFAULT_STATUS,
    title: fields.get("title") ?? "",
    body: src.slice(bodyStart).trimEnd(),
    extra,
    file: known.file,
  };
  const replyTo = parseReplyTo(fields.get("reply_to"));
  if (replyTo !== undefined) message.replyTo = replyTo;
  return message;
}

/**
 * A signed file must be exactly what the signer wrote: lines the parser skips or keeps only once
 * (a second `from`, a line without a colon) would otherwise show one thing to chat.py and
 * another to the signature.
 */
function notAsWritten(message: Message, src: string): string | undefined {
  try {
    if (serializeMessage(message) === src) return undefined;
  } catch {
    // An extra key that cannot be written back: not a file this package signed.
  }
  return "the file was changed after it was signed";
}

/** ISO-8601 with the local offset, to the second, as the reference writes `ts` and `created`. */
export function formatTimestamp(date: Date = new Date()): string {
  const pad = (n: number) => String(Math.trunc(Math.abs(n))).padStart(2, "0");
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}` +
    `${sign}${pad(offset / 60)}:${pad(offset % 60)}`
  );
}

/** A title for a message that has none: the first non-empty line of the body, shortened. */
export function titleFromBody(body: string, max = 72): string {
  const line = body.split(/\r?\n/).find((l) => l.trim() !== "") ?? "";
  const t = oneLine(line.replace(/^#+\s*/, ""));
  return t.length > max ? `${t.slice(0, max - 1)}…` : t || "message";
}
