/** What the folder store shares on disk with the reference chat.py 0.7 (docs/leases.md). */

// The board is imported where it is used, by `import()` of this file: a channel without
// chat.py's task files never loads it (the lean CLI files bundle the looks, not the board).
export { Board, type BoardHost } from "./board.js";
export {
  type AppliedChange,
  applyChange,
  changeReferenceLock,
  type LockHost,
  lockInfo,
  publishChange,
  refuseWhilePending,
} from "./lock-changes.js";
export { leasePattern } from "./lock-records.js";
export { hasClaims, hasStructuredTask, hasTaskRecords } from "./looks.js";
export { PATH_LOCKS_MUTEX, TASKS_MUTEX, withPathLocksMutex } from "./mutex.js";
export { recoverPendingPathLock } from "./path-lock-pending.js";
export {
  LOCKS_DIR,
  type LockRecord,
  markRecorded,
  type RecordChange,
  referenceLocks,
  syncReferenceLocks,
  withoutEndedByReference,
} from "./path-locks.js";
