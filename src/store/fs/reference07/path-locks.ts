import { join } from "node:path";
import { identity } from "../../../core/names.js";
import {
  ensureRealDir,
  entryKind,
  listRealDir,
  readRootTextSync,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import { lockedPath, type PathLease, recordId } from "../../records/index.js";
import { type LockRecord, leasePattern } from "./lock-records.js";
import { sortedJson } from "./records.js";

export type { LockRecord };

/**
 * chat.py 0.7's path locks, `CH/locks/<lock_id>.json`: one record per lock, each naming its
 * owner, its channel-relative paths (a folder covers what is under it; `.` covers everything)
 * and when it expires. We read them as exclusive leases of their owners, and write each live
 * exclusive lease of ours as one such record (`agent-chat-<token>`) so that chat.py's `lock` and
 * `check` see it. The record's ten fields are exactly chat.py's: it refuses a record with any
 * other, and then every lock of the channel with it.
 */
export const LOCKS_DIR = "locks";
const MIRROR_PREFIX = "agent-chat-";
const MAX_RECORD_BYTES = 64 * 1024;
const MAX_RECORDS = 1_000;
/** chat.py's identities and lock ids. */
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The records of a channel folder that parse (files in a root are untrusted: others are skipped). */
function readRecords(dir: string): LockRecord[] {
  const locks = join(dir, LOCKS_DIR);
  if (entryKind(locks) !== "dir") return [];
  const out: LockRecord[] = [];
  for (const entry of listRealDir(locks)) {
    if (out.length >= MAX_RECORDS) break;
    if (entry.kind !== "file" || !entry.name.endsWith(".json") || /^[._]/.test(entry.name)) {
      continue;
    }
    const record = parseRecord(join(locks, entry.name));
    if (record && `${record.lock_id}.json` === entry.name) out.push(record);
  }
  return out;
}

/** The record at `path` when it parses as chat.py's (else undefined: a root file is untrusted). */
export function parseRecord(path: string): LockRecord | undefined {
  try {
    const value = JSON.parse(readRootTextSync(path, MAX_RECORD_BYTES));
    const expires = value.expires_at ?? value.lease_expires_at;
    if (typeof value.owner !== "string" || !ID.test(value.owner)) return;
    if (typeof value.lock_id !== "string" || !ID.test(value.lock_id)) return;
    if (!Array.isArray(value.paths) || Number.isNaN(Date.parse(expires))) return;
    const paths = value.paths.filter(
      (p: { normalized_path?: unknown }) => typeof p?.normalized_path === "string",
    );
    if (paths.length === 0) return;
    return { ...value, expires_at: expires, paths } as LockRecord;
  } catch {
    return undefined;
  }
}

/** A record we keep for one of our leases (and chat.py has not taken over by `recover`). */
export function isMirror(record: LockRecord): boolean {
  return record.lock_id.startsWith(MIRROR_PREFIX) && record.recovery_reason === null;
}

/**
 * chat.py's locks of the channel folder `dir`, as exclusive leases of their owners (token 0,
 * `lock` their id): each path a literal pattern, `.` every path (`**`). Expired ones are kept:
 * the lease rules let them go after the skew grace, as our own. A record of ours counts as
 * chat.py's unless one of our leases, by its id in `leased`, is written as it: one whose lease
 * is gone (a release that `recover-pending` put back) is a lock chat.py sees, so ours honours it.
 */
export function referenceLocks(dir: string, leased: ReadonlySet<string> = new Set()): PathLease[] {
  const out: PathLease[] = [];
  for (const record of readRecords(dir)) {
    if (isMirror(record) && leased.has(record.lock_id)) continue;
    const at = Date.parse(record.locked_at);
    const expiresAt = Date.parse(record.expires_at);
    for (const path of record.paths) {
      out.push({
        token: 0,
        pattern: leasePattern(path.normalized_path),
        holder: identity(record.owner),
        owner: record.owner,
        exclusive: true,
        at: Number.isNaN(at) ? expiresAt : at,
        expiresAt,
        ttlMs: Math.max(1, expiresAt - (Number.isNaN(at) ? expiresAt : at)),
        lock: record.lock_id,
        ...(record.recovery_reason ? { reason: record.recovery_reason } : {}),
      });
    }
  }
  return out;
}

/**
 * Our leases less those whose record chat.py removed (`unlock`) or took over (`recover`): its
 * `locks/` is the one truth for a lock it can see, so such a lease has ended (chat.py posted the
 * message that says so), and is never written back to its old holder. A record whose expiry was
 * moved earlier (edited, as chat.py's own tests end a lock) ends the lease then too; a record is
 * untrusted input, so it may only end a lease sooner, never lengthen it or name another holder.
 */
export function withoutEndedByReference(dir: string, leases: PathLease[]): PathLease[] {
  if (!leases.some((l) => l.recorded)) return leases;
  const mirrors = new Map(
    readRecords(dir)
      .filter(isMirror)
      .map((r) => [r.lock_id, Date.parse(r.expires_at)]),
  );
  const out: PathLease[] = [];
  for (const l of leases) {
    if (!l.recorded) {
      out.push(l);
      continue;
    }
    const ends = mirrors.get(recordId(l));
    if (ends === undefined) continue;
    out.push(ends < l.expiresAt ? { ...l, expiresAt: Math.max(0, ends) } : l);
  }
  return out;
}

/** The leases as stored beside their records: each exclusive one says it has its record. */
export function markRecorded(leases: PathLease[]): PathLease[] {
  return leases.map((l) => (l.exclusive ? { ...l, recorded: true } : l));
}

/** A change of one record of ours, as {@link syncReferenceLocks} asks the store to make it. */
export interface RecordChange {
  event: "path.locked" | "path.lock.unlocked";
  operation: "lock" | "unlock";
  /** The record the audit message describes: the one written, or the one removed. */
  record: LockRecord;
  before: string | undefined;
  after: string | undefined;
  actor: string;
}

/**
 * Makes `locks/` hold one record per exclusive lease of `leases`, live or expired (an expired
 * lock stays, as chat.py's do, until it is released or recovered), and none for a lease of
 * `previous` that was released; chat.py's own records, and a record of ours whose lease is not in
 * `previous` (one put back by `recover-pending`, which is then the lock's truth), are left alone.
 * Runs under chat.py's path-lock mutex. A record it creates or removes is changed by `change`
 * when given (the store's journaled change, whose audit message it posts once the channel lock
 * is let go); one whose end moved is rewritten, as chat.py has no message for that.
 */
export async function syncReferenceLocks(
  dir: string,
  channel: string,
  previous: readonly PathLease[],
  leases: readonly PathLease[],
  now: number,
  change?: (c: RecordChange) => Promise<void>,
): Promise<void> {
  const wanted = byRecord(leases);
  const had = byRecord(previous);
  const present = new Map(
    readRecords(dir)
      .filter(isMirror)
      .map((r) => [r.lock_id, r]),
  );
  if (wanted.size === 0 && present.size === 0) return;
  const locks = join(dir, LOCKS_DIR);
  ensureRealDir(locks);
  const write = async (c: RecordChange) => {
    if (change) return change(c);
    const file = `${c.record.lock_id}.json`;
    if (c.after === undefined) removeFileEntry(join(locks, file));
    else await replaceFile(locks, file, c.after);
  };
  for (const [id, record] of present) {
    if (wanted.has(id) || !had.has(id)) continue;
    const before = readRootTextSync(join(locks, `${id}.json`), MAX_RECORD_BYTES);
    const c = { record, before, after: undefined, actor: record.owner };
    await write({ ...c, event: "path.lock.unlocked", operation: "unlock" });
  }
  for (const [id, group] of wanted) {
    const old = present.get(id);
    const next = await mirrorRecord(id, channel, group, old, now);
    if (old && sameLock(old, next)) continue;
    const after = formatRecord(next);
    if (old) await replaceFile(locks, `${id}.json`, after);
    else {
      const c = { record: next, before: undefined, after, actor: next.owner };
      await write({ ...c, event: "path.locked", operation: "lock" });
    }
  }
}

/** The exclusive leases by the id of the record each is written as. */
function byRecord(leases: readonly PathLease[]): Map<string, PathLease[]> {
  const wanted = new Map<string, PathLease[]>();
  for (const l of leases) {
    if (!l.exclusive) continue;
    const id = recordId(l);
    wanted.set(id, [...(wanted.get(id) ?? []), l]);
  }
  return wanted;
}

/** Whether a record already says what `next` would (its owner, paths and end). */
function sameLock(old: LockRecord, next: LockRecord): boolean {
  return (
    Date.parse(old.expires_at) === Date.parse(next.expires_at) &&
    old.owner === next.owner &&
    JSON.stringify(old.paths) === JSON.stringify(next.paths)
  );
}

/** The one record of a lock of ours: its leases' paths, holder, and the latest end among them. */
async function mirrorRecord(
  id: string,
  channel: string,
  group: PathLease[],
  old: LockRecord | undefined,
  now: number,
): Promise<LockRecord> {
  const first = group.reduce((a, b) => (b.token < a.token ? b : a));
  const paths = [];
  for (const l of [...group].sort((a, b) => a.token - b.token))
    paths.push(await lockedPath(l.pattern));
  return {
    channel,
    expires_at: iso(Math.max(...group.map((l) => l.expiresAt))),
    lock_id: id,
    locked_at: old?.locked_at ?? iso(first.at),
    owner: first.owner ?? first.holder,
    paths,
    previous_expires_at: null,
    previous_owner: null,
    recovery_reason: null,
    updated_at: iso(now),
  };
}

/** chat.py's offset form (`+00:00`, microseconds), which every Python it supports parses. */
export function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000+00:00");
}

/** As chat.py writes one: keys sorted, two spaces, a final newline. */
export function formatRecord(record: LockRecord): string {
  return `${sortedJson(record)}\n`;
}
