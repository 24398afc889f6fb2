import { join } from "node:path";
import { referenceError } from "../../../core/errors.js";
import { identity } from "../../../core/names.js";
import {
  entryKind,
  readRootTextSync,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import { pastGrace } from "../../shared/index.js";
import type { PathLeaseInfo, PostInput } from "../../types.js";
import { recordFolder } from "./files.js";
import { encodeBytes } from "./journals.js";
import { leasePattern } from "./lock-records.js";
import { formatRecord, iso, LOCKS_DIR, type LockRecord, parseRecord } from "./path-locks.js";
import { sortedJson } from "./records.js";
import { isLeaseOwner, ownerName } from "./update.js";

/**
 * chat.py 0.7's own path locks changed as chat.py changes them (`unlock`, `recover`), for a
 * lock it made: the journal `locks/.path-lock-transaction.json` first (version 1, phase
 * `prepared`, the record's bytes before and after), then the record, phase `applied`, the audit
 * message (`path.lock.unlocked`, `path.lock.recovered`, naming the transaction), phase
 * `published`, and the journal removed. A failure before the audit message puts the record back.
 * While a journal is there (a change of chat.py's or ours died half-way), every change and check
 * is refused until chat.py's `recover-pending` settles it. The caller holds chat.py's mutex.
 */
export const PATH_LOCK_JOURNAL = ".path-lock-transaction.json";
const MAX_RECORD_BYTES = 64 * 1024;

/** What a change needs of the store it runs in. */
export interface LockHost {
  dir: string;
  channel: string;
  now: () => number;
  /** Posts the audit message (without the activity hooks, which would take the mutex held). */
  post: (input: PostInput) => Promise<unknown>;
  /** The live locks and leases of others than `owner` over the paths of `record`, by name. */
  conflicts: (record: LockRecord, owner: string) => Promise<string[]>;
}

export type LockChange =
  | { op: "unlock"; agent: string }
  | { op: "recover"; agent: string; reason: string; ttlMs: number };

/** Whether a path-lock change died half-way in the channel folder `dir`. */
export function pathLockJournalPending(dir: string): boolean {
  return entryKind(join(recordFolder(dir, LOCKS_DIR), PATH_LOCK_JOURNAL)) !== undefined;
}

export function refuseWhilePending(dir: string, channel: string): void {
  if (!pathLockJournalPending(dir)) return;
  throw referenceError(
    "TASK_INCONSISTENT",
    "PATH_LOCK_TRANSACTION_PENDING",
    `a path-lock change in ${channel} died half-way; recover it first (chat.py: recover-pending ${channel} --as NAME)`,
  );
}

/** Unlocks or recovers chat.py's lock `lockId`; answers with the record as it now is. */
export async function changeReferenceLock(
  host: LockHost,
  lockId: string,
  change: LockChange,
): Promise<{ before: LockRecord; after: LockRecord }> {
  refuseWhilePending(host.dir, host.channel);
  const { text, record } = readLock(host.dir, lockId);
  if (change.op === "unlock") {
    if (!isLeaseOwner(record.owner, change.agent)) {
      throw referenceError(
        "NOT_HOLDER",
        "PATH_LOCK_OWNER_MISMATCH",
        `lock ${lockId} belongs to ${record.owner}`,
      );
    }
    await journaled(host, {
      event: "path.lock.unlocked",
      record,
      before: text,
      actor: change.agent,
    });
    return { before: record, after: record };
  }
  const after = await recovered(host, record, change);
  await journaled(host, {
    event: "path.lock.recovered",
    record: after,
    before: text,
    after: formatRecord(after),
    actor: change.agent,
    previous: record,
  });
  return { before: record, after };
}

/**
 * The record chat.py made; or one we keep for a lease of ours, which is then taken over (or
 * removed) as chat.py takes over any record (id kept), so that chat.py sees one lock change
 * hands, and the lease ends with it (the record is its truth). The CLI releases one of ours with
 * a lease as a lease; it comes here for a record whose lease is gone (a release that
 * `recover-pending` put back), which is then a lock as chat.py's are.
 */
function readLock(dir: string, lockId: string): { text: string; record: LockRecord } {
  const path = join(dir, LOCKS_DIR, `${lockId}.json`);
  const record = /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(lockId) ? parseRecord(path) : undefined;
  if (!record || record.lock_id !== lockId) {
    throw referenceError(
      "NOT_FOUND",
      "PATH_LOCK_NOT_FOUND",
      `lock record does not exist: ${lockId}`,
    );
  }
  return { text: readRootTextSync(path, MAX_RECORD_BYTES), record };
}

/** The record a recovery writes: its paths and id kept, the new owner's lease, the reason. */
async function recovered(
  host: LockHost,
  previous: LockRecord,
  change: Extract<LockChange, { op: "recover" }>,
): Promise<LockRecord> {
  const now = host.now();
  // Ours take a lease only past the skew grace (docs/leases.md); chat.py's own at its end.
  if (!pastGrace(Date.parse(previous.expires_at), now)) {
    throw referenceError(
      "CLAIM_LOST",
      "PATH_LOCK_NOT_STALE",
      `lock ${previous.lock_id} of ${previous.owner} is live until ${previous.expires_at}`,
    );
  }
  const owner = ownerName(change.agent);
  const conflicts = await host.conflicts(previous, owner);
  if (conflicts.length > 0) {
    throw referenceError(
      "CLAIM_LOST",
      "PATH_LOCK_CONFLICT",
      `cannot recover ${previous.lock_id}: ${conflicts.join("; ")}`,
    );
  }
  return {
    ...previous,
    owner,
    locked_at: iso(now),
    updated_at: iso(now),
    expires_at: iso(now + change.ttlMs),
    previous_owner: previous.owner,
    previous_expires_at: previous.expires_at,
    recovery_reason: change.reason,
  };
}

export interface Journaled {
  event: string;
  /** The journal's `operation` (`lock`, `unlock`, `recover`); else told by the event. */
  operation?: string;
  /** The record the audit message describes: the one removed, or the one written. */
  record: LockRecord;
  /** The record's text before; undefined when the change creates it. */
  before: string | undefined;
  /** The record's next text; undefined when the change removes it. */
  after?: string;
  actor: string;
  previous?: LockRecord;
}

async function journaled(host: LockHost, j: Journaled): Promise<void> {
  await publishChange(host, await applyChange(host.dir, j));
}

/** A change of a lock record made and journaled (phase `applied`), its audit message not yet posted. */
export interface AppliedChange {
  j: Journaled;
  transactionId: string;
  write: (phase: string) => Promise<void>;
}

/**
 * The first half of a journaled change: the journal (phase `prepared`), the record changed, the
 * journal at `applied`. A failure in between puts the record back and removes the journal. The
 * caller holds chat.py's mutex, and {@link publishChange} must follow under it.
 */
export async function applyChange(dir: string, j: Journaled): Promise<AppliedChange> {
  const locks = join(dir, LOCKS_DIR);
  const name = `${j.record.lock_id}.json`;
  const transaction = {
    version: 1,
    transaction_id: globalThis.crypto.randomUUID().replaceAll("-", ""),
    operation: j.operation ?? (j.event === "path.lock.unlocked" ? "unlock" : "recover"),
    event: j.event,
    target: name,
    before: encodeBytes(j.before),
    after: encodeBytes(j.after),
    actor: j.actor,
  };
  const write = (p: string) =>
    replaceFile(locks, PATH_LOCK_JOURNAL, `${sortedJson({ ...transaction, phase: p })}\n`);
  await write("prepared");
  try {
    if (j.after === undefined) removeFileEntry(join(locks, name));
    else await replaceFile(locks, name, j.after);
    await write("applied");
  } catch (err) {
    await putBack(locks, name, j.before);
    throw err;
  }
  return { j, transactionId: transaction.transaction_id, write };
}

/**
 * The second half: the audit message naming the transaction, phase `published`, the journal
 * removed. Should the message not get out, the record is put back (as chat.py does).
 */
export async function publishChange(host: LockHost, change: AppliedChange): Promise<void> {
  const locks = join(host.dir, LOCKS_DIR);
  try {
    await host.post(auditPost(host.channel, change.j, change.transactionId));
  } catch (err) {
    await putBack(locks, `${change.j.record.lock_id}.json`, change.j.before);
    throw err;
  }
  await change.write("published");
  removeFileEntry(join(locks, PATH_LOCK_JOURNAL));
}

/** The record as it was before a change that did not get through, and the journal gone. */
async function putBack(locks: string, name: string, before: string | undefined): Promise<void> {
  if (before === undefined) removeFileEntry(join(locks, name));
  else await replaceFile(locks, name, before);
  removeFileEntry(join(locks, PATH_LOCK_JOURNAL));
}

/** The `status: <event>` message chat.py posts for a change, with its JSON body. */
function auditPost(channel: string, j: Journaled, transactionId: string): PostInput {
  const r = j.record;
  const body: Record<string, unknown> = {
    event: j.event,
    lock_id: r.lock_id,
    channel: r.channel || channel,
    owner: r.owner,
    paths: r.paths,
    expires_at: r.expires_at,
    lease_expires_at: r.expires_at,
    updated_at: r.updated_at,
    transaction_id: transactionId,
  };
  if (j.previous) {
    body.previous_owner = j.previous.owner;
    body.previous_expires_at = j.previous.expires_at;
    body.previous_lease_expires_at = j.previous.expires_at;
    body.recovery_reason = r.recovery_reason;
  }
  return {
    from: j.actor,
    to: "all",
    title: `${j.event} ${r.lock_id}`,
    status: j.event,
    body: sortedJson(body),
  };
}

/** A chat.py lock as the store lists it: an exclusive lease of its owner on its first path. */
export function lockInfo(
  channel: string,
  record: LockRecord,
  state: PathLeaseInfo["state"],
): PathLeaseInfo {
  const path = record.paths[0]?.normalized_path ?? ".";
  return {
    token: 0,
    channel,
    pattern: leasePattern(path),
    holder: identity(record.owner),
    owner: record.owner,
    exclusive: true,
    state,
    grantedAt: new Date(Date.parse(record.locked_at)).toISOString(),
    expiresAt: new Date(Date.parse(record.expires_at)).toISOString(),
    lock: record.lock_id,
    ...(record.recovery_reason ? { reason: record.recovery_reason } : {}),
  };
}
