import { AgentChatError } from "../../core/errors.js";
import { oneLine } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import {
  DEFAULT_TASK_TTL_MS,
  MAX_TASK_TTL_MS,
  REFERENCE_TIME_END_MS,
  TASK_TTL_KEY,
  type TaskInfo,
  type TaskState,
} from "../types.js";
import { pastGrace } from "./skew.js";
import { storedCount, storedJson, storedRecord } from "./stored.js";

/**
 * Task markers: `task-<id>.md` while open, `task-<id>.CLAIMED-<holder>.md` once claimed, as the
 * reference names them. Neither starts with digits, so neither is ever taken for a message.
 */
export const TASK_FILE = /^task-([A-Za-z0-9][A-Za-z0-9_-]*)(?:\.CLAIMED-([a-z0-9-]+))?\.md$/;

export interface TaskFields {
  id: string;
  from: string;
  title: string;
  ts: string;
  body: string;
}

export function formatTask(task: TaskFields): string {
  return (
    `---\nid: ${task.id}\nfrom: ${oneLine(task.from)}\nts: ${task.ts}\n` +
    `title: ${oneLine(task.title)}\n---\n${task.body.trimEnd()}\n`
  );
}

/** A task's title: its `title:` field, or for a marker written by hand, its first line. */
export function parseTaskFile(text: string): { title: string } {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trim() === "---") {
    for (const line of lines.slice(1)) {
      if (line.trim() === "---") break;
      const colon = line.indexOf(":");
      if (colon > 0 && line.slice(0, colon).trim() === "title") {
        return { title: line.slice(colon + 1).trim() };
      }
    }
  }
  const first = lines.find((l) => l.trim() !== "" && l.trim() !== "---") ?? "";
  return { title: oneLine(first.replace(/^#+\s*/, "")).slice(0, 200) };
}

/**
 * A task marker as a backend keeps it: the SPEC marker's text, its holder once claimed (the
 * marker's name on the folder store), the version a swap compares (a file name on the folder
 * store, a KV revision on NATS), and the lease kept beside it.
 */
export interface TaskRecord {
  id: string;
  text: string;
  holder?: string;
  version: string | number;
  lease?: Lease;
  /** Why the stored lease could not be (fully) read; the core reports it once. */
  problem?: string;
}

/** One grant of a task, kept in the lease's history. */
export interface Grant {
  token: number;
  holder: string;
  /** When it was granted, ms since the epoch. */
  at: number;
}

/**
 * A task's lease state, as every backend stores it beside the marker (JSON). The token is that
 * of the last grant; it survives release, expiry and done, so the next grant gets one more.
 */
export interface Lease {
  token: number;
  /** The holder of grant `token` while it lasts (cleared by release and done). */
  holder?: string;
  expiresAt?: number;
  /** The lease's length, renewed by the holder's activity for as long again. */
  ttlMs?: number;
  done?: { by: string; at: number; note?: string };
  /** The newest grants, oldest first (at most {@link MAX_HISTORY}). */
  history: Grant[];
}

export const MAX_HISTORY = 20;

/** Where the folder store (and an export) keeps a task's lease: a dot-file chat.py ignores. */
export function leaseFileName(id: string): string {
  return `.task-${id}.lease`;
}

/** A lease as stored: JSON in one key order, so that an export round-trips byte for byte. */
export function formatLease(lease: Lease): string {
  const { token, holder, expiresAt, ttlMs, done, history } = lease;
  return `${JSON.stringify({ token, holder, expiresAt, ttlMs, done, history })}\n`;
}
/** What a holder looks like in a marker's name and a lease (an identity). */
export const HOLDER = /^[a-z0-9-]{1,100}$/;

function holderName(value: unknown): string | undefined {
  return typeof value === "string" && HOLDER.test(value) ? value : undefined;
}

/**
 * A lease as read from storage, which is untrusted (a planted or corrupt file). A bad token
 * leaves no lease; a good token with bad fields keeps the token (so tokens never go down) and
 * drops the grant: such a task is claimed without a lease, or claimable once released.
 */
export function parseLease(text: string): { lease?: Lease; problem?: string } {
  const parsed = storedJson(text);
  if (!parsed) return { problem: "its lease is not JSON; ignored" };
  const { value } = parsed;
  const v = storedRecord(value);
  const token = storedCount(v.token);
  if (token === undefined) return { problem: "its lease has no valid token; ignored" };
  const lease: Lease = { token, history: parseHistory(v.history) };
  const grantOk = parseGrant(v, lease);
  const doneOk = v.done === undefined || parseDone(storedRecord(v.done), lease);
  return grantOk && doneOk
    ? { lease }
    : { lease, problem: "its lease has invalid fields; only its token is kept" };
}

/** The live grant (holder and expiry), kept only when both are sound; false when one is bad. */
function parseGrant(v: Record<string, unknown>, lease: Lease): boolean {
  const holder = holderName(v.holder);
  const expiresAt = storedCount(v.expiresAt);
  if (holder && expiresAt !== undefined) {
    lease.holder = holder;
    lease.expiresAt = expiresAt;
    const ttlMs = storedCount(v.ttlMs);
    if (ttlMs !== undefined && ttlMs > 0) lease.ttlMs = ttlMs;
  }
  return (
    (v.holder === undefined || holder !== undefined) &&
    (v.expiresAt === undefined || expiresAt !== undefined)
  );
}

function parseDone(d: Record<string, unknown>, lease: Lease): boolean {
  const by = holderName(d.by);
  const at = storedCount(d.at);
  if (!by || at === undefined) return false;
  lease.done = { by, at };
  if (typeof d.note === "string") lease.done.note = oneLine(d.note).slice(0, MAX_NOTE);
  return true;
}

/** The sound grants of a stored history, at most {@link MAX_HISTORY}; the others are dropped. */
function parseHistory(value: unknown): Grant[] {
  if (!Array.isArray(value)) return [];
  const out: Grant[] = [];
  for (const g of value.slice(-MAX_HISTORY)) {
    const r = storedRecord(g);
    const token = storedCount(r.token);
    const holder = holderName(r.holder);
    const at = storedCount(r.at);
    if (token !== undefined && holder && at !== undefined) out.push({ token, holder, at });
  }
  return out;
}

export const MAX_NOTE = 1_000;

/** The SPEC file name of a task marker in a given state. */
export function taskFileName(id: string, holder?: string): string {
  return holder === undefined ? `task-${id}.md` : `task-${id}.CLAIMED-${holder}.md`;
}

/** Where a task stands at `now`, by its marker and its lease. */
export interface LeaseStatus {
  state: TaskState;
  holder?: string;
  /** The token of the live grant (claimed) or of the last one. */
  token?: number;
  expiresAt?: number;
  /** Claimed with a lease (not a chat.py claim). */
  leased: boolean;
}

export function leaseStatus(record: TaskRecord, now: number): LeaseStatus {
  const { holder, lease } = record;
  const last = lease && lease.token > 0 ? { token: lease.token } : {};
  if (holder === undefined) return { state: "open", leased: false, ...last };
  if (lease?.done && lease.done.by === holder) {
    return { state: "done", holder, leased: false, ...last };
  }
  // The lease describes the marker only when it names the marker's holder: a marker claimed by
  // chat.py, or renamed by hand, has no lease of ours, and never expires by our rule.
  if (lease?.holder === holder && lease.expiresAt !== undefined) {
    // Claimed until its end is a skew grace behind: another host's clock may run ahead.
    const state = pastGrace(lease.expiresAt, now) ? "expired" : "claimed";
    return { state, holder, token: lease.token, expiresAt: lease.expiresAt, leased: true };
  }
  return { state: "claimed", holder, leased: false };
}

export function taskInfo(channel: string, record: TaskRecord, now: number): TaskInfo {
  const { id } = record;
  const title = parseTaskFile(record.text).title;
  const file = taskFileName(id, record.holder);
  const status = leaseStatus(record, now);
  const info: TaskInfo = { id, channel, state: status.state, title, file };
  if (status.holder !== undefined) info.holder = status.holder;
  if (status.token !== undefined) info.token = status.token;
  if (status.expiresAt !== undefined) info.expiresAt = new Date(status.expiresAt).toISOString();
  const done = record.lease?.done;
  if (status.state === "done" && done) {
    info.doneAt = new Date(done.at).toISOString();
    if (done.note !== undefined) info.note = done.note;
  }
  return info;
}

/** The id a new task gets: one more than the largest numeric id, and at least `floor`. */
export function nextTaskId(existing: readonly TaskRecord[], floor = 1): string {
  const numbers = existing.map((t) => Number(t.id)).filter(Number.isSafeInteger);
  return String(Math.max(floor, Math.max(0, ...numbers) + 1));
}

/** How often a holder's leases are looked for without an index, and renewed while parked. */
export const LEASE_LOOK_MS = 30_000;

/**
 * The channel's default lease: `task_ttl` seconds in `_meta.json` when it is a sane number
 * (the file is shared input: anything else is ignored), else 30 minutes.
 */
export function channelTtl(meta: ChannelMeta): number {
  const seconds = meta[TASK_TTL_KEY];
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return DEFAULT_TASK_TTL_MS;
  const ms = Math.round(seconds * 1000);
  return ms > 0 && ms <= MAX_TASK_TTL_MS ? ms : DEFAULT_TASK_TTL_MS;
}

/**
 * `INVALID_ARGUMENT` unless `ttlMs` is a lease length a task or path lease may be given: one
 * that ends while chat.py can still write its end. Our own flags stop at 7 days
 * (`MAX_TASK_TTL_MS`); chat.py's `--lease-seconds` does not, and a lease both honour takes either.
 */
export function checkTtl(ttlMs: number | undefined): void {
  if (ttlMs === undefined) return;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0 || Date.now() + ttlMs >= REFERENCE_TIME_END_MS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `a lease's TTL must be a whole number of ms above 0 that ends before the year 10000 (got ${ttlMs})`,
    );
  }
}
