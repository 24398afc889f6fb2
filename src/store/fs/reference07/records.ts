/**
 * chat.py 0.7's structured task records (`CH/tasks/<id>.json`) and task leases
 * (`CH/claims/<task>.<owner>.json`), field for field: chat.py refuses a record with a field
 * missing or one more, and then every task of the channel with it. Every file read here comes
 * from the root, which is untrusted: a record that does not validate is reported, never used.
 */
import {
  type AgentChatError,
  type ErrorCode,
  referenceError,
  referenceMessage,
} from "../../../core/errors.js";

export const TASKS_DIR = "tasks";
export const CLAIMS_DIR = "claims";

export type ReferenceStatus = "open" | "in_progress" | "blocked" | "done" | "cancelled";
const STATUSES: readonly ReferenceStatus[] = [
  "open",
  "in_progress",
  "blocked",
  "done",
  "cancelled",
];

/** Which status may follow which (a same-status write is allowed); done and cancelled are final. */
const NEXT: Record<ReferenceStatus, readonly ReferenceStatus[]> = {
  open: ["open", "in_progress", "blocked", "cancelled"],
  in_progress: ["in_progress", "open", "blocked", "done", "cancelled"],
  blocked: ["blocked", "open", "in_progress", "cancelled"],
  done: ["done"],
  cancelled: ["cancelled"],
};

export function canMove(from: ReferenceStatus, to: ReferenceStatus): boolean {
  return NEXT[from].includes(to);
}

/** One task as chat.py writes it, its twelve fields in its order. */
export interface ReferenceTask {
  id: string;
  channel: string;
  title: string;
  status: ReferenceStatus;
  owner: string | null;
  created_by: string;
  depends_on: string[];
  files_hint: string[];
  acceptance: string[];
  lease_expires_at: string | null;
  branch: string | null;
  updated_at: string;
}

const TASK_FIELDS = [
  "id",
  "channel",
  "title",
  "status",
  "owner",
  "created_by",
  "depends_on",
  "files_hint",
  "acceptance",
  "lease_expires_at",
  "branch",
  "updated_at",
] as const;

/** One active task lease as chat.py writes it. */
export interface ReferenceClaim {
  task_id: string;
  channel: string;
  owner: string;
  lease_expires_at: string;
  claimed_at: string;
  updated_at: string;
  previous_owner: string | null;
  previous_lease_expires_at: string | null;
  recovery_reason: string | null;
}

const CLAIM_FIELDS = [
  "task_id",
  "channel",
  "owner",
  "lease_expires_at",
  "claimed_at",
  "updated_at",
  "previous_owner",
  "previous_lease_expires_at",
  "recovery_reason",
] as const;
/** The claim fields chat.py requires; the last three may be left out. */
const REQUIRED_CLAIM_FIELDS = 6;

/** chat.py's task ids, owners and channel names. */
export const REFERENCE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const CONTROL = /[\0\r\n]/;

/** Why a record does not validate, with chat.py's error code (`reference`). */
export class RecordProblem extends Error {
  constructor(
    readonly reference: string,
    readonly detail: string,
  ) {
    super(referenceMessage(reference, detail));
  }

  /** The problem as one of our errors, `code`, that carries chat.py's code. */
  as(code: ErrorCode): AgentChatError {
    return referenceError(code, this.reference, this.detail);
  }
}

function problem(code: string, message: string): never {
  throw new RecordProblem(code, message);
}

function text(value: unknown, field: string, code: string, allowEmpty = false): string {
  if (typeof value !== "string") problem(code, `${field} must be a string`);
  if (!allowEmpty && value.trim() === "") problem(code, `${field} must not be empty`);
  if (CONTROL.test(value)) problem(code, `${field} contains a forbidden control character`);
  return value;
}

function optionalText(value: unknown, field: string, code: string): string | null {
  return value === null ? null : text(value, field, code);
}

function id(value: unknown, field: string, code: string): string {
  if (typeof value !== "string" || !REFERENCE_ID.test(value)) {
    problem(code, `${field} must contain only letters, digits, '.', '_' or '-'`);
  }
  return value;
}

/** An ISO-8601 time with an explicit offset, as chat.py requires; its instant in ms. */
export function parseTime(value: unknown, field: string, code: string): number {
  const ok =
    typeof value === "string" &&
    /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,6})?)?([+-]\d\d:\d\d|[Zz])$/.test(value.trim());
  const ms = ok ? Date.parse(value.trim()) : Number.NaN;
  if (Number.isNaN(ms)) problem(code, `${field} must be ISO-8601 with an explicit UTC offset`);
  return ms;
}

function optionalTime(value: unknown, field: string, code: string): string | null {
  if (value === null) return null;
  parseTime(value, field, code);
  return value as string;
}

/** A workspace-relative path hint: no absolute path, drive, ':' or '..' (chat.py's rules). */
function pathHint(value: unknown): string {
  const bad = (why: string) =>
    problem("TASK_PATH_OUTSIDE_WORKSPACE", `files_hint path ${JSON.stringify(value)} (${why})`);
  if (typeof value !== "string" || value === "" || value.includes("\0")) bad("invalid path text");
  const portable = (value as string).replaceAll("\\", "/");
  if (portable.startsWith("/") || /^[A-Za-z]:/.test(portable))
    bad("absolute paths are not allowed");
  if (portable.includes(":")) bad("path names may not contain ':'");
  if (portable.split("/").includes("..")) bad("parent traversal is not allowed");
  return value as string;
}

function list(value: unknown, field: string, each: (item: unknown) => string): string[] {
  if (!Array.isArray(value))
    problem(`TASK_INVALID_${field.toUpperCase()}`, `${field} must be a JSON array`);
  return value.map(each);
}

function exactFields(value: unknown, fields: readonly string[], required: number, kind: string) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problem(`${kind}_INVALID_RECORD`, `${kind.toLowerCase()} record must be a JSON object`);
  }
  const keys = Object.keys(value);
  const missing = fields.slice(0, required).filter((f) => !keys.includes(f));
  if (missing.length > 0) {
    problem(`${kind}_REQUIRED_FIELD_MISSING`, `required field missing: ${missing.join(", ")}`);
  }
  const unknown = keys.filter((k) => !fields.includes(k));
  if (unknown.length > 0) problem(`${kind}_UNKNOWN_FIELD`, `unknown fields: ${unknown.join(", ")}`);
  return value as Record<string, unknown>;
}

/** A task record as chat.py validates it; throws {@link RecordProblem}. */
export function validateTask(value: unknown): ReferenceTask {
  const v = exactFields(value, TASK_FIELDS, TASK_FIELDS.length, "TASK");
  if (!STATUSES.includes(v.status as ReferenceStatus)) {
    problem("TASK_INVALID_STATUS", `unknown task status: ${JSON.stringify(v.status)}`);
  }
  const depends = list(v.depends_on, "depends_on", (d) =>
    id(d, "dependency", "TASK_INVALID_DEPENDENCY_ID"),
  );
  if (new Set(depends).size !== depends.length) {
    problem("TASK_DUPLICATE_DEPENDENCY", "a dependency is listed more than once");
  }
  return {
    id: id(v.id, "id", "TASK_INVALID_ID"),
    channel: id(v.channel, "channel", "TASK_INVALID_CHANNEL"),
    title: text(v.title, "title", "TASK_INVALID_TITLE", true),
    status: v.status as ReferenceStatus,
    owner: optionalText(v.owner, "owner", "TASK_INVALID_OWNER"),
    created_by: text(v.created_by, "created_by", "TASK_INVALID_CREATED_BY"),
    depends_on: depends,
    files_hint: list(v.files_hint, "files_hint", pathHint),
    acceptance: list(v.acceptance, "acceptance", (a) =>
      text(a, "acceptance item", "TASK_INVALID_ACCEPTANCE"),
    ),
    lease_expires_at: optionalTime(
      v.lease_expires_at,
      "lease_expires_at",
      "TASK_INVALID_TIMESTAMP",
    ),
    branch: optionalText(v.branch, "branch", "TASK_INVALID_BRANCH"),
    updated_at:
      optionalTime(v.updated_at, "updated_at", "TASK_INVALID_TIMESTAMP") ??
      problem("TASK_INVALID_TIMESTAMP", "updated_at must be an ISO-8601 string"),
  };
}

/** A claim record as chat.py validates it; throws {@link RecordProblem}. */
export function validateClaim(value: unknown): ReferenceClaim {
  const v = exactFields(value, CLAIM_FIELDS, REQUIRED_CLAIM_FIELDS, "LEASE");
  const time = (f: string) => {
    parseTime(v[f], f, "LEASE_INVALID_TIMESTAMP");
    return v[f] as string;
  };
  const optionalTime = (f: string) => (v[f] === undefined || v[f] === null ? null : time(f));
  const maybe = (f: string) => (v[f] === undefined ? null : v[f]);
  const previousOwner = maybe("previous_owner");
  const reason = maybe("recovery_reason");
  return {
    task_id: id(v.task_id, "task_id", "LEASE_INVALID_TASK_ID"),
    channel: id(v.channel, "channel", "LEASE_INVALID_CHANNEL"),
    owner: id(v.owner, "owner", "LEASE_INVALID_OWNER"),
    lease_expires_at: time("lease_expires_at"),
    claimed_at: time("claimed_at"),
    updated_at: time("updated_at"),
    previous_owner:
      previousOwner === null ? null : id(previousOwner, "previous_owner", "LEASE_INVALID_OWNER"),
    previous_lease_expires_at: optionalTime("previous_lease_expires_at"),
    recovery_reason:
      reason === null ? null : text(reason, "recovery_reason", "LEASE_INVALID_REASON"),
  };
}

/** A task record as chat.py writes one: its field order, two spaces, a final newline. */
export function formatTask(task: ReferenceTask): string {
  return `${JSON.stringify(Object.fromEntries(TASK_FIELDS.map((f) => [f, task[f]])), null, 2)}\n`;
}

export function formatClaim(claim: ReferenceClaim): string {
  return `${JSON.stringify(Object.fromEntries(CLAIM_FIELDS.map((f) => [f, claim[f]])), null, 2)}\n`;
}

/** The value with every object's keys sorted, as Python's `sort_keys=True` orders them. */
export function withSortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withSortedKeys);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([k, v]) => [k, withSortedKeys(v)]));
}

/** JSON with every object's keys sorted, as chat.py writes its journal and audit bodies. */
export function sortedJson(value: unknown): string {
  return JSON.stringify(withSortedKeys(value), null, 2);
}

/** chat.py's form of a time it computes (microseconds, `+00:00`). */
export function referenceTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000+00:00");
}

/** The fields whose values differ between two records, sorted (chat.py's `changed_fields`). */
export function changedFields(before: ReferenceTask, after: ReferenceTask): string[] {
  return TASK_FIELDS.filter((f) => JSON.stringify(before[f]) !== JSON.stringify(after[f])).sort();
}

/** chat.py's `now_iso()`: local time to the second, with its offset (`+02:00`, `+00:00`). */
export function localIso(ms: number): string {
  const date = new Date(ms);
  const offset = -date.getTimezoneOffset();
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
  const abs = Math.abs(offset);
  const hhmm = `${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  return `${local}${offset < 0 ? "-" : "+"}${hhmm}`;
}
