/**
 * Path leases (docs/leases.md): an agent reserves the files it is about to change by pattern, and
 * a lease that overlaps another agent's live one is refused. This folder is the whole feature:
 * the rules (path-leases.ts), the git guard's scan (blocked-paths.ts), its hook into post, read
 * and wait (extension.ts: renewal by activity), the `lease`, `leases` and `guard` commands
 * (cli.ts, cli-guard.ts) and the MCP tool (mcp.ts). A backend only stores the lease document;
 * the document, the patterns' grammar and their overlap are in store/records/, where a backend
 * reads them.
 */

export { type Blocked, blockedPaths } from "./blocked-paths.js";
export { pathLeaseExtension } from "./extension.js";
export { PathLeaseBook } from "./path-leases.js";
