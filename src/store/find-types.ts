import type { Message } from "../core/message.js";

/** What `store.search` looks in and for (docs/search.md has the query syntax). */
export interface SearchOptions {
  /** Only these channels (default: every channel of the root). */
  channels?: readonly string[];
  /** Only messages from this agent. */
  from?: string;
  /** Only messages addressed to this agent by name (broadcasts are not "to" anyone). */
  to?: string;
  /** Only messages with this status (`proposal`, `done`, …). */
  status?: string;
  /** Only messages stamped at or after this time: ISO-8601 (`2026-11-01`, …) or `30d`, `12h` ago. */
  since?: string;
  /** Only messages stamped at or before this time (same forms as `since`). */
  until?: string;
  /** The most hits returned, newest first (default 20, at most 1,000). */
  limit?: number;
  /** Include archived messages (`agent-chat archive`). */
  archived?: boolean;
}

export interface SearchHit {
  channel: string;
  seq: number;
  from: string;
  to: string;
  ts: string;
  status: string;
  title: string;
  /** The title with the terms it matches between `⟦` and `⟧`. */
  markedTitle: string;
  replyTo?: number;
  /** Some of the body around the first match, the matched words between `⟦` and `⟧`. */
  snippet: string;
  /** The message was found in the channel's archive. */
  archived?: boolean;
}

export interface SearchResult {
  /** Newest first, at most `limit`. */
  hits: SearchHit[];
  /** How many messages matched in all (hits is cut to the limit). */
  total: number;
  /** Channels that could not be searched, and why (one bad channel never hides the others). */
  warnings: string[];
}

export interface PeekOptions {
  /** When the hot messages are fewer than asked for, the newest archived ones before them. */
  archived?: boolean;
  /**
   * Only messages numbered below this one: the page before a page already read (how a whole
   * channel is read, page by page: src/store/paging.ts).
   */
  before?: number;
}

export interface ThreadOptions {
  /** Include archived messages (a thread whose root was archived is then whole again). */
  archived?: boolean;
}

/** One message of a thread with the replies to it, oldest first. */
export interface ThreadNode {
  message: Message;
  replies: ThreadNode[];
  /** The message was found in the channel's archive (`archived` option). */
  archived?: true;
}

export interface ArchiveOptions {
  /** Archive messages with a seq below this. */
  before?: number;
  /** Archive messages stamped more than this many ms ago. */
  olderThanMs?: number;
  /** Say what would move, move nothing. */
  dryRun?: boolean;
  /** NATS: the folder what is dropped is exported to first (`<exportTo>/<channel>/`). */
  exportTo?: string;
}

export interface ArchiveResult {
  channel: string;
  /** The seqs moved (or that would move), ascending. */
  moved: number[];
  /** Where they went, relative to the channel folder (`_archive/2026-11`, …). */
  folders: string[];
  /** The newest message always stays, so that chat.py numbers on from it. */
  kept?: number;
  dryRun: boolean;
}

export interface PruneOptions {
  /** Agents whose cursor (and presence) files were last touched more than this many ms ago. */
  olderThanMs: number;
  dryRun?: boolean;
}

export interface PrunedAgent {
  channel: string;
  agent: string;
  /** The files removed (or that would be), relative to the channel folder. */
  files: string[];
  lastSeen: string;
}

/** A presence record (`.presence/<agent>.json`) of an agent not seen for that long. */
export interface PrunedPresence {
  agent: string;
  /** Relative to the root. */
  file: string;
  lastSeen: string;
}

export interface PruneResult {
  removed: PrunedAgent[];
  /** Presence records removed (or that would be), store-wide. */
  presence: PrunedPresence[];
  dryRun: boolean;
}
