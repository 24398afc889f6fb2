import { join } from "node:path";
import { entryKind, listRealDir, readRootTextSync } from "../../../../fsutil/root-files.js";
import { readTasks } from "../files.js";
import { parseTime, REFERENCE_ID, type ReferenceTask, TASKS_DIR } from "../records.js";
import { pyStrip } from "./messages.js";

/**
 * The records chat.py 0.7's `state` summarises besides the messages: the channel's
 * `_meta.json`, its tasks and its path locks. Each read as untrusted (no link followed, sizes
 * capped); what does not validate is left out and named in `problems`, as chat.py's lenient
 * summary leaves it out (its `--strict` refuses the whole summary instead).
 */

export interface MetaFields {
  topic: string;
  members: string[];
  created_at: string;
}

/** One path lock as chat.py's `state --json` prints it. */
export interface LockRecord {
  lock_id: string;
  channel: string;
  owner: string;
  paths: { normalized_path: string; display_path: string; kind: string }[];
  expires_at: string;
  locked_at: string;
  updated_at: string;
  previous_owner: string | null;
  previous_expires_at: string | null;
  recovery_reason: string | null;
}

const MAX_RECORD_BYTES = 256 * 1024;
const MAX_LOCKS = 1_000;
const LOCKS_DIR = "locks";
const LOCK_TRANSACTION = ".path-lock-transaction.json";
const LOCK_FIELDS = [
  "lock_id",
  "channel",
  "owner",
  "paths",
  "expires_at",
  "locked_at",
  "updated_at",
  "previous_owner",
  "previous_expires_at",
  "recovery_reason",
];

/** Python's `str()` of a JSON value, for the meta fields chat.py converts so. */
function pyStr(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return String(value);
  return JSON.stringify(value);
}

/** `_meta.json` (else `meta.json`): its topic, members and `created_at`, as chat.py reads them. */
export function readMetaFields(dir: string, problems: string[]): MetaFields {
  const fields: MetaFields = { topic: "", members: [], created_at: "" };
  const name = entryKind(join(dir, "_meta.json")) ? "_meta.json" : "meta.json";
  if (!entryKind(join(dir, name))) return fields;
  let raw: unknown;
  try {
    raw = JSON.parse(readRootTextSync(join(dir, name), MAX_RECORD_BYTES));
  } catch (err) {
    problems.push(`STATE_MALFORMED_SOURCE: ${name} cannot be read (${(err as Error).message})`);
    return fields;
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    problems.push(`STATE_INVALID_RECORD: ${name} must be a JSON object`);
    return fields;
  }
  const meta = raw as Record<string, unknown>;
  fields.topic = meta.topic ? pyStr(meta.topic) : "";
  fields.created_at = meta.created_at ? pyStr(meta.created_at) : "";
  if (Array.isArray(meta.members)) {
    fields.members = meta.members.map((m) => pyStrip(pyStr(m))).filter((m) => m !== "");
  }
  return fields;
}

/** The channel's tasks that validate (chat.py's rules), each bad one named in `problems`. */
export function readStateTasks(dir: string, channel: string, problems: string[]): ReferenceTask[] {
  if (entryKind(join(dir, TASKS_DIR)) === undefined) return [];
  const { tasks, problems: bad } = readTasks(dir, channel);
  problems.push(...bad.map((p) => `STATE_MALFORMED_SOURCE: ${p}`));
  return tasks.map((t) => t.value);
}

function lockPath(value: unknown): LockRecord["paths"][number] {
  const p = value as Record<string, unknown>;
  const ok =
    p !== null &&
    typeof p === "object" &&
    typeof p.normalized_path === "string" &&
    typeof p.display_path === "string" &&
    (p.kind === "file" || p.kind === "directory") &&
    p.normalized_path !== "" &&
    !p.normalized_path.startsWith("/") &&
    !p.normalized_path.split("/").includes("..");
  if (!ok) throw new Error("a path is not chat.py's {normalized_path, display_path, kind}");
  return {
    normalized_path: p.normalized_path as string,
    display_path: p.display_path as string,
    kind: p.kind as string,
  };
}

/** One `locks/<id>.json`, validated as chat.py validates it; throws with the reason. */
function parseLock(name: string, text: string, channel: string): LockRecord {
  const v = JSON.parse(text) as Record<string, unknown>;
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
  const unknown = Object.keys(v).filter((k) => !LOCK_FIELDS.includes(k));
  if (unknown.length > 0) throw new Error(`unknown fields: ${unknown.join(", ")}`);
  const nullable = (k: string) => (v[k] === undefined || v[k] === null ? null : String(v[k]));
  for (const k of ["lock_id", "owner"]) {
    if (typeof v[k] !== "string" || !REFERENCE_ID.test(v[k] as string)) throw new Error(`bad ${k}`);
  }
  for (const k of ["expires_at", "locked_at", "updated_at"]) {
    parseTime(v[k], k, "PATH_LOCK_INVALID_TIMESTAMP");
  }
  if (v.channel !== channel) throw new Error(`lock channel ${String(v.channel)} is not ${channel}`);
  if (name !== `${v.lock_id}.json`) throw new Error("lock id does not match its file name");
  if (!Array.isArray(v.paths) || v.paths.length === 0) throw new Error("no paths");
  return {
    lock_id: v.lock_id as string,
    channel,
    owner: v.owner as string,
    paths: v.paths.map(lockPath),
    expires_at: v.expires_at as string,
    locked_at: v.locked_at as string,
    updated_at: v.updated_at as string,
    previous_owner: nullable("previous_owner"),
    previous_expires_at: nullable("previous_expires_at"),
    recovery_reason: nullable("recovery_reason"),
  };
}

/**
 * The channel's path locks, expired ones too, by id. chat.py lists them all or none: one record
 * that does not validate, or a path-lock change that died half-way, and its summary has none.
 */
export function readStateLocks(dir: string, channel: string, problems: string[]): LockRecord[] {
  const locks = join(dir, LOCKS_DIR);
  if (entryKind(locks) !== "dir") return [];
  if (entryKind(join(locks, LOCK_TRANSACTION)) !== undefined) {
    problems.push(
      "PATH_LOCK_TRANSACTION_PENDING: a path-lock change died half-way; no locks listed",
    );
    return [];
  }
  const names = listRealDir(locks)
    .map((e) => e.name)
    .filter((n) => n.endsWith(".json") && !/^[._]/.test(n))
    .sort()
    .slice(0, MAX_LOCKS);
  const out: LockRecord[] = [];
  for (const name of names) {
    try {
      out.push(parseLock(name, readRootTextSync(join(locks, name), MAX_RECORD_BYTES), channel));
    } catch (err) {
      problems.push(
        `STATE_MALFORMED_SOURCE: PATH_LOCK_INVALID_RECORD: ${LOCKS_DIR}/${name}: ${(err as Error).message}; no locks listed`,
      );
      return [];
    }
  }
  return out;
}
