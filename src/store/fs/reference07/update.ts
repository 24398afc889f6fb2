import { AgentChatError, referenceError } from "../../../core/errors.js";
import { pastGrace } from "../../shared/index.js";
import type { StructuredTaskUpdate } from "../../types.js";
import type { Read } from "./files.js";
import { RecordProblem, type ReferenceClaim, type ReferenceTask, validateTask } from "./records.js";

/**
 * chat.py 0.7's `task update`: the fields of a task record other than its lease, with its
 * refusals. While a lease holds the task only its holder may change it, and never the owner or
 * the status (those move with the lease: claim, done, release); the dependencies stay acyclic
 * and name tasks that exist.
 */

/**
 * The owner or actor written in chat.py's records and messages: the name exactly as given (our
 * name rule is a part of chat.py's), never our key (`Bob.Smith`, not `bob-smith`), which chat.py
 * would hold for another agent and refuse the same agent its own lease.
 */
export function ownerName(agent: string): string {
  return agent.trim();
}

/**
 * Whether `agent` is the lease's or lock's `owner`, compared as chat.py compares them: exactly
 * (`Bob` is not `bob`, `bob.smith` not `bob-smith`), so that ours never accepts an owner chat.py
 * refuses, nor refuses one it accepts.
 */
export function isLeaseOwner(owner: string, agent: string): boolean {
  return owner === ownerName(agent);
}

/** Which fields the update names, for chat.py's check of the lease's own fields. */
function named(fields: StructuredTaskUpdate): string[] {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
}

/** Refuses the update when `fields` names nothing at all. */
export function assertSomeField(fields: StructuredTaskUpdate): void {
  if (named(fields).length === 0) {
    throw referenceError(
      "INVALID_ARGUMENT",
      "TASK_INVALID_UPDATE",
      "task update requires at least one field (--title, --owner, --clear-owner, --depends-on, --files-hint, --acceptance, --branch, --clear-branch, --status)",
    );
  }
}

/** chat.py's rule for an update of a task that may be leased. */
export function assertUpdateAllowed(
  task: ReferenceTask,
  claim: Read<ReferenceClaim> | undefined,
  actor: string,
  fields: StructuredTaskUpdate,
  now: number,
): void {
  if (!claim) {
    if (task.lease_expires_at !== null) {
      throw referenceError(
        "TASK_INCONSISTENT",
        "LEASE_INCONSISTENT",
        `task ${task.id} has a lease expiry without a claim record`,
      );
    }
    return;
  }
  const lease = claim.value;
  if (pastGrace(Date.parse(lease.lease_expires_at), now)) {
    throw referenceError(
      "NOT_HOLDER",
      "LEASE_RECOVERY_REQUIRED",
      `the lease of ${lease.owner} on task ${task.id} ended at ${lease.lease_expires_at}; recover it first (task recover --reason)`,
    );
  }
  if (!isLeaseOwner(lease.owner, actor)) {
    throw referenceError(
      "NOT_HOLDER",
      "LEASE_OWNER_MISMATCH",
      `task ${task.id} is leased by ${lease.owner}; only its holder can update it`,
    );
  }
  const protectedFields = named(fields).filter(
    (f) => f === "owner" || (f === "status" && fields.status !== task.status),
  );
  if (protectedFields.length > 0) {
    throw referenceError(
      "CLAIM_LOST",
      "LEASE_MUTATION_REQUIRED",
      `task ${task.id} must be changed through its lease (${protectedFields.join(", ")}: claim, done, release)`,
    );
  }
}

/** The record after the update, validated as chat.py validates it. */
export function updatedTask(
  task: ReferenceTask,
  fields: StructuredTaskUpdate,
  updatedAt: string,
): ReferenceTask {
  const next: Record<string, unknown> = { ...task, updated_at: updatedAt };
  if (fields.title !== undefined) next.title = fields.title;
  if (fields.owner !== undefined) next.owner = fields.owner;
  if (fields.dependsOn !== undefined) next.depends_on = fields.dependsOn;
  if (fields.filesHint !== undefined) next.files_hint = fields.filesHint;
  if (fields.acceptance !== undefined) next.acceptance = fields.acceptance;
  if (fields.branch !== undefined) next.branch = fields.branch;
  if (fields.status !== undefined) next.status = fields.status;
  try {
    return validateTask(next);
  } catch (err) {
    if (err instanceof RecordProblem) throw err.as("INVALID_ARGUMENT");
    throw new AgentChatError("INVALID_ARGUMENT", (err as Error).message);
  }
}

/**
 * chat.py's graph check over the board with `task` replaced: every dependency names a task of
 * the channel, and none leads back to where it started.
 */
export function assertAcyclic(task: ReferenceTask, board: ReferenceTask[]): void {
  const byId = new Map(board.map((t) => [t.id, t.depends_on]));
  byId.set(task.id, task.depends_on);
  const unknown = task.depends_on.filter((d) => !byId.has(d));
  if (unknown.length > 0) {
    throw referenceError(
      "INVALID_ARGUMENT",
      "TASK_UNKNOWN_DEPENDENCY",
      `task ${task.id} references unknown dependency ${unknown.join(", ")}`,
    );
  }
  const done = new Set<string>();
  const visit = (id: string, path: string[]): void => {
    if (path.includes(id)) {
      throw referenceError(
        "INVALID_ARGUMENT",
        "TASK_DEPENDENCY_CYCLE",
        `dependency cycle ${[...path.slice(path.indexOf(id)), id].join(" -> ")}`,
      );
    }
    if (done.has(id)) return;
    for (const d of byId.get(id) ?? []) visit(d, [...path, id]);
    done.add(id);
  };
  visit(task.id, []);
}
