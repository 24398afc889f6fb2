/**
 * Path leases (docs/leases.md): an agent reserves the files it is about to change by pattern, and
 * a lease that overlaps another agent's live one is refused. This folder is the whole feature:
 * the rules (path-leases.ts), the patterns and their overlap (path-globs.ts), its hook into post,
 * read and wait (extension.ts: renewal by activity), the `lease`, `leases` and `guard` commands
 * (cli.ts, cli-guard.ts) and the MCP tool (mcp.ts). A backend only stores the lease document.
 */
export { pathLeaseExtension } from "./extension.js";
export {
  type Blocked,
  blockedPaths,
  canonicalPath,
  type LockedPath,
  lockedPath,
  normalizePattern,
  patternsOverlap,
  staticBase,
} from "./path-globs.js";
export {
  formatPathLeases,
  ownedBy,
  PATH_LEASES_FILE,
  type PathLease,
  PathLeaseBook,
  type PathLeaseDoc,
  type PathLeaseRecord,
  type PathLeaseStorage,
  parsePathLeases,
  pathLeaseLive,
  recordId,
} from "./path-leases.js";
