/**
 * Search and retention (docs/search.md): find messages across channels by words, sender, age
 * and status; archive old messages and prune what gone agents left. This folder is the whole
 * feature: the query language (search-query.ts), the postings lists (postings.ts), the searcher
 * (search.ts, loaded by the first search), the prune and archive rules (retention.ts), the
 * `search`, `thread`, `archive` and `prune` commands (cli.ts) and the MCP part (mcp.ts). A backend
 * keeps its own index and archive (store/fs/search-index.ts, store/fs/archive.ts).
 */
export { intersect, union } from "./postings.js";
export {
  agentsToKeep,
  checkArchiveOptions,
  checkPruneOptions,
  type PresenceEntry,
} from "./retention.js";
export type { Candidate, MessageMeta, Searcher, SearchSource } from "./search.js";
export { matchMessage, parseAge, parseQuery, type Term, words } from "./search-query.js";

/** The searcher's code, read by the first search only: a post, read or hook never loads it. */
export function loadSearcher(): Promise<typeof import("./search.js")> {
  return import("./search.js");
}
