/** What the folder store shares on disk with the reference chat.py 0.7 (docs/leases.md). */

// The board is imported where it is used (`import()`): a channel without chat.py's task files
// never loads it.
export type { Board, BoardHost } from "./board.js";
export { hasClaims, hasStructuredTask, hasTaskRecords } from "./looks.js";
export { PATH_LOCKS_MUTEX, TASKS_MUTEX, withPathLocksMutex } from "./mutex.js";
export { LOCKS_DIR, referenceLocks, syncReferenceLocks } from "./path-locks.js";
