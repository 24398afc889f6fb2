/** The logic above the backends: what every backend shares, written once. */
export { BackendStore, type Feed, type SafetyNet, type Scan } from "./backend-store.js";
export { MAX_FRONTMATTER_BYTES, type PostDraft, renderMessage } from "./draft.js";
export {
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
