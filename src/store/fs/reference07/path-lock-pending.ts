import { join } from "node:path";
import { referenceError } from "../../../core/errors.js";
import {
  entryKind,
  readRootTextSync,
  removeFileEntry,
  replaceFile,
} from "../../../fsutil/root-files.js";
import type { PendingRecovery } from "../../types.js";
import { recordFolder } from "./files.js";
import { decodeBytes, published } from "./journals.js";
import { parseLock } from "./lock-records.js";
import { withPathLocksMutex } from "./mutex.js";
import { REFERENCE_ID } from "./records.js";

/**
 * chat.py 0.7's `recover-pending` of a path-lock change (`lock`, `unlock`, `recover`) that died
 * half-way, its journal `locks/.path-lock-transaction.json` left behind: while it is there,
 * chat.py refuses every lock change of the channel. One lock record is at stake: it is put back
 * as it was, or, when the change's `path.locked` message was posted, kept and the journal
 * removed. Unlike chat.py, the bytes put back must be a lock record of that id that validates:
 * a planted journal cannot write a lock of its choosing.
 */

const LOCKS_DIR = "locks";
const JOURNAL = ".path-lock-transaction.json";
const MAX_BYTES = 256 * 1024;

function invalid(message: string): never {
  throw referenceError("TASK_INCONSISTENT", "PATH_LOCK_TRANSACTION_INVALID", message);
}

interface Journal {
  transactionId: string;
  phase: string;
  event: string;
  lockId: string;
  before: string | undefined;
  after: string | undefined;
}

function readJournal(dir: string, channel: string): Journal | undefined {
  const path = join(recordFolder(dir, LOCKS_DIR), JOURNAL);
  if (entryKind(path) === undefined) return undefined;
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(readRootTextSync(path, MAX_BYTES));
  } catch (err) {
    return invalid(`could not read the journal (${(err as Error).message})`);
  }
  const target = typeof j?.target === "string" ? j.target.replaceAll("\\", "/") : "";
  const name = /^(?:locks\/)?([^/]+)\.json$/.exec(target)?.[1] ?? "";
  const shaped =
    (j.version === 1 || j.version === 2) &&
    ["prepared", "applied", "published"].includes(j.phase as string) &&
    typeof j.transaction_id === "string" &&
    REFERENCE_ID.test(j.transaction_id) &&
    ["lock", "unlock", "recover"].includes(j.operation as string) &&
    typeof j.actor === "string" &&
    "before" in j &&
    "after" in j;
  if (!shaped) invalid("the journal has an unsupported shape");
  if (!REFERENCE_ID.test(name)) invalid(`target ${JSON.stringify(j.target)} is not a lock record`);
  const journal: Journal = {
    transactionId: j.transaction_id as string,
    phase: j.phase as string,
    event: String(j.event),
    lockId: name,
    before: decodeBytes(j.before, "before", invalid),
    after: decodeBytes(j.after, "after", invalid),
  };
  for (const [what, text] of [
    ["before", journal.before],
    ["after", journal.after],
  ] as const) {
    if (text === undefined) continue;
    try {
      const lock = parseLock(`${name}.json`, text, channel);
      if (lock.lock_id !== name) throw new Error("another lock's record");
    } catch (err) {
      invalid(`${what} is not lock ${name}'s record (${(err as Error).message})`);
    }
  }
  return journal;
}

/** Whether to put the record back or keep it, as chat.py decides. */
function resolution(dir: string, j: Journal, resolve?: "rollback" | "published") {
  if (resolve !== undefined) {
    if (j.phase === "prepared") {
      invalid("--resolve-publication applies only to a change in phase applied or published");
    }
    return resolve;
  }
  const posted =
    j.phase === "published" || (j.phase === "applied" && published(dir, j.transactionId));
  return posted ? "published" : "rollback";
}

/** Recovers the channel folder `dir`'s pending path-lock change, under chat.py's mutex. */
export function recoverPendingPathLock(
  dir: string,
  channel: string,
  resolve?: "rollback" | "published",
): Promise<PendingRecovery> {
  return withPathLocksMutex(dir, async () => {
    const j = readJournal(dir, channel);
    if (!j) return { event: "", recovery: "none" };
    const locks = join(dir, LOCKS_DIR);
    const file = join(locks, `${j.lockId}.json`);
    const how = resolution(dir, j, resolve);
    if (how === "published") {
      const current = entryKind(file) === undefined ? undefined : readRootTextSync(file, MAX_BYTES);
      if (current !== j.after) invalid("the published change does not match the lock record");
    } else if (j.before === undefined) removeFileEntry(file);
    else await replaceFile(locks, `${j.lockId}.json`, j.before);
    removeFileEntry(join(locks, JOURNAL));
    return {
      lock: j.lockId,
      event: j.event,
      recovery: how === "published" ? "cleanup" : "rollback",
    };
  });
}
