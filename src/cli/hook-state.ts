import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { shortHash } from "../core/hash.js";
import { readPrivateTextSync } from "../fsutil/root-files.js";
import { type ClaudeInbox, inboxOf } from "../hosts/claude-inbox.js";
import { canonicalRoot, type NatsConnectionOptions } from "../store/roots.js";

/** What a hook needs from its process: the root, the environment and the two outputs. */
export interface HookIo {
  readonly root: string;
  /** Connection options when the root is a NATS namespace (credentials, TLS, timeout). */
  readonly nats?: NatsConnectionOptions;
  readonly env: NodeJS.ProcessEnv;
  /** Where each session's "already told" marks are kept (see hook-state.ts). */
  readonly stateDir: string;
  /** The user's keys and pins: messages are checked against the pins `read` keeps. */
  readonly configDir?: string;
  out(text: string): void;
  err(text: string): void;
}

/**
 * What the hooks of one host-tool session have already said, so that a notice is shown once per
 * new message instead of at session start, again on the first prompt, and on every prompt after.
 * Kept under the user's state folder, never in the root (shared, and untrusted): one small file
 * per session, the newest {@link MAX_SESSIONS} kept. Read and written with synchronous calls: a
 * hook lives a few milliseconds, and `fs.promises` and the thread pool would cost it more than
 * these few small files.
 */
export interface SessionSeen {
  /**
   * The root the marks belong to, canonical (a folder's real path; a NATS URL without its
   * credentials): another root starts afresh, however either is spelt.
   */
  root: string;
  /** Per audience (the model's context, or the user at stop): each channel's seq last told. */
  context: Record<string, number>;
  stop: Record<string, number>;
}

const MAX_SESSIONS = 200;
const MAX_STATE_BYTES = 64 * 1024;

/**
 * One file per (agent, session); base64url keeps any session id a safe file name. A long one is
 * cut, with a hash of the whole appended, so that two ids sharing a long prefix stay apart.
 */
function sessionFile(dir: string, agent: string, sessionId: string): string {
  const key = `${agent}\n${sessionId}`;
  const name = Buffer.from(key).toString("base64url");
  return join(dir, name.length <= 200 ? name : `${name.slice(0, 180)}-${shortHash(key)}`);
}

export async function loadSeen(
  dir: string,
  agent: string,
  sessionId: string,
  root: string,
): Promise<SessionSeen> {
  const key = rootKey(root);
  const fresh: SessionSeen = { root: key, context: {}, stop: {} };
  try {
    const text = readFileSync(sessionFile(dir, agent, sessionId), "utf8");
    if (text.length > MAX_STATE_BYTES) return fresh;
    const value = JSON.parse(text) as Partial<SessionSeen>;
    if (value.root !== key) return fresh;
    return { root: key, context: marks(value.context), stop: marks(value.stop) };
  } catch {
    return fresh;
  }
}

/** A root that does not parse (the hook reports that itself) keys its marks as written. */
function rootKey(root: string): string {
  try {
    return canonicalRoot(root);
  } catch {
    return root;
  }
}

function marks(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (typeof value !== "object" || value === null) return out;
  for (const [k, v] of Object.entries(value)) if (Number.isSafeInteger(v)) out[k] = v as number;
  return out;
}

/** Writes the session's file (temporary file, then rename) and keeps the folder bounded. */
export async function saveSeen(
  dir: string,
  agent: string,
  sessionId: string,
  seen: SessionSeen,
): Promise<void> {
  writePrivately(dir, sessionFile(dir, agent, sessionId), JSON.stringify(seen));
  const names = readdirSync(dir);
  if (names.length <= MAX_SESSIONS) return;
  const dated = names.map((name) => ({ name, mtime: mtimeOf(join(dir, name)) }));
  dated.sort((a, b) => b.mtime - a.mtime);
  // Best effort: the session's own file is saved already, and an entry that cannot go (a folder
  // someone put there) must not cost the notice this run is about to show.
  for (const { name } of dated.slice(MAX_SESSIONS)) unlinkQuietly(join(dir, name));
}

/**
 * Writes `file` in the private folder `dir` whole or not at all (temporary file, then rename):
 * two hooks of one session run at once, and neither may read the other's half-written file.
 */
function writePrivately(dir: string, file: string, text: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}

/** When the entry last changed; 0 when it is gone already. */
function mtimeOf(path: string): number {
  try {
    return lstatSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Gone already, or not ours to remove.
  }
}

/**
 * The parked `hook wait` that may wake a session: its id, in a file of its own beside the
 * session's marks (the Stop hooks run at once, so the marks' file would lose one of two writes).
 * A newer wait replaces it; a prompt (the session started a turn) removes it; any other waiter
 * stays silent.
 */
function waiterFile(dir: string, agent: string, sessionId: string): string {
  return `${sessionFile(dir, agent, sessionId)}.waiter`;
}

export async function setWaiter(
  dir: string,
  agent: string,
  sessionId: string,
  id: string,
): Promise<void> {
  writePrivately(dir, waiterFile(dir, agent, sessionId), id);
}

export async function currentWaiter(
  dir: string,
  agent: string,
  sessionId: string,
): Promise<string | undefined> {
  try {
    const text = readFileSync(waiterFile(dir, agent, sessionId), "utf8");
    return text.length <= 200 ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the session's waiter mark: any, or only `id`'s (a waiter leaving). */
export async function clearWaiter(
  dir: string,
  agent: string,
  sessionId: string,
  id?: string,
): Promise<void> {
  if (id !== undefined && (await currentWaiter(dir, agent, sessionId)) !== id) return;
  unlinkQuietly(waiterFile(dir, agent, sessionId));
}

/**
 * Where the session's Claude Code inbox (its socket and token, hosts/claude-inbox.ts) is kept,
 * beside its marks: in the user's private state, never in the root, which anyone of the team
 * can write and which must never hold a token.
 */
function inboxFile(dir: string, agent: string, sessionId: string): string {
  return `${sessionFile(dir, agent, sessionId)}.inbox`;
}

/** A socket path and a token: far less than this. */
const MAX_INBOX_BYTES = 1024;

/** Records the inbox the session's hook found in its environment (mode 0600). */
export function saveInbox(dir: string, agent: string, sessionId: string, inbox: ClaudeInbox): void {
  const file = inboxFile(dir, agent, sessionId);
  const text = JSON.stringify({ socket: inbox.socket, token: inbox.token });
  try {
    // Every prompt: most find it recorded.
    if (readPrivateTextSync(file, MAX_INBOX_BYTES) === text) return;
  } catch {
    // Not recorded yet, or not a file of ours: replaced.
  }
  writePrivately(dir, file, text);
}

/**
 * The session's recorded inbox; undefined when there is none, or when the file is not the
 * user's own private file (another user's, a link, readable or writable by others): a token
 * is only ever taken from a file this user wrote for this session.
 */
export function loadInbox(dir: string, agent: string, sessionId: string): ClaudeInbox | undefined {
  const file = inboxFile(dir, agent, sessionId);
  try {
    const text = readPrivateTextSync(file, MAX_INBOX_BYTES);
    const value = JSON.parse(text) as { socket?: unknown; token?: unknown };
    return inboxOf(value.socket, value.token);
  } catch {
    return undefined;
  }
}
