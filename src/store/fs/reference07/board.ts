import { join } from "node:path";
import { AgentChatError, referenceError } from "../../../core/errors.js";
import {
  createFileExclusive,
  ensureRealDir,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import { pastGrace, SKEW_GRACE_MS } from "../../shared/index.js";
import type {
  NewStructuredTask,
  PendingRecovery,
  PostInput,
  StructuredTaskUpdate,
  TaskInfo,
} from "../../types.js";
import { leasedBy, type Read, readClaims, readTask, readTasks, recordFolder } from "./files.js";
import { type Grants, liveToken, nextGrant, readGrants, writeGrants } from "./grants.js";
import {
  applyLeaseChange,
  type ClaimChange,
  pendingChange,
  removeJournal,
  settlePending,
  transactionPending,
} from "./lease-journal.js";
import { withTasksMutex } from "./mutex.js";
import {
  canMove,
  changedFields,
  formatTask,
  localIso,
  parseTime,
  RecordProblem,
  type ReferenceClaim,
  type ReferenceStatus,
  type ReferenceTask,
  referenceTime,
  sortedJson,
  TASKS_DIR,
  validateTask,
} from "./records.js";
import {
  assertAcyclic,
  assertSomeField,
  assertUpdateAllowed,
  isLeaseOwner,
  ownerName,
  updatedTask,
} from "./update.js";

/** What the board needs of the store it lives in. */
export interface BoardHost {
  dir: string;
  channel: string;
  now: () => number;
  /** Posts a message in the channel (the audit messages chat.py posts for each change). */
  post: (input: PostInput) => Promise<unknown>;
}

/** A task as one operation found it, under chat.py's task mutex. */
interface Found {
  task: Read<ReferenceTask>;
  claim?: Read<ReferenceClaim>;
  grants: Grants;
}

/** chat.py's refusals (`reference`, its code) as ours. */
const inconsistent = (reference: string, text: string) =>
  referenceError("TASK_INCONSISTENT", reference, text);
const lost = (reference: string, text: string) => referenceError("CLAIM_LOST", reference, text);
const notHolder = (reference: string, text: string) =>
  referenceError("NOT_HOLDER", reference, text);

/**
 * chat.py 0.7's task board of one channel folder, read and changed in its formats, under its
 * mutex and with its journal, with our rules on top: a fencing token per grant, an expired
 * lease taken over by a claim once past the skew grace (chat.py wants `recover --reason`: ours
 * records the takeover as one, with the reason), and the holder's renewals.
 */
export class Board {
  constructor(private readonly host: BoardHost) {}

  async list(): Promise<{ tasks: TaskInfo[]; problems: string[] }> {
    const { dir, channel } = this.host;
    const { tasks, problems } = readTasks(dir, channel);
    const now = this.host.now();
    const out: TaskInfo[] = [];
    for (const task of tasks) {
      try {
        out.push(this.describe(this.found(task), now));
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    return { tasks: out, problems };
  }

  async show(id: string): Promise<TaskInfo> {
    return this.describe(this.load(id), this.host.now());
  }

  async create(input: NewStructuredTask): Promise<TaskInfo> {
    const { dir, channel } = this.host;
    const task = this.newTask(input);
    return withTasksMutex(dir, async () => {
      if (readTask(dir, channel, task.id)) {
        throw referenceError(
          "TASK_EXISTS",
          "TASK_ALREADY_EXISTS",
          `task ${task.id} already exists in ${channel}`,
        );
      }
      const known = new Set(readTasks(dir, channel).tasks.map((t) => t.value.id));
      const unknown = task.depends_on.filter((d) => !known.has(d));
      if (unknown.length > 0) {
        throw referenceError(
          "INVALID_ARGUMENT",
          "TASK_UNKNOWN_DEPENDENCY",
          `no task ${unknown.join(", ")} in ${channel}`,
        );
      }
      const folder = join(dir, TASKS_DIR);
      ensureRealDir(folder);
      await createFileExclusive(folder, `${task.id}.json`, formatTask(task));
      try {
        await this.audit("task.created", task, input.from);
      } catch (err) {
        removeFileEntry(join(folder, `${task.id}.json`));
        throw err;
      }
      return this.describe(
        { task: { value: task, text: "" }, grants: { token: 0, history: [] } },
        this.host.now(),
      );
    });
  }

  private newTask(input: NewStructuredTask): ReferenceTask {
    try {
      return validateTask({
        id: input.id,
        channel: this.host.channel,
        title: input.title,
        status: "open",
        owner: input.owner ?? null,
        created_by: input.from,
        depends_on: input.dependsOn ?? [],
        files_hint: input.filesHint ?? [],
        acceptance: input.acceptance ?? [],
        lease_expires_at: null,
        branch: input.branch ?? null,
        updated_at: referenceTime(this.host.now()),
      });
    } catch (err) {
      if (err instanceof RecordProblem) throw err.as("INVALID_ARGUMENT");
      throw new AgentChatError("INVALID_ARGUMENT", (err as Error).message);
    }
  }

  /** A claim: a new lease, or the takeover of one that ended more than the skew grace ago. */
  async claim(id: string, agent: string, ttlMs: number): Promise<TaskInfo> {
    const owner = ownerName(agent);
    return this.change(id, async (found, now) => {
      const { task, claim } = found;
      if (claim) {
        const end = Date.parse(claim.value.lease_expires_at);
        const who = claim.value.owner === owner ? "you" : claim.value.owner;
        if (!pastGrace(end, now)) {
          throw lost(
            "LEASE_CONFLICT",
            `task ${id} is leased by ${who} until ${claim.value.lease_expires_at}${graceNote(end, now)}`,
          );
        }
        const reason = `lease of ${claim.value.owner} ended at ${claim.value.lease_expires_at}; claimed by ${owner} with agent-chat`;
        return this.takeOver(found, owner, reason, ttlMs, now);
      }
      if (task.value.lease_expires_at !== null) {
        throw inconsistent(
          "LEASE_INCONSISTENT",
          `task ${id} has a lease expiry without a claim record`,
        );
      }
      if (task.value.owner !== null && task.value.owner !== owner) {
        throw lost("LEASE_CONFLICT", `task ${id} is assigned to ${task.value.owner}`);
      }
      this.assertCanMove(task.value, "in_progress", `claim task ${id}`);
      const expires = referenceTime(now + ttlMs);
      const record = newClaim(task.value, owner, expires, now);
      return this.grant(
        found,
        record,
        [{ file: claimFile(record), next: record }],
        "lease.claimed",
        ttlMs,
        {
          lease_owner: owner,
          lease_expires_at: expires,
        },
      );
    });
  }

  /** chat.py's `recover --reason`: takes over a lease that ended (past the skew grace, ours). */
  async recover(id: string, agent: string, reason: string, ttlMs: number): Promise<TaskInfo> {
    const owner = ownerName(agent);
    if (reason.trim() === "" || /[\0\r\n]/.test(reason)) {
      throw referenceError(
        "INVALID_ARGUMENT",
        "LEASE_INVALID_REASON",
        "a recovery needs a one-line --reason",
      );
    }
    return this.change(id, async (found, now) => {
      const claim = found.claim?.value;
      if (!claim) throw notHolder("LEASE_NOT_FOUND", `no active lease for task ${id}`);
      const end = Date.parse(claim.lease_expires_at);
      if (!pastGrace(end, now)) {
        throw lost(
          "LEASE_NOT_EXPIRED",
          `the lease of ${claim.owner} on task ${id} is still active${graceNote(end, now)}`,
        );
      }
      return this.takeOver(found, owner, reason, ttlMs, now);
    });
  }

  private takeOver(found: Found, owner: string, reason: string, ttlMs: number, now: number) {
    const old = found.claim as Read<ReferenceClaim>;
    this.assertCanMove(found.task.value, "in_progress", `recover task ${found.task.value.id}`);
    const expires = referenceTime(now + ttlMs);
    const record: ReferenceClaim = {
      ...newClaim(found.task.value, owner, expires, now),
      previous_owner: old.value.owner,
      previous_lease_expires_at: old.value.lease_expires_at,
      recovery_reason: reason,
    };
    const changes: ClaimChange[] = [{ file: claimFile(old.value), previous: old.text }];
    if (old.value.owner === owner) changes[0] = { ...changes[0]!, next: record };
    else changes.push({ file: claimFile(record), next: record });
    return this.grant(found, record, changes, "lease.recovered", ttlMs, {
      lease_owner: owner,
      lease_expires_at: expires,
      previous_owner: old.value.owner,
      previous_lease_expires_at: old.value.lease_expires_at,
      recovery_reason: reason,
    });
  }

  private async grant(
    found: Found,
    record: ReferenceClaim,
    claims: ClaimChange[],
    event: string,
    ttlMs: number,
    details: Record<string, unknown>,
  ): Promise<TaskInfo> {
    const now = this.host.now();
    const after = {
      ...found.task.value,
      status: "in_progress" as const,
      owner: record.owner,
      lease_expires_at: record.lease_expires_at,
      updated_at: record.updated_at,
    };
    const grants = nextGrant(found.grants, record, ttlMs, now);
    // The token is recorded first: a crash after it leaves a floor for the next, never a reuse.
    await writeGrants(this.host.dir, after.id, grants);
    await this.commit(found, after, claims, event, record.owner, details);
    return this.describe(
      { task: { value: after, text: "" }, claim: { value: record, text: "" }, grants },
      now,
    );
  }

  /** Extends the holder's lease by `ttlMs` from now (the holder's until the grace has passed). */
  async renew(id: string, agent: string, ttlMs: number, token?: number): Promise<TaskInfo> {
    return this.change(id, async (found, now) => {
      const claim = this.asHolder(found, agent, "renew", token, now);
      const expires = referenceTime(now + ttlMs);
      const record = { ...claim.value, lease_expires_at: expires, updated_at: referenceTime(now) };
      const after = {
        ...found.task.value,
        lease_expires_at: expires,
        updated_at: record.updated_at,
      };
      const grants = { ...found.grants, ttlMs };
      if (liveToken(found.grants, claim.value) !== undefined)
        await writeGrants(this.host.dir, id, grants);
      await this.commit(
        found,
        after,
        [{ file: claimFile(record), previous: claim.text, next: record }],
        "lease.renewed",
        record.owner,
        {
          lease_owner: record.owner,
          lease_expires_at: expires,
        },
      );
      return this.describe(
        { task: { value: after, text: "" }, claim: { value: record, text: "" }, grants },
        now,
      );
    });
  }

  /** `done` (status done) or `release` (status open): the holder's lease ends. */
  async finish(id: string, agent: string, how: "done" | "open", token?: number): Promise<TaskInfo> {
    return this.change(id, async (found, now) => {
      const verb = how === "done" ? "finish" : "release";
      if (!found.claim) return this.unleased(found, agent, how, now);
      const claim = this.asHolder(found, agent, verb, token, now);
      this.assertCanMove(found.task.value, how, `${verb} task ${id}`);
      const after: ReferenceTask = {
        ...found.task.value,
        status: how,
        owner: null,
        lease_expires_at: null,
        updated_at: referenceTime(now),
      };
      await this.commit(
        found,
        after,
        [{ file: claimFile(claim.value), previous: claim.text }],
        how === "done" ? "lease.completed" : "lease.released",
        claim.value.owner,
        {
          lease_owner: claim.value.owner,
          previous_lease_expires_at: claim.value.lease_expires_at,
        },
      );
      return finishedBy(
        this.describe({ task: { value: after, text: "" }, grants: found.grants }, now),
        how,
        claim.value.owner,
      );
    });
  }

  /** chat.py's fallback for a task nobody leases: the status changes, owner and all else stay. */
  private async unleased(found: Found, agent: string, how: "done" | "open", now: number) {
    const id = found.task.value.id;
    if (found.task.value.lease_expires_at !== null) {
      throw inconsistent(
        "LEASE_INCONSISTENT",
        `task ${id} has a lease expiry without a claim record`,
      );
    }
    // As chat.py's: any move its transitions allow, the same status again included (a second
    // `release` of an open task is no error), checked as a status change is.
    this.assertCanMove(
      found.task.value,
      how,
      `${how === "done" ? "finish" : "release"} task ${id}`,
    );
    const after = { ...found.task.value, status: how, updated_at: referenceTime(now) };
    await this.commit(found, after, [], "task.updated", ownerName(agent), {
      lease_fallback: how === "done" ? "complete" : "release",
    });
    const info = this.describe({ task: { value: after, text: "" }, grants: found.grants }, now);
    return finishedBy(info, how, ownerName(agent));
  }

  /** chat.py's `task block`: a status change, refused while a lease holds the task. */
  async block(id: string, agent: string): Promise<TaskInfo> {
    const actor = ownerName(agent);
    return this.change(id, async (found, now) => {
      const claim = found.claim?.value;
      if (claim) {
        throw lost(
          "LEASE_MUTATION_REQUIRED",
          `task ${id} is leased by ${claim.owner}; release it first`,
        );
      }
      this.assertCanMove(found.task.value, "blocked", `block task ${id}`);
      const after = {
        ...found.task.value,
        status: "blocked" as const,
        updated_at: referenceTime(now),
      };
      return this.rewrite(found, after, actor, now);
    });
  }

  /** chat.py's `task update`: any field but the lease's, refused as chat.py refuses it. */
  async update(id: string, agent: string, fields: StructuredTaskUpdate): Promise<TaskInfo> {
    const actor = ownerName(agent);
    assertSomeField(fields);
    return this.change(id, async (found, now) => {
      const before = found.task.value;
      assertUpdateAllowed(before, found.claim, actor, fields, now);
      const after = updatedTask(before, fields, localIso(now));
      assertAcyclic(
        after,
        readTasks(this.host.dir, this.host.channel).tasks.map((t) => t.value),
      );
      this.assertCanMove(before, after.status, `update task ${id}`, after.depends_on);
      return this.rewrite(found, after, actor, now);
    });
  }

  /** Replaces a task record (no lease changes) and posts `task.updated`, undone if that fails. */
  private async rewrite(found: Found, after: ReferenceTask, actor: string, now: number) {
    const folder = recordFolder(this.host.dir, TASKS_DIR);
    const file = `${after.id}.json`;
    await replaceFile(folder, file, formatTask(after));
    try {
      await this.audit("task.updated", after, actor, found.task.value);
    } catch (err) {
      await replaceFile(folder, file, found.task.text);
      throw err;
    }
    return this.describe({ ...found, task: { value: after, text: "" } }, now);
  }

  /**
   * chat.py's `task recover-pending`: the lease change that died half-way is undone (its message
   * was never posted) or, if it was, its journal is cleaned up; either is posted, as chat.py does
   * (`lease.transaction.recovered`, `lease.transaction.cleaned`).
   */
  async recoverPending(
    agent: string,
    resolve?: "rollback" | "published",
  ): Promise<PendingRecovery> {
    const actor = ownerName(agent);
    const { dir, channel } = this.host;
    return withTasksMutex(dir, async () => {
      const change = pendingChange(dir, channel, resolve);
      const current = () => readTask(dir, channel, change.taskId)?.value;
      await settlePending(dir, change, current);
      const cleanup = change.resolution === "published";
      const task = current() as ReferenceTask;
      await this.audit(
        `lease.transaction.${cleanup ? "cleaned" : "recovered"}`,
        task,
        actor,
        task,
        {
          transaction_event: change.event,
          transaction_recovery: cleanup ? "cleanup" : "rollback",
          transaction_task_id: change.taskId,
        },
      );
      removeJournal(dir);
      return {
        task: change.taskId,
        event: change.event,
        recovery: cleanup ? "cleanup" : "rollback",
      };
    });
  }

  /**
   * Renewal by activity: each lease of `agent` that we granted (so we know its length) is
   * extended by as much again once a third of it has passed. A courtesy: never fails.
   */
  async keepAlive(agent: string): Promise<void> {
    const owner = ownerName(agent);
    const now = this.host.now();
    for (const id of leasedBy(this.host.dir, owner)) {
      try {
        const found = this.load(id);
        const claim = found.claim?.value;
        const ttlMs = found.grants.ttlMs;
        if (!claim || claim.owner !== owner || liveToken(found.grants, claim) === undefined)
          continue;
        const left = Date.parse(claim.lease_expires_at) - now;
        if (ttlMs !== undefined && left > 0 && left < (ttlMs * 2) / 3)
          await this.renew(id, agent, ttlMs);
      } catch {
        // A lease it could not renew runs on; the operation it rode on has succeeded.
      }
    }
  }

  /** Whether `token` is the live grant of ours, by the holder's clock (no grace). */
  async fence(id: string, token: number): Promise<{ live: boolean; task: TaskInfo }> {
    const found = this.load(id);
    const now = this.host.now();
    const claim = found.claim?.value;
    const live =
      claim !== undefined &&
      liveToken(found.grants, claim) === token &&
      now <= Date.parse(claim.lease_expires_at);
    return { live, task: this.describe(found, now) };
  }

  private asHolder(
    found: Found,
    agent: string,
    verb: string,
    token: number | undefined,
    now: number,
  ): Read<ReferenceClaim> {
    const id = found.task.value.id;
    const claim = found.claim;
    if (!claim) throw notHolder("LEASE_NOT_FOUND", `no active lease for task ${id}`);
    if (!isLeaseOwner(claim.value.owner, agent)) {
      throw notHolder(
        "LEASE_OWNER_MISMATCH",
        `task ${id} is leased by ${claim.value.owner}; only its holder can ${verb} it`,
      );
    }
    if (pastGrace(Date.parse(claim.value.lease_expires_at), now)) {
      throw notHolder(
        "LEASE_RECOVERY_REQUIRED",
        `your lease on task ${id} ended at ${claim.value.lease_expires_at}`,
      );
    }
    const live = liveToken(found.grants, claim.value);
    if (token !== undefined && token !== live) {
      throw new AgentChatError(
        "NOT_HOLDER",
        `task ${id}: token ${token} is not the live grant (${live === undefined ? "granted by chat.py, no token" : `token ${live}`})`,
      );
    }
    return claim;
  }

  /** Whether `task` may move to `to` (with `dependsOn`, the dependencies it will have then). */
  private assertCanMove(
    task: ReferenceTask,
    to: ReferenceStatus,
    what: string,
    dependsOn = task.depends_on,
  ): void {
    if (!canMove(task.status, to)) {
      throw lost("TASK_INVALID_TRANSITION", `cannot ${what}: it is ${task.status}`);
    }
    if (to === "in_progress" || to === "done") {
      const { tasks } = readTasks(this.host.dir, this.host.channel);
      const status = new Map(tasks.map((t) => [t.value.id, t.value.status]));
      const waiting = dependsOn.filter((d) => status.get(d) !== "done");
      if (waiting.length > 0) {
        throw lost(
          "TASK_DEPENDENCY_NOT_READY",
          `task ${task.id} depends on unfinished tasks: ${waiting.join(", ")}`,
        );
      }
    }
  }

  /** Runs a change of task `id` under chat.py's mutex, refused while a journal awaits recovery. */
  private change(
    id: string,
    fn: (found: Found, now: number) => Promise<TaskInfo>,
  ): Promise<TaskInfo> {
    return withTasksMutex(this.host.dir, async () => {
      if (transactionPending(this.host.dir)) {
        throw inconsistent(
          "LEASE_TRANSACTION_PENDING",
          `a lease change in ${this.host.channel} died half-way; recover it first (agent-chat task recover-pending ${this.host.channel} --as NAME)`,
        );
      }
      return fn(this.load(id), this.host.now());
    });
  }

  private load(id: string): Found {
    const task = readTask(this.host.dir, this.host.channel, id);
    if (!task)
      throw referenceError(
        "TASK_NOT_FOUND",
        "TASK_NOT_FOUND",
        `no task ${id} in ${this.host.channel}`,
      );
    return this.found(task);
  }

  /** A task with its one claim (two, or one that disagrees with the task, is an error). */
  private found(task: Read<ReferenceTask>): Found {
    const { dir, channel } = this.host;
    const id = task.value.id;
    const claims = readClaims(dir, channel, id);
    if (claims.length > 1) {
      throw inconsistent(
        "LEASE_INCONSISTENT",
        `task ${id} has ${claims.length} leases (${claims.map((c) => c.value.owner).join(", ")})`,
      );
    }
    const claim = claims[0];
    if (
      claim &&
      (claim.value.owner !== task.value.owner ||
        claim.value.lease_expires_at !== task.value.lease_expires_at)
    ) {
      throw inconsistent("LEASE_INCONSISTENT", `task ${id} and its claim record disagree`);
    }
    const found: Found = { task, grants: readGrants(dir, id) };
    if (claim) found.claim = claim;
    return found;
  }

  private async commit(
    found: Found,
    after: ReferenceTask,
    claims: ClaimChange[],
    event: string,
    actor: string,
    details: Record<string, unknown>,
  ): Promise<void> {
    await applyLeaseChange(
      this.host.dir,
      { before: found.task.text, after, claims, event, details },
      (transactionId) =>
        this.audit(event, after, actor, found.task.value, {
          ...details,
          transaction_id: transactionId,
        }),
    );
  }

  /** The `status: <event>` message chat.py posts for each change, with its JSON body. */
  private async audit(
    event: string,
    task: ReferenceTask,
    actor: string,
    previous?: ReferenceTask,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    const payload: Record<string, unknown> = {
      event,
      task_id: task.id,
      channel: task.channel,
      status: task.status,
      owner: task.owner,
      lease_expires_at: task.lease_expires_at,
      updated_at: task.updated_at,
    };
    if (previous) {
      payload.previous_status = previous.status;
      payload.changed_fields = changedFields(previous, task);
    }
    const body = sortedJson({ ...payload, ...details });
    await this.host.post({
      from: actor,
      to: "all",
      title: `${event} ${task.id}`,
      status: event,
      body,
    });
  }

  private describe(found: Found, now: number): TaskInfo {
    const { task, claim } = found;
    const t = task.value;
    const info: TaskInfo = {
      id: t.id,
      channel: t.channel,
      state: "open",
      title: t.title,
      file: `${TASKS_DIR}/${t.id}.json`,
    };
    info.structured = {
      status: t.status,
      owner: t.owner,
      createdBy: t.created_by,
      dependsOn: t.depends_on,
      filesHint: t.files_hint,
      acceptance: t.acceptance,
      leaseExpiresAt: t.lease_expires_at,
      branch: t.branch,
      updatedAt: t.updated_at,
    };
    if (t.status === "done" || t.status === "cancelled") info.state = "done";
    else if (claim) {
      const end = parseTime(
        claim.value.lease_expires_at,
        "lease_expires_at",
        "LEASE_INVALID_TIMESTAMP",
      );
      info.state = pastGrace(end, now) ? "expired" : "claimed";
      info.holder = claim.value.owner;
      info.expiresAt = new Date(end).toISOString();
      const token = liveToken(found.grants, claim.value);
      if (token !== undefined) info.token = token;
    } else if (t.status === "in_progress" && t.owner !== null) {
      info.state = "claimed";
      info.holder = t.owner;
    }
    return info;
  }
}

function newClaim(
  task: ReferenceTask,
  owner: string,
  expires: string,
  now: number,
): ReferenceClaim {
  const at = referenceTime(now);
  return {
    task_id: task.id,
    channel: task.channel,
    owner,
    lease_expires_at: expires,
    claimed_at: at,
    updated_at: at,
    previous_owner: null,
    previous_lease_expires_at: null,
    recovery_reason: null,
  };
}

/** A task just finished names who finished it, as a done marker of ours does. */
function finishedBy(info: TaskInfo, how: "done" | "open", by: string): TaskInfo {
  if (how === "done") info.holder = by;
  return info;
}

function claimFile(claim: ReferenceClaim): string {
  return `${claim.task_id}.${claim.owner}.json`;
}

function graceNote(end: number, now: number): string {
  if (now <= end) return "";
  const left = Math.max(1, Math.ceil((end + SKEW_GRACE_MS - now) / 1000));
  return ` (ended, but its holder's for the ${SKEW_GRACE_MS / 1000} s clock-skew grace: claimable in ${left} s)`;
}
