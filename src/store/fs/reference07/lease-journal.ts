import { join } from "node:path";
import { referenceError } from "../../../core/errors.js";
import {
  createFileExclusive,
  ensureRealDir,
  entryKind,
  readRootTextSync,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import { recordFolder } from "./files.js";
import { decodeBytes, encodeBytes, published } from "./journals.js";
import {
  CLAIMS_DIR,
  formatClaim,
  formatTask,
  REFERENCE_ID,
  RecordProblem,
  type ReferenceClaim,
  type ReferenceTask,
  sortedJson,
  TASKS_DIR,
  validateClaim,
  validateTask,
} from "./records.js";

/**
 * chat.py 0.7's lease journal, `claims/.lease-transaction.json`: written before a lease change
 * touches a file (every file's bytes before and after), so that a crash at any point leaves what
 * `task recover-pending` knows how to finish or undo. Read back, it is untrusted like every file
 * of the root: each path it names must be the task's own record or one of its claim files, and
 * every byte it would put back must be a record that validates and agrees with the rest, else
 * nothing is touched.
 */
const TRANSACTION_FILE = ".lease-transaction.json";
const MAX_JOURNAL_BYTES = 1024 * 1024;
const MAX_CLAIM_BYTES = 256 * 1024;

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

/** A lease change read back from the journal, and what recovering it is to do. */
export interface PendingChange {
  transactionId: string | undefined;
  taskId: string;
  event: string;
  /** The task record's text before the change, and its record after. */
  before: string;
  after: ReferenceTask;
  claims: ClaimChange[];
  /** Whether to undo the change (its message was never posted) or only clean its journal up. */
  resolution: "rollback" | "published";
}

function invalid(message: string): never {
  throw referenceError("TASK_INCONSISTENT", "LEASE_TRANSACTION_INVALID", message);
}

/** Whether a lease change of chat.py (or ours) died half-way and awaits its recovery. */
export function transactionPending(dir: string): boolean {
  return entryKind(join(recordFolder(dir, CLAIMS_DIR), TRANSACTION_FILE)) !== undefined;
}

/** Ends a change (done, undone or recovered): lease changes are allowed again. */
export function removeJournal(dir: string): void {
  removeFileEntry(join(dir, CLAIMS_DIR, TRANSACTION_FILE));
}

/**
 * Applies a lease change as chat.py 0.7 does: first the journal (version 2, phase `prepared`),
 * then the task and claim files, phase `applied`, the audit message (which names the
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
    await putBack(dir, change.after.id, change.before, applied);
    removeJournal(dir);
    throw err;
  }
  await writeJournal("published");
  removeJournal(dir);
}

function journalOf(change: LeaseChange, transactionId: string): Record<string, unknown> {
  return {
    version: 2,
    transaction_id: transactionId,
    task_id: change.after.id,
    task_file: `${TASKS_DIR}/${change.after.id}.json`,
    task_before: encodeBytes(change.before),
    task_after: encodeBytes(formatTask(change.after)),
    claim_changes: change.claims.map((c) => ({
      file: c.file,
      previous: encodeBytes(c.previous),
      next: encodeBytes(c.next && formatClaim(c.next)),
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

/** Puts the task record and the claim files of `claims` back as they were before a change. */
async function putBack(
  dir: string,
  taskId: string,
  before: string,
  claims: ClaimChange[],
): Promise<void> {
  const folder = recordFolder(dir, CLAIMS_DIR);
  await replaceFile(recordFolder(dir, TASKS_DIR), `${taskId}.json`, before);
  for (const c of [...claims].reverse()) {
    if (c.previous !== undefined) await replaceFile(folder, c.file, c.previous);
    else if (c.next !== undefined) removeFileEntry(join(folder, c.file));
  }
}

/** A journal payload: the bytes of a file, or undefined for no file. */
function bytes(value: unknown, what: string): string | undefined {
  return decodeBytes(value, what, invalid);
}

/** A record the journal would put back, validated; a record's own problem keeps its code. */
function parsed<T>(text: string, what: string, validate: (v: unknown) => T): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return invalid(`${what} is not valid JSON`);
  }
  try {
    return validate(value);
  } catch (err) {
    if (!(err instanceof RecordProblem)) throw err;
    throw referenceError(
      "TASK_INCONSISTENT",
      err.reference,
      `${err.detail} (the journal's ${what})`,
    );
  }
}

function readJournal(dir: string): Record<string, unknown> {
  const path = join(recordFolder(dir, CLAIMS_DIR), TRANSACTION_FILE);
  if (entryKind(path) === undefined) {
    throw referenceError(
      "NOT_FOUND",
      "LEASE_TRANSACTION_NOT_FOUND",
      "no pending lease transaction exists",
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readRootTextSync(path, MAX_JOURNAL_BYTES));
  } catch (err) {
    invalid(`could not read the journal (${(err as Error).message})`);
  }
  const j = raw as Record<string, unknown>;
  if (j === null || typeof j !== "object" || (j.version !== 1 && j.version !== 2)) {
    invalid("the journal has an unsupported shape");
  }
  for (const field of ["task_file", "task_before", "claim_changes", "event"]) {
    if (!(field in j)) invalid(`the journal is missing ${field}`);
  }
  if (j.version === 2 && (typeof j.transaction_id !== "string" || j.transaction_id === "")) {
    invalid("the journal is missing transaction_id");
  }
  if (!Array.isArray(j.claim_changes)) invalid("claim_changes must be an array");
  return j;
}

/** The task's record before and after, each checked to be this task's. */
function taskStates(j: Record<string, unknown>, channel: string) {
  const file = typeof j.task_file === "string" ? j.task_file.replaceAll("\\", "/") : "";
  const m = /^tasks\/([^/]+)\.json$/.exec(file);
  const id = m?.[1];
  if (!id || !REFERENCE_ID.test(id) || id !== j.task_id) {
    invalid(`task_file ${JSON.stringify(j.task_file)} is not tasks/<task_id>.json`);
  }
  const check = (text: string | undefined, what: string) => {
    if (text === undefined) return undefined;
    const task = parsed(text, what, validateTask);
    if (task.id !== id || task.channel !== channel) invalid(`${what} is not task ${id}`);
    return task;
  };
  const before = bytes(j.task_before, "task_before") ?? invalid("no task_before bytes");
  const beforeTask = check(before, "task_before") as ReferenceTask;
  const legacy = j.version === 1 && !("task_after" in j);
  const after = legacy ? beforeTask : check(bytes(j.task_after, "task_after"), "task_after");
  if (!after) invalid("no task_after bytes");
  return { id, before, beforeTask, after, legacy };
}

/** One claim change of the journal: a claim file of this task, its before and after records. */
function claimChange(c: unknown, id: string, channel: string): ClaimChange {
  const change = c as Record<string, unknown>;
  if (
    change === null ||
    typeof change !== "object" ||
    !("previous" in change && "next" in change)
  ) {
    invalid("a claim change is malformed");
  }
  const file = change.file;
  const owner = typeof file === "string" ? file.slice(id.length + 1, -".json".length) : "";
  if (typeof file !== "string" || file !== `${id}.${owner}.json` || !REFERENCE_ID.test(owner)) {
    invalid(`claim file ${JSON.stringify(file)} is not one of task ${id}'s`);
  }
  const record = (text: string | undefined, what: string) => {
    if (text === undefined) return undefined;
    const claim = parsed(text, `claim ${what}`, validateClaim);
    if (claim.task_id !== id || claim.owner !== owner || claim.channel !== channel) {
      invalid(`claim ${what} does not match its file ${file}`);
    }
    return claim;
  };
  const previous = bytes(change.previous, "claim previous");
  record(previous, "previous");
  const next = record(bytes(change.next, "claim next"), "next");
  if (previous === undefined && next === undefined) invalid(`claim change ${file} is empty`);
  return { file, previous, next };
}

/** Each claim file the change touched (one entry per file, its first before kept). */
function claimStates(j: Record<string, unknown>, id: string, channel: string): ClaimChange[] {
  const byFile = new Map<string, ClaimChange>();
  for (const c of j.claim_changes as unknown[]) {
    const change = claimChange(c, id, channel);
    const prior = byFile.get(change.file);
    if (prior && prior.previous !== change.previous) {
      invalid(`claim ${change.file} has two different befores`);
    }
    byFile.set(change.file, prior ? { ...change, previous: prior.previous } : change);
  }
  return [...byFile.values()];
}

/** chat.py's checks that the task's lease fields agree with the claims before and after. */
function assertLeaseAgrees(
  before: ReferenceTask,
  after: ReferenceTask | undefined,
  claims: ClaimChange[],
) {
  const previous = claims.flatMap((c) =>
    c.previous === undefined ? [] : [validateClaim(JSON.parse(c.previous))],
  );
  if (previous.length > 1) invalid("the change has more than one claim before it");
  const leased = before.owner !== null && before.lease_expires_at !== null;
  const p = previous[0];
  if (
    leased &&
    (!p || p.owner !== before.owner || p.lease_expires_at !== before.lease_expires_at)
  ) {
    invalid("task_before's lease does not match the claim before it");
  }
  if (!leased && p) invalid("a claim before the change, but no lease in task_before");
  if (!after) return;
  const next = claims.flatMap((c) => (c.next ? [c.next] : []));
  if (next.length > 1) invalid("the change has more than one live claim after it");
  const n = next[0];
  if (n && (n.owner !== after.owner || n.lease_expires_at !== after.lease_expires_at)) {
    invalid("task_after's lease does not match the claim after it");
  }
  if (!n && after.lease_expires_at !== null) invalid("task_after keeps a lease without a claim");
}

/** Whether the change is to be undone or was published, by its phase and its message. */
function resolutionOf(
  dir: string,
  j: Record<string, unknown>,
  transactionId: string | undefined,
  resolve: PendingChange["resolution"] | undefined,
): PendingChange["resolution"] {
  const phase = j.version === 1 && j.phase === undefined ? "prepared" : j.phase;
  if (phase !== "prepared" && phase !== "applied" && phase !== "published") {
    invalid(`unsupported phase ${JSON.stringify(phase)}`);
  }
  if (resolve !== undefined && phase !== "applied") {
    invalid("--resolve-publication applies only to a change in phase applied");
  }
  if (phase !== "applied") return phase === "published" ? "published" : "rollback";
  if (resolve) return resolve;
  if (transactionId === undefined) {
    throw referenceError(
      "TASK_INCONSISTENT",
      "LEASE_TRANSACTION_PUBLICATION_UNKNOWN",
      "whether this old journal's message was posted is unknown; say so with --resolve-publication rollback|published",
    );
  }
  return published(dir, transactionId) ? "published" : "rollback";
}

/** What recovering the channel folder `dir`'s pending lease change would do; throws if invalid. */
export function pendingChange(
  dir: string,
  channel: string,
  resolve?: "rollback" | "published",
): PendingChange {
  const j = readJournal(dir);
  const { id, before, beforeTask, after, legacy } = taskStates(j, channel);
  const claims = claimStates(j, id, channel);
  assertLeaseAgrees(beforeTask, legacy ? undefined : after, claims);
  const transactionId = typeof j.transaction_id === "string" ? j.transaction_id : undefined;
  const resolution = resolutionOf(dir, j, transactionId, resolve);
  return { transactionId, taskId: id, event: String(j.event), before, after, claims, resolution };
}

/**
 * Does to the files what recovering `change` is to do: puts them back as they were before it,
 * or, when its message was posted, checks that it left them as its journal says. `current`
 * reads the task record as it is now (only then: a torn record is what a rollback repairs).
 */
export async function settlePending(
  dir: string,
  change: PendingChange,
  current: () => ReferenceTask | undefined,
): Promise<void> {
  if (change.resolution === "rollback") {
    await putBack(dir, change.taskId, change.before, change.claims);
    return;
  }
  const task = current();
  if (!task) invalid("the task record is gone");
  assertPublished(change, task, (file) => claimText(dir, file));
}

/** The claim files as a published change must have left them (else it is not what it says). */
function assertPublished(
  change: PendingChange,
  current: ReferenceTask,
  claimText: (file: string) => string | undefined,
): void {
  if (formatTask(current) !== formatTask(change.after)) {
    invalid("the published change's task is not its task_after");
  }
  for (const c of change.claims) {
    const text = claimText(c.file);
    if (c.next === undefined ? text !== undefined : text === undefined) {
      invalid(`the published change's claim ${c.file} is not as it left it`);
    }
    if (
      c.next &&
      text !== undefined &&
      formatClaim(parsed(text, c.file, validateClaim)) !== formatClaim(c.next)
    ) {
      invalid(`the published change's claim ${c.file} is not its next record`);
    }
  }
}

/** A claim file's text, or undefined when there is none (a link or other entry is not one). */
function claimText(dir: string, file: string): string | undefined {
  const path = join(dir, CLAIMS_DIR, file);
  return entryKind(path) === undefined ? undefined : readRootTextSync(path, MAX_CLAIM_BYTES);
}
