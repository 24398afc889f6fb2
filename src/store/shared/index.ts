/**
 * The message core: the logic every backend shares, written once (docs/architecture.md). It
 * knows no feature; a feature hooks into post, read and wait through {@link StoreExtension}.
 */
export {
  BackendStore,
  type CursorMove,
  corruptCursor,
  type Feed,
  type SafetyNet,
  type Scan,
} from "./backend-store.js";
export { MAX_FRONTMATTER_BYTES, type PostDraft, renderMessage } from "./draft.js";
export {
  type ParkingWait,
  renewWhileParked,
  type StoreExtension,
  type WaitEnd,
  type WaitHooks,
} from "./extension.js";
export { refuseNotHolder } from "./holder.js";
export { pastGrace, SKEW_GRACE_MS } from "./skew.js";
export {
  isStoredCount,
  storedCount,
  storedJson,
  storedRecord,
} from "./stored.js";
export {
  channelTtl,
  checkTtl,
  formatLease,
  formatTask,
  HOLDER,
  type Lease,
  leaseFileName,
  parseLease,
  parseTaskFile,
  TASK_FILE,
  type TaskRecord,
  taskFileName,
} from "./tasks.js";
export { flattenThread } from "./thread.js";
export { abortError, Wakeup } from "./wakeup.js";
