import { join } from "node:path";
import { type AgentChatError, referenceError, referenceMessage } from "../../../../core/errors.js";
import { entryKind, listRealDir, readRootTextSync } from "../../../../fsutil/root-files.js";
import { readTasks } from "../files.js";
import { type LockRecord, parseLock } from "../lock-records.js";
import { type ReferenceTask, TASKS_DIR } from "../records.js";
import { pyStrip } from "./messages.js";

/**
 * The records chat.py 0.7's `state` summarises besides the messages: the channel's
 * `_meta.json`, its tasks and its path locks. Each read as untrusted (no link followed, sizes
 * capped); what does not validate is left out and named in `problems`, as chat.py's lenient
 * summary leaves it out (its `--strict` refuses the whole summary instead).
 */

export type { LockRecord };

export interface MetaFields {
  topic: string;
  members: string[];
  created_at: string;
}

const MAX_RECORD_BYTES = 256 * 1024;
const MAX_LOCKS = 1_000;
const LOCKS_DIR = "locks";
const LOCK_TRANSACTION = ".path-lock-transaction.json";

/** A source left out of the summary, as the error `--strict` refuses it with. */
function source(reference: string, text: string): AgentChatError {
  return referenceError("TASK_INCONSISTENT", reference, text);
}

/** Python's `str()` of a JSON value, for the meta fields chat.py converts so. */
function pyStr(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return String(value);
  return JSON.stringify(value);
}

/** `_meta.json` (else `meta.json`): its topic, members and `created_at`, as chat.py reads them. */
export function readMetaFields(dir: string, problems: AgentChatError[]): MetaFields {
  const fields: MetaFields = { topic: "", members: [], created_at: "" };
  const name = entryKind(join(dir, "_meta.json")) ? "_meta.json" : "meta.json";
  if (!entryKind(join(dir, name))) return fields;
  let raw: unknown;
  try {
    raw = JSON.parse(readRootTextSync(join(dir, name), MAX_RECORD_BYTES));
  } catch (err) {
    problems.push(
      source("STATE_MALFORMED_SOURCE", `${name} cannot be read (${(err as Error).message})`),
    );
    return fields;
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    problems.push(source("STATE_INVALID_RECORD", `${name} must be a JSON object`));
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
export function readStateTasks(
  dir: string,
  channel: string,
  problems: AgentChatError[],
): ReferenceTask[] {
  if (entryKind(join(dir, TASKS_DIR)) === undefined) return [];
  const { tasks, problems: bad } = readTasks(dir, channel);
  problems.push(...bad.map((p) => source("STATE_MALFORMED_SOURCE", p)));
  return tasks.map((t) => t.value);
}

/**
 * The channel's path locks, expired ones too, by id. chat.py lists them all or none: one record
 * that does not validate, or a path-lock change that died half-way, and its summary has none.
 */
export function readStateLocks(
  dir: string,
  channel: string,
  problems: AgentChatError[],
): LockRecord[] {
  const locks = join(dir, LOCKS_DIR);
  if (entryKind(locks) !== "dir") return [];
  if (entryKind(join(locks, LOCK_TRANSACTION)) !== undefined) {
    problems.push(
      source("PATH_LOCK_TRANSACTION_PENDING", "a path-lock change died half-way; no locks listed"),
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
        source(
          "STATE_MALFORMED_SOURCE",
          referenceMessage(
            "PATH_LOCK_INVALID_RECORD",
            `${LOCKS_DIR}/${name}: ${(err as Error).message}; no locks listed`,
          ),
        ),
      );
      return [];
    }
  }
  return out;
}
