import { join } from "node:path";
import { listRealDir, readRootFileSync } from "../../../../fsutil/root-files.js";

/**
 * What chat.py 0.7's `state` draws from a channel's messages: decisions, blockers, verification
 * evidence, and who finished a task. Read as chat.py reads them (its front-matter reader, its
 * body split, its text decoding), so that both render the same `state.md` from one folder.
 */

export interface DecisionRecord {
  seq: number;
  title: string;
  author: string;
  time: string;
  details: string;
  source: string;
}

export interface BlockerRecord {
  kind: string;
  source_id: string;
  title: string;
  details: string;
  author: string | null;
  time: string | null;
  blocking_items: string[];
}

export interface VerificationRecord {
  source_type: "message" | "task";
  source_id: string;
  author: string;
  time: string;
  title: string;
  evidence: string;
  acceptance: string[];
}

export interface MessageFindings {
  lastSeq: number;
  decisions: DecisionRecord[];
  blockers: BlockerRecord[];
  verification: VerificationRecord[];
  /** The task ids whose completion a `lease.completed`/`task.updated` message records, by whom. */
  completedBy: Map<string, string>;
}

/** Larger messages than a channel ever holds are planted: left out, as unreadable ones are. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** Python's `str.strip()` whitespace (JavaScript's `trim` also strips U+FEFF, Python's not). */
const PY_SPACE =
  "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");
/** Python's `\b` after a word: no letter, digit or `_` follows. */
const END = "(?![\\p{L}\\p{N}_])";
const HEADING = {
  decision: new RegExp(`^#+\\s*Decision${END}`, "imu"),
  blocker: new RegExp(`^#+\\s*Blocker${END}`, "imu"),
  verification: new RegExp(`^#+\\s*(Verification|Evidence)${END}`, "imu"),
};
/** Text that is not UTF-8 fails chat.py's read: that message is left out. A BOM is kept. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function pyStrip(text: string): string {
  return text.replace(PY_STRIP, "");
}

/** chat.py's sequence number of a file name (`0042-bob-title.md` → 42), else undefined. */
function seqOf(name: string): number | undefined {
  const m = /^([0-9]+)-/.exec(name);
  return m && name.endsWith(".md") ? Number(m[1]) : undefined;
}

/** The message files of the channel folder `dir`, by sequence number, and the largest number. */
function messageFiles(
  dir: string,
  upTo: number,
): { files: { name: string; seq: number }[]; lastSeq: number } {
  const files = listRealDir(dir)
    .map((e) => ({ name: e.name, seq: seqOf(e.name), kind: e.kind }))
    .filter((e): e is { name: string; seq: number; kind: typeof e.kind } => e.seq !== undefined)
    .filter((e) => e.seq <= upTo);
  const lastSeq = files.reduce((max, f) => Math.max(max, f.seq), 0);
  // chat.py reads through links; a root is untrusted here, so only plain files are read.
  const plain = files.filter((f) => f.kind === "file");
  plain.sort((a, b) => a.seq - b.seq || (a.name < b.name ? -1 : 1));
  return { files: plain, lastSeq };
}

/** A message's text as Python's universal-newline read gives it; undefined when unreadable. */
function messageText(path: string): string | undefined {
  try {
    return UTF8.decode(readRootFileSync(path, MAX_MESSAGE_BYTES).data).replace(/\r\n?/g, "\n");
  } catch {
    return undefined;
  }
}

/** chat.py's `parse_frontmatter`: the `key: value` lines between a first `---` line and the next. */
function frontmatter(text: string): Map<string, string> {
  const meta = new Map<string, string>();
  const lines = text.split("\n");
  if (!lines[0]?.startsWith("---")) return meta;
  for (const line of lines.slice(1)) {
    if (pyStrip(line) === "---") return meta;
    const colon = line.indexOf(":");
    if (colon >= 0) meta.set(pyStrip(line.slice(0, colon)), pyStrip(line.slice(colon + 1)));
  }
  return new Map(); // no closing line: chat.py keeps nothing of it
}

/** chat.py's body: what follows the second `---` anywhere in the text, else all of it, stripped. */
function bodyOf(text: string): string {
  const first = text.indexOf("---");
  const second = first < 0 ? -1 : text.indexOf("---", first + 3);
  return pyStrip(second < 0 ? text : text.slice(second + 3));
}

/** One message as the summary looks at it. */
interface Seen {
  seq: number;
  meta: Map<string, string>;
  body: string;
  author: string;
  time: string;
  title: string;
  type: string;
  status: string;
}

function seen(name: string, seq: number, text: string): Seen {
  const meta = frontmatter(text);
  const value = (key: string) => meta.get(key) || "";
  return {
    seq,
    meta,
    body: bodyOf(text),
    author: value("from") || "unknown",
    time: value("time") || value("ts"),
    title: value("title") || name.slice(0, -".md".length),
    type: value("type").toLowerCase(),
    status: value("status").toLowerCase(),
  };
}

/** A title without its `decision:` (or other) prefix, else the title as it was. */
function cleanTitle(title: string, prefix: RegExp): string {
  return pyStrip(title.replace(prefix, "")) || title;
}

function startsWithAny(title: string, prefixes: string[]): boolean {
  const lower = title.toLowerCase();
  return prefixes.some((p) => lower.startsWith(p));
}

function isDecision(m: Seen): boolean {
  return (
    m.type === "decision" ||
    m.status === "decision" ||
    m.meta.has("decision") ||
    startsWithAny(m.title, ["decision:", "[decision]"]) ||
    HEADING.decision.test(m.body)
  );
}

function isBlocker(m: Seen): boolean {
  return (
    ["blocker", "blocked"].includes(m.type) ||
    ["blocker", "blocked"].includes(m.status) ||
    m.meta.has("blocker") ||
    startsWithAny(m.title, ["blocker:", "[blocker]"]) ||
    HEADING.blocker.test(m.body)
  );
}

function isVerification(m: Seen): boolean {
  return (
    ["verification", "evidence", "test"].includes(m.type) ||
    ["verified", "verified-by", "verification"].includes(m.status) ||
    m.meta.has("verification") ||
    m.meta.has("evidence") ||
    startsWithAny(m.title, ["verification:", "evidence:", "[verification]"]) ||
    HEADING.verification.test(m.body)
  );
}

/** The task a completion audit message (chat.py's `lease.completed`, `task.updated`) finished. */
function completedTask(m: Seen): string | undefined {
  if (m.status !== "lease.completed" && m.status !== "task.updated") return undefined;
  try {
    const event = JSON.parse(m.body);
    const ok =
      event !== null &&
      typeof event === "object" &&
      event.event === m.status &&
      event.status === "done" &&
      typeof event.task_id === "string";
    return ok ? event.task_id : undefined;
  } catch {
    return undefined;
  }
}

function record(m: Seen, into: MessageFindings): void {
  const done = completedTask(m);
  if (done !== undefined) into.completedBy.set(done, m.author);
  const by = { author: m.author, time: m.time };
  const id = String(m.seq).padStart(4, "0");
  if (isDecision(m)) {
    const title = cleanTitle(m.title, /^decision:\s*/i);
    into.decisions.push({ seq: m.seq, title, ...by, details: m.body, source: `message:${id}` });
  }
  if (isBlocker(m)) {
    const title = cleanTitle(m.title, /^blocker:\s*/i);
    into.blockers.push({
      kind: "message",
      source_id: `#${id}`,
      title,
      details: m.body,
      ...by,
      blocking_items: [],
    });
  }
  if (isVerification(m)) {
    const title = cleanTitle(m.title, /^(verification|evidence):\s*/i);
    into.verification.push({
      source_type: "message",
      source_id: String(m.seq),
      ...by,
      title,
      evidence: m.body,
      acceptance: [],
    });
  }
}

/** Every finding of the channel folder `dir`'s messages (those up to `upTo`), in sequence order. */
export function scanMessages(dir: string, upTo = Number.POSITIVE_INFINITY): MessageFindings {
  const { files, lastSeq } = messageFiles(dir, upTo);
  const findings: MessageFindings = {
    lastSeq,
    decisions: [],
    blockers: [],
    verification: [],
    completedBy: new Map(),
  };
  for (const file of files) {
    const text = messageText(join(dir, file.name));
    if (text !== undefined) record(seen(file.name, file.seq, text), findings);
  }
  return findings;
}
