/**
 * Search and retention (docs/search.md): find messages across channels by words, sender, age
 * and status; archive old messages and prune what gone agents left. This folder is the whole
 * feature: the query language (search-query.ts; how a term matches and the postings lists are
 * store/records/, for a backend's stored index matches with them too), the searcher
 * (search.ts, loaded by the first search), the rule of whom prune keeps (retention.ts; the options every backend checks are store/records/), the
 * `search`, `thread`, `archive` and `prune` commands (cli.ts) and the MCP part (mcp.ts). A backend
 * keeps its own index and archive (store/fs/search-index.ts, store/fs/archive.ts).
 */
export { agentsToKeep } from "./retention.js";
export type { Searcher, SearchSource } from "./search.js";
export { parseAge, parseQuery } from "./search-query.js";

/** The searcher's code, read by the first search only: a post, read or hook never loads it. */
export function loadSearcher(): Promise<typeof import("./search.js")> {
  return import("./search.js");
}
