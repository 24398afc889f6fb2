import type { AgentChatError } from "../../../../core/errors.js";
import { type ReferenceTask, sortedJson } from "../records.js";
import {
  type BlockerRecord,
  type DecisionRecord,
  type MessageFindings,
  scanMessages,
  type VerificationRecord,
} from "./messages.js";
import {
  type LockRecord,
  type MetaFields,
  readMetaFields,
  readStateLocks,
  readStateTasks,
} from "./sources.js";

/**
 * chat.py 0.7's derived channel summary (`state`, `compact`, its `state.md`): the channel's
 * topic and members, its decisions, open tasks, blockers, owners with their leases and locks,
 * path locks and verification evidence, drawn from the messages and the task and lock records.
 * Never authoritative: nothing reads `state.md` to decide anything. The Markdown is byte for
 * byte chat.py's (one folder, two CLIs, one `state.md`); the JSON is its `state --json`.
 */

export interface OwnerAssignment {
  owner: string;
  tasks: { id: string; title: string; status: string; lease_expires_at: string | null }[];
  path_locks: { lock_id: string; paths: string[]; expires_at: string }[];
}

export interface StateSummary extends MetaFields {
  channel: string;
  last_seq: number;
  generated_at: string;
  decisions: DecisionRecord[];
  open_tasks: ReferenceTask[];
  blockers: BlockerRecord[];
  owners: Record<string, OwnerAssignment>;
  path_locks: LockRecord[];
  verification: VerificationRecord[];
}

/** Python's string order (by code point), which chat.py sorts with. */
export function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const OPEN = new Set(["open", "in_progress", "blocked"]);

/** The blockers a task raises: its own `blocked` status, and dependencies not yet done. */
function taskBlockers(t: ReferenceTask, status: Map<string, string>): BlockerRecord[] {
  const out: BlockerRecord[] = [];
  const by = { author: t.owner ?? t.created_by, time: t.updated_at };
  if (t.status === "blocked") {
    out.push({
      kind: "task_status",
      source_id: t.id,
      title: `Task ${t.id} blocked (${t.title})`,
      details: "Task is marked with status 'blocked'",
      ...by,
      blocking_items: [],
    });
  }
  const waiting = t.depends_on.filter((d) => status.get(d) !== "done");
  if (waiting.length > 0) {
    const details = waiting.map((d) => `${d} (status: ${status.get(d) ?? "unknown"})`).join(", ");
    out.push({
      kind: "task_dependency",
      source_id: t.id,
      title: `Task ${t.id} blocked on dependencies: ${waiting.join(", ")}`,
      details: `Unfinished dependencies: ${details}`,
      ...by,
      blocking_items: waiting,
    });
  }
  return out;
}

function completion(t: ReferenceTask, findings: MessageFindings): VerificationRecord {
  return {
    source_type: "task",
    source_id: t.id,
    author: findings.completedBy.get(t.id) ?? t.owner ?? t.created_by,
    time: t.updated_at,
    title: `Task ${t.id} completed: ${t.title}`,
    evidence: `Completed task criteria satisfied for ${t.id}.`,
    acceptance: t.acceptance,
  };
}

function owners(open: ReferenceTask[], locks: LockRecord[]): Record<string, OwnerAssignment> {
  const map = new Map<string, OwnerAssignment>();
  const of = (owner: string) => {
    if (!map.has(owner)) map.set(owner, { owner, tasks: [], path_locks: [] });
    return map.get(owner) as OwnerAssignment;
  };
  for (const t of open) {
    if (t.owner) {
      const { id, title, status, lease_expires_at } = t;
      of(t.owner).tasks.push({ id, title, status, lease_expires_at });
    }
  }
  for (const lock of locks) {
    of(lock.owner).path_locks.push({
      lock_id: lock.lock_id,
      paths: lock.paths.map((p) => p.normalized_path.replaceAll("\\", "/")),
      expires_at: lock.expires_at,
    });
  }
  const sorted = [...map.keys()].sort(byText);
  return Object.fromEntries(
    sorted.map((owner) => {
      const a = map.get(owner) as OwnerAssignment;
      a.tasks.sort((x, y) => byText(x.id, y.id));
      a.path_locks.sort((x, y) => byText(x.lock_id, y.lock_id));
      return [owner, a];
    }),
  );
}

/**
 * The summary of the channel folder `dir`; `problems` hears of each source left out, as the
 * error (`TASK_INCONSISTENT`, with chat.py's code) that `--strict` refuses the summary with.
 */
export function summarizeState(
  dir: string,
  channel: string,
  generatedAt: string,
  problems: AgentChatError[],
  upTo?: number,
): StateSummary {
  const meta = readMetaFields(dir, problems);
  const findings = scanMessages(dir, upTo);
  const tasks = readStateTasks(dir, channel, problems);
  const status = new Map(tasks.map((t) => [t.id, t.status]));
  const open = tasks.filter((t) => OPEN.has(t.status)).sort((a, b) => byText(a.id, b.id));
  const blockers = [...tasks.flatMap((t) => taskBlockers(t, status)), ...findings.blockers];
  const verification = [
    ...findings.verification,
    ...tasks.filter((t) => t.status === "done").map((t) => completion(t, findings)),
  ];
  const locks = readStateLocks(dir, channel, problems).sort((a, b) => byText(a.lock_id, b.lock_id));
  return {
    channel,
    ...meta,
    members: [...meta.members].sort(byText),
    last_seq: findings.lastSeq,
    generated_at: generatedAt,
    decisions: [...findings.decisions].sort((a, b) => a.seq - b.seq),
    open_tasks: open,
    blockers: blockers.sort((a, b) => byText(a.kind, b.kind) || byText(a.source_id, b.source_id)),
    owners: owners(open, locks),
    path_locks: locks,
    verification: verification.sort(
      (a, b) => byText(a.time, b.time) || byText(a.source_id, b.source_id),
    ),
  };
}

/**
 * JSON as Python's `json.dumps(value, indent=2, sort_keys=True)` writes it: keys sorted, two
 * spaces, and every character past ASCII escaped (`ensure_ascii`).
 */
export function pythonJson(value: unknown): string {
  return sortedJson(value).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
