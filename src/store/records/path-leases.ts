import { oneLine } from "../../core/message.js";
import { identity } from "../../core/names.js";
import { HOLDER, storedCount, storedRecord } from "../shared/index.js";
import { MAX_PATTERN_LENGTH } from "./path-globs.js";

/*
 * A channel's path lease document as a backend stores it (the folder store: `CH/.leases.json`, a
 * name chat.py ignores; NATS: one KV key): its shape, and how it is written and read back. The
 * rules over it are the leases feature's (features/leases/path-leases.ts).
 */

/** One grant, as stored. */
export interface PathLease {
  token: number;
  pattern: string;
  holder: string;
  exclusive: boolean;
  /** Granted at, expires at: ms since the epoch. */
  at: number;
  expiresAt: number;
  ttlMs: number;
  reason?: string;
  forced?: string[];
  /** Not ours but a path lock of chat.py 0.7 (its lock id); token 0, never stored by us. */
  lock?: string;
  /** In a folder root, its chat.py lock record was written: from then on that record rules. */
  recorded?: true;
  /**
   * Granted together with others in one lock (chat.py's `lock CH a b`): the token of the first,
   * whose one lock record (`agent-chat-<group>`) covers them all; they end together.
   */
  group?: number;
  /**
   * Its holder's name exactly as given (`Bob.Smith`; `holder` is its key, `bob-smith`): written
   * as the lock record's owner, and compared as chat.py compares owners, exactly.
   */
  owner?: string;
}

/**
 * Whether a lease is the agent's (`holder` its key, `owner` its name as given): chat.py compares
 * owners exactly (`Bob` is not `bob`), so a lease that knows its owner's name is matched so; one
 * written before names were kept, by key.
 */
export function ownedBy(lease: PathLease, holder: string, owner: string): boolean {
  return lease.owner !== undefined ? lease.owner === owner : lease.holder === holder;
}

/** An owner's name as stored: chat.py's identity rule, and the key of the lease's holder. */
const OWNER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The id of the chat.py lock record a lease of ours is written as: its group's, else its own. */
export function recordId(lease: { token: number; group?: number }): string {
  return `agent-chat-${lease.group ?? lease.token}`;
}

/** A channel's path leases. `token` is the last one granted: the next grant gets one more. */
export interface PathLeaseDoc {
  token: number;
  leases: PathLease[];
}

/** The document as read, with what a swap compares (a file's text, a KV revision). */
export interface PathLeaseRecord {
  doc: PathLeaseDoc;
  version: string | number;
}

/** A channel holds at most this many path leases (expired ones are dropped first). */
export const MAX_PATH_LEASES = 1_000;
/** A lease's reason is cut to this many characters. */
export const MAX_REASON = 500;
export const PATH_LEASES_FILE = ".leases.json";

export function formatPathLeases(doc: PathLeaseDoc): string {
  return `${JSON.stringify(doc, null, 1)}\n`;
}

/**
 * The document as read from storage, which is untrusted: one that is not JSON is empty, a lease
 * with a bad field is dropped, and the counter never goes below a token still listed.
 */
export function parsePathLeases(text: string | undefined): PathLeaseDoc {
  let value: unknown;
  try {
    value = JSON.parse(text ?? "");
  } catch {
    return { token: 0, leases: [] };
  }
  const v = storedRecord(value);
  const raw = Array.isArray(v.leases) ? v.leases.slice(0, MAX_PATH_LEASES) : [];
  const leases = raw.map(parseOne).filter((l): l is PathLease => l !== undefined);
  return { token: Math.max(storedCount(v.token) ?? 0, ...leases.map((l) => l.token)), leases };
}

function parseOne(value: unknown): PathLease | undefined {
  const r = storedRecord(value);
  const token = storedCount(r.token);
  const at = storedCount(r.at);
  const expiresAt = storedCount(r.expiresAt);
  const ttlMs = storedCount(r.ttlMs);
  if (token === undefined || at === undefined || expiresAt === undefined || !ttlMs) return;
  if (typeof r.holder !== "string" || !HOLDER.test(r.holder)) return;
  if (typeof r.pattern !== "string" || typeof r.exclusive !== "boolean") return;
  // Written by anyone with access to the root: a pattern is matched by the guard, so it is
  // bounded as one given on the command line is (control characters, length).
  if (r.pattern.length > MAX_PATTERN_LENGTH || /[\u0000-\u001f]/.test(r.pattern)) return;
  const lease: PathLease = {
    token,
    pattern: r.pattern,
    holder: r.holder,
    exclusive: r.exclusive,
    at,
    expiresAt,
    ttlMs,
  };
  if (typeof r.reason === "string") lease.reason = oneLine(r.reason).slice(0, MAX_REASON);
  if (r.recorded === true) lease.recorded = true;
  // Untrusted: an owner whose key is not the holder's would let one agent pass for another.
  if (typeof r.owner === "string" && OWNER.test(r.owner) && identity(r.owner) === r.holder) {
    lease.owner = r.owner;
  }
  const group = storedCount(r.group);
  if (group !== undefined && group > 0 && group <= token) lease.group = group;
  if (Array.isArray(r.forced)) {
    lease.forced = r.forced.filter((f): f is string => typeof f === "string").slice(0, 20);
  }
  return lease;
}
