/** The logic above the backends: what every backend shares, written once. */

export { actingFor, currentActor } from "../../features/delivery/acting.js";
export type { Note, NoteKind } from "../../features/delivery/delivery.js";
export { pollReceipts } from "../../features/delivery/delivery-queries.js";
export type { Actor } from "../../features/delivery/presence.js";
export { owedBy } from "../../features/delivery/receipts.js";
export { type Blocked, blockedPaths, staticBase } from "../../features/leases/path-globs.js";
export {
  formatPathLeases,
  PATH_LEASES_FILE,
  type PathLease,
  type PathLeaseDoc,
  type PathLeaseRecord,
  parsePathLeases,
  pathLeaseLive,
} from "../../features/leases/path-leases.js";
export { intersect, union } from "../../features/search/postings.js";
export {
  agentsToKeep,
  checkArchiveOptions,
  checkPruneOptions,
  type PresenceEntry,
} from "../../features/search/retention.js";
export type { Candidate, MessageMeta } from "../../features/search/search.js";
export {
  matchMessage,
  parseAge,
  parseQuery,
  type Term,
  words,
} from "../../features/search/search-query.js";
export {
  BackendStore,
  type Feed,
  type PresenceOptions,
  type SafetyNet,
  type Scan,
} from "./backend-store.js";
export { MAX_FRONTMATTER_BYTES, type PostDraft, renderMessage } from "./draft.js";
export { pastGrace, SKEW_GRACE_MS } from "./skew.js";
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
export { flattenThread } from "./thread.js";
