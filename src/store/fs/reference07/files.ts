import { join } from "node:path";
import { AgentChatError, referenceError } from "../../../core/errors.js";
import {
  entryKind,
  listRealDir,
  readRootTextSync,
  unsafeEntry,
} from "../../../fsutil/root-files.js";
import {
  CLAIMS_DIR,
  RecordProblem,
  type ReferenceClaim,
  type ReferenceTask,
  TASKS_DIR,
  validateClaim,
  validateTask,
} from "./records.js";

/** Larger records than chat.py ever writes are planted: refused unread. */
const MAX_RECORD_BYTES = 256 * 1024;
const MAX_RECORDS = 10_000;

/** A record read from the root: its validated value and the exact text (for a rollback). */
export interface Read<T> {
  value: T;
  text: string;
}

/**
 * A record's failure to read as a `TASK_INCONSISTENT`, with chat.py's code where it has one
 * (`TASK_INVALID_RECORD` or `LEASE_INVALID_RECORD`, by `family`, when it does not parse).
 */
function unreadable(path: string, err: unknown, family: "TASK" | "LEASE"): AgentChatError {
  if (err instanceof RecordProblem) return err.as("TASK_INCONSISTENT");
  if (err instanceof AgentChatError) {
    return new AgentChatError("TASK_INCONSISTENT", err.message, {
      reference: err.reference,
      cause: err,
    });
  }
  const reference = `${family}_INVALID_RECORD`;
  if (err instanceof SyntaxError) {
    return referenceError("TASK_INCONSISTENT", reference, `${path} is not JSON`);
  }
  const why = `${path} cannot be read (${(err as Error).message})`;
  return referenceError("TASK_INCONSISTENT", reference, why);
}

/**
 * The record folder `sub` (tasks/, claims/, locks/) of the channel folder `dir`, to read or
 * write a record in. A link there would carry every record read or written through it out of the
 * channel (the files of a link's target are someone else's): UNSAFE_FILE, as for anything but a
 * real folder. A folder not made yet passes (its records are absent; a write makes it real).
 */
export function recordFolder(dir: string, sub: string): string {
  const folder = join(dir, sub);
  const kind = entryKind(folder);
  if (kind !== undefined && kind !== "dir") throw unsafeEntry(folder, "is not a real folder");
  return folder;
}

/** The JSON record files of `dir` (a real folder, else none), as chat.py lists them. */
function recordNames(dir: string): string[] {
  if (entryKind(dir) !== "dir") return [];
  return listRealDir(dir)
    .filter((e) => e.name.endsWith(".json") && !/^[._]/.test(e.name))
    .map((e) => e.name)
    .sort()
    .slice(0, MAX_RECORDS);
}

/** One task record of the channel folder `dir`; undefined when there is none. Throws a problem. */
export function readTask(
  dir: string,
  channel: string,
  id: string,
): Read<ReferenceTask> | undefined {
  const path = join(recordFolder(dir, TASKS_DIR), `${id}.json`);
  if (entryKind(path) === undefined) return undefined;
  let text: string;
  let value: ReferenceTask;
  try {
    text = readRootTextSync(path, MAX_RECORD_BYTES);
    value = validateTask(JSON.parse(text));
  } catch (err) {
    throw unreadable(`${TASKS_DIR}/${id}.json`, err, "TASK");
  }
  if (value.id !== id) {
    throw referenceError(
      "TASK_INCONSISTENT",
      "TASK_RECORD_ID_MISMATCH",
      `${path} holds task ${value.id}`,
    );
  }
  if (value.channel !== channel) {
    throw referenceError(
      "TASK_INCONSISTENT",
      "TASK_CHANNEL_MISMATCH",
      `${path} is of channel ${value.channel}`,
    );
  }
  return { value, text };
}

/** Every task record that validates, and one line for each that does not. */
export function readTasks(
  dir: string,
  channel: string,
): { tasks: Read<ReferenceTask>[]; problems: string[] } {
  const tasks: Read<ReferenceTask>[] = [];
  const problems: string[] = [];
  for (const name of recordNames(join(dir, TASKS_DIR))) {
    try {
      const read = readTask(dir, channel, name.slice(0, -".json".length));
      if (read) tasks.push(read);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return { tasks, problems };
}

/**
 * The claims of task `id`. Any claim file that might be one of its (its name starts with
 * `<id>.`) and does not validate makes the task's lease unknowable: that is an error, so that
 * nothing is granted over a lease we cannot read.
 */
export function readClaims(dir: string, channel: string, id: string): Read<ReferenceClaim>[] {
  const claims = join(dir, CLAIMS_DIR);
  const out: Read<ReferenceClaim>[] = [];
  for (const name of recordNames(claims)) {
    if (!name.startsWith(`${id}.`)) continue;
    let read: Read<ReferenceClaim>;
    try {
      const text = readRootTextSync(join(claims, name), MAX_RECORD_BYTES);
      read = { value: validateClaim(JSON.parse(text)), text };
    } catch (err) {
      throw unreadable(`${CLAIMS_DIR}/${name}`, err, "LEASE");
    }
    const { value } = read;
    // A record that says it is another file's is planted or torn: this task's lease is unknown.
    if (name !== `${value.task_id}.${value.owner}.json` || value.channel !== channel) {
      throw referenceError(
        "TASK_INCONSISTENT",
        "LEASE_RECORD_ID_MISMATCH",
        `${CLAIMS_DIR}/${name} names task ${value.task_id} of ${value.owner} in ${value.channel}`,
      );
    }
    // `T1.x.bob.json` starts with `T1.` and is the claim of task `T1.x`.
    if (value.task_id !== id) continue;
    out.push(read);
  }
  return out;
}

/** The tasks whose claim file names `owner` (`<task>.<owner>.json`); none when unreadable. */
export function leasedBy(dir: string, owner: string): string[] {
  const suffix = `.${owner}.json`;
  try {
    return listRealDir(join(dir, CLAIMS_DIR))
      .filter((e) => e.kind === "file" && e.name.endsWith(suffix) && !/^[._]/.test(e.name))
      .map((e) => e.name.slice(0, -suffix.length));
  } catch {
    return [];
  }
}
