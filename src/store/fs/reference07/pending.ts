import { join } from "node:path";
import { AgentChatError } from "../../../core/errors.js";
import {
  entryKind,
  listRealDir,
  readRootTextSync,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import { recordFolder } from "./files.js";
import {
  CLAIMS_DIR,
  formatClaim,
  formatTask,
  REFERENCE_ID,
  RecordProblem,
  type ReferenceClaim,
  type ReferenceTask,
  TASKS_DIR,
  TRANSACTION_FILE,
  validateClaim,
  validateTask,
} from "./records.js";

/**
 * chat.py 0.7's `task recover-pending`: what to do with the lease journal
 * (`claims/.lease-transaction.json`) of a change that died half-way, read and checked as chat.py
 * checks it. The journal is untrusted like every file of the root: each path it names must be
 * the task's own record or one of its claim files, and every byte it would put back must be a
 * record that validates and agrees with the rest, else nothing is touched.
 */

/** One claim file of the journal: its text before (none: it was new) and its record after. */
export interface PendingClaim {
  file: string;
  previous: string | undefined;
  next: ReferenceClaim | undefined;
}

export interface PendingChange {
  transactionId: string | undefined;
  taskId: string;
  event: string;
  /** The task record's text before the change, and its record after. */
  before: string;
  after: ReferenceTask;
  claims: PendingClaim[];
  /** Whether to undo the change (its message was never posted) or only clean its journal up. */
  resolution: "rollback" | "published";
}

const MAX_JOURNAL_BYTES = 1024 * 1024;
const MAX_MESSAGE_BYTES = 1024 * 1024;

function invalid(message: string): never {
  throw new AgentChatError("TASK_INCONSISTENT", `LEASE_TRANSACTION_INVALID: ${message}`);
}

/** A journal payload: base64 text of a file's bytes, or null for no file. */
function bytes(value: unknown, what: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4) {
    invalid(`${what} is not base64 text`);
  }
  return Buffer.from(value, "base64").toString("utf8");
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
    throw new AgentChatError("TASK_INCONSISTENT", `${err.message} (the journal's ${what})`);
  }
}

function readJournal(dir: string): Record<string, unknown> {
  const path = join(recordFolder(dir, CLAIMS_DIR), TRANSACTION_FILE);
  if (entryKind(path) === undefined) {
    throw new AgentChatError(
      "NOT_FOUND",
      "LEASE_TRANSACTION_NOT_FOUND: no pending lease transaction exists",
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
function claimChange(c: unknown, id: string, channel: string): PendingClaim {
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
function claimStates(j: Record<string, unknown>, id: string, channel: string): PendingClaim[] {
  const byFile = new Map<string, PendingClaim>();
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
  claims: PendingClaim[],
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

/** Whether a message of the channel names the transaction (its audit message was posted). */
export function published(dir: string, transactionId: string): boolean {
  const marker = `"transaction_id": "${transactionId}"`;
  const names = listRealDir(dir)
    .filter((e) => e.kind === "file" && /^[0-9]+-.*\.md$/.test(e.name))
    .map((e) => e.name)
    .sort((a, b) => Number.parseInt(b, 10) - Number.parseInt(a, 10));
  return names.some((name) => {
    try {
      return readRootTextSync(join(dir, name), MAX_MESSAGE_BYTES).includes(marker);
    } catch {
      return false;
    }
  });
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
    throw new AgentChatError(
      "TASK_INCONSISTENT",
      "LEASE_TRANSACTION_PUBLICATION_UNKNOWN: whether this old journal's message was posted is unknown; say so with --resolve-publication rollback|published",
    );
  }
  return published(dir, transactionId) ? "published" : "rollback";
}

/** Puts the task record and its claim files back as they were before the change. */
export async function undoPending(dir: string, change: PendingChange): Promise<void> {
  const claims = recordFolder(dir, CLAIMS_DIR);
  await replaceFile(recordFolder(dir, TASKS_DIR), `${change.taskId}.json`, change.before);
  for (const c of [...change.claims].reverse()) {
    if (c.previous === undefined) removeFileEntry(join(claims, c.file));
    else await replaceFile(claims, c.file, c.previous);
  }
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

/** The claim files as a published change must have left them (else it is not what it says). */
export function assertPublished(
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
