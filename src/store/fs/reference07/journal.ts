import { join } from "node:path";
import {
  createFileExclusive,
  ensureRealDir,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import { recordFolder } from "./files.js";
import {
  CLAIMS_DIR,
  formatClaim,
  formatTask,
  type ReferenceClaim,
  type ReferenceTask,
  sortedJson,
  TASKS_DIR,
  TRANSACTION_FILE,
} from "./records.js";

/** One claim file a lease change writes (`next`) or removes (`next` undefined). */
export interface ClaimChange {
  file: string;
  /** Its text before the change; undefined when it is new. */
  previous?: string;
  next?: ReferenceClaim;
}

/** A lease change: the task record before and after, its claim files, and its audit event. */
export interface LeaseChange {
  before: string;
  after: ReferenceTask;
  claims: ClaimChange[];
  event: string;
  details: Record<string, unknown>;
}

const b64 = (text: string | undefined) =>
  text === undefined ? null : Buffer.from(text, "utf8").toString("base64");

/**
 * Applies a lease change as chat.py 0.7 does, so that a crash at any point leaves what its own
 * recovery (`task recover-pending`) knows how to finish or undo: first the journal
 * `claims/.lease-transaction.json` (version 2, phase `prepared`, every file's bytes before and
 * after), then the task and claim files, phase `applied`, the audit message (which names the
 * transaction), phase `published`, and the journal removed. A failure before the audit message
 * puts every file back and removes the journal; while a journal is there, every lease change
 * (chat.py's and ours) is refused until someone recovers it.
 */
export async function applyLeaseChange(
  dir: string,
  change: LeaseChange,
  publish: (transactionId: string) => Promise<void>,
): Promise<void> {
  const claims = join(dir, CLAIMS_DIR);
  ensureRealDir(claims);
  const transactionId = globalThis.crypto.randomUUID().replaceAll("-", "");
  const journal = journalOf(change, transactionId);
  const writeJournal = (phase: string) =>
    replaceFile(claims, TRANSACTION_FILE, `${sortedJson({ ...journal, phase })}\n`);
  await writeJournal("prepared");
  // Only what this change wrote is put back: a claim that appeared meanwhile is someone's.
  const applied: ClaimChange[] = [];
  try {
    await replaceFile(
      recordFolder(dir, TASKS_DIR),
      `${change.after.id}.json`,
      formatTask(change.after),
    );
    for (const c of change.claims) {
      await writeClaim(claims, c);
      applied.push(c);
    }
    await writeJournal("applied");
    await publish(transactionId);
  } catch (err) {
    await undo(dir, change.after.id, change.before, applied);
    throw err;
  }
  await writeJournal("published");
  removeFileEntry(join(claims, TRANSACTION_FILE));
}

function journalOf(change: LeaseChange, transactionId: string): Record<string, unknown> {
  return {
    version: 2,
    transaction_id: transactionId,
    task_id: change.after.id,
    task_file: `${TASKS_DIR}/${change.after.id}.json`,
    task_before: b64(change.before),
    task_after: b64(formatTask(change.after)),
    claim_changes: change.claims.map((c) => ({
      file: c.file,
      previous: b64(c.previous),
      next: b64(c.next && formatClaim(c.next)),
    })),
    event: change.event,
    details: change.details,
  };
}

/** A new claim is created exclusively: one that appeared meanwhile is never overwritten. */
async function writeClaim(claims: string, c: ClaimChange): Promise<void> {
  if (c.next === undefined) removeFileEntry(join(claims, c.file));
  else if (c.previous === undefined) await createFileExclusive(claims, c.file, formatClaim(c.next));
  else await replaceFile(claims, c.file, formatClaim(c.next));
}

async function undo(
  dir: string,
  id: string,
  before: string,
  applied: ClaimChange[],
): Promise<void> {
  const claims = join(dir, CLAIMS_DIR);
  await replaceFile(recordFolder(dir, TASKS_DIR), `${id}.json`, before);
  for (const c of applied.reverse()) {
    if (c.previous === undefined) {
      if (c.next !== undefined) removeFileEntry(join(claims, c.file));
    } else await replaceFile(claims, c.file, c.previous);
  }
  removeFileEntry(join(claims, TRANSACTION_FILE));
}
