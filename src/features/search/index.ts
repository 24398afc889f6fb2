/**
 * Search and retention (docs/search.md): find messages across channels by words, sender, age
 * and status; archive old messages and prune what gone agents left. This folder is the whole
 * feature: the query language (search-query.ts), the searcher (search.ts, loaded by the first
 * search), the rule of whom prune keeps (retention.ts), the `search`, `thread`, `archive` and
 * `prune` commands (cli.ts) and the MCP part (mcp.ts). How a term matches, the postings lists and
 * the archive and prune option checks are in store/records/, for a backend's own index and
 * archive use them too (store/fs/search-index.ts, store/fs/archive.ts, store/nats/retention.ts).
 */
export { agentsToKeep } from "./retention.js";
export type { Searcher, SearchSource } from "./search.js";
export { parseAge, parseQuery } from "./search-query.js";

/** The searcher's code, read by the first search only: a post, read or hook never loads it. */
export function loadSearcher(): Promise<typeof import("./search.js")> {
  return import("./search.js");
}
