/**
 * The records a backend keeps for the features (src/features/), and the grammar it needs to
 * read them: declared here, below the features, so that a backend stores them in its own form
 * (files, KV keys) without importing a feature. The rules over them stay in each feature.
 */
export type { Note, NoteKind, NoteStore, PresenceOptions } from "./notes.js";
export {
  canonicalPath,
  coverage,
  type LockedPath,
  leaseMatcher,
  lockedPath,
  normalizePattern,
  patternsOverlap,
  underOrAt,
} from "./path-globs.js";
export {
  formatPathLeases,
  MAX_PATH_LEASES,
  MAX_REASON,
  ownedBy,
  PATH_LEASES_FILE,
  type PathLease,
  type PathLeaseDoc,
  type PathLeaseRecord,
  parsePathLeases,
  recordId,
} from "./path-leases.js";
export { intersect, Postings, union } from "./postings.js";
export { checkArchiveOptions, checkPruneOptions, type PresenceEntry } from "./retention.js";
export {
  type Candidate,
  findTerm,
  type MatchedText,
  type MessageMeta,
  matchMessage,
  type Span,
  type Term,
  tokenize,
  words,
} from "./text-match.js";
