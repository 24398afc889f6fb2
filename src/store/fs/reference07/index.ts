/** What the folder store shares on disk with the reference chat.py 0.7 (docs/leases.md). */

export { Board, type BoardHost, hasClaims, hasStructuredTask } from "./board.js";
export {
  changeReferenceLock,
  type LockHost,
  lockInfo,
  refuseWhilePending,
} from "./lock-changes.js";
export { PATH_LOCKS_MUTEX, TASKS_MUTEX, withPathLocksMutex } from "./mutex.js";
export { recoverPendingPathLock } from "./path-lock-pending.js";
export {
  LOCKS_DIR,
  type LockRecord,
  referenceLocks,
  syncReferenceLocks,
} from "./path-locks.js";
