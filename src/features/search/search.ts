import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import { type Message, parseTo } from "../../core/message.js";
import { identity, validateName } from "../../core/names.js";
import type { SearchHit, SearchOptions, SearchResult } from "../../store/find-types.js";
import {
  type Candidate,
  type MatchedText,
  type MessageMeta,
  matchMessage,
  Postings,
  type Term,
} from "../../store/records/index.js";
import { markedTitle, parseQuery, parseWhen, snippet } from "./search-query.js";

/** What the search needs from a backend: its channels and their messages, hot and archived. */
export interface SearchSource {
  /** Every channel name of the root (unreadable ones are the caller's warnings). */
  channelNames(): Promise<string[]>;
  /** Proves the channel exists (`CHANNEL_NOT_FOUND` otherwise). */
  roster(channel: string): Promise<unknown>;
  /**
   * The well-formed hot messages after `after`, and how far that got: a scan stops before a
   * file still being written (the newest, by chat.py, which writes in place); the next search
   * picks it up.
   */
  scan(channel: string, after: number): Promise<{ messages: Message[]; scannedTo: number }>;
  /** Whether a hot message with this seq is still there (it may have been archived since). */
  holds(channel: string): Promise<(seq: number) => boolean>;
  /** The channel's archived messages. */
  archived(channel: string): Promise<Message[]>;
  /**
   * From an index the backend keeps on disk (the folder store), the hot messages holding every
   * word of `terms`, a superset of the matches; undefined when it cannot tell (then a scan).
   */
  candidates?(channel: string, terms: Term[]): Promise<Candidate[] | undefined>;
}

export const DEFAULT_SEARCH_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 1_000;

interface Filters {
  terms: Term[];
  from?: string;
  to?: string;
  status?: string;
  since?: number;
  until?: number;
  limit: number;
}

/** One channel's in-memory index: its hot messages up to `scannedTo`, by position. */
interface ChannelIndex {
  postings: Postings;
  docs: Message[];
  scannedTo: number;
  /** Indexing runs one at a time per channel. */
  busy?: Promise<void>;
}

/**
 * Search, written once over a backend's scan (docs/design.md §4), so it means the same on the folder
 * store, NATS and through the daemon.
 *
 * Where the index lives: in this store object's memory, never on disk. A one-shot CLI command
 * searches once, and for that a straight scan is fastest (building an index of 100,000
 * messages costs seconds; reading them costs what `grep` costs), so the first search of a
 * store scans. A store that is asked again (the daemon, the MCP server, the viewer) builds an
 * inverted index per channel ({@link Postings}) on the second search and keeps it current by
 * scanning only what came after it: later queries cost milliseconds. Nothing is written into
 * the root, so nothing can go stale for chat.py, git or another process; and the index never
 * decides a hit on its own: every candidate is checked by the same matcher as the scan.
 */
export class Searcher {
  private searches = 0;
  private readonly indexes = new Map<string, ChannelIndex>();

  constructor(
    private readonly source: SearchSource,
    private readonly now: () => number,
  ) {}

  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    const filters = parseFilters(query, options, this.now());
    const warnings: string[] = [];
    const channels = await this.channelsOf(options, warnings);
    this.searches += 1;
    const matches: Found[] = [];
    for (const channel of channels) {
      try {
        matches.push(...(await this.searchChannel(channel, filters, options.archived === true)));
      } catch (err) {
        if (options.channels?.length || isAgentChatError(err, "BACKEND_UNAVAILABLE")) throw err;
        warnings.push(`channel ${channel}: ${(err as Error).message}; not searched`);
      }
    }
    matches.sort((a, b) => b.at - a.at || newestFirst(a, b));
    // An indexed hit may have been archived (or deleted) since by another process: each one
    // shown is looked up; the total counts those found gone among them out.
    const hits: SearchHit[] = [];
    let gone = 0;
    for (const entry of matches) {
      if (hits.length >= filters.limit) break;
      const hit = await confirm(entry, filters);
      if (hit) hits.push(hit);
      else gone++;
    }
    return { hits, total: matches.length - gone, warnings };
  }

  private async searchChannel(channel: string, filters: Filters, archived: boolean) {
    const stored = await this.storedMatches(channel, filters);
    if (stored) {
      if (archived) {
        for (const m of select(await this.source.archived(channel), filters, false)) {
          stored.push(found(m, true));
        }
      }
      return stored;
    }
    const hot = await this.hotCandidates(channel, filters.terms);
    const holds = hot.all ? undefined : await this.source.holds(channel);
    // The index matches words and prefixes exactly as the matcher does (the same words): when
    // it was asked for every term, its answer is the match; a snippet waits for the top hits.
    const out = select(hot.messages, filters, hot.complete).map((m) => found(m, false, holds));
    if (archived) {
      const seen = new Set(hot.all ? hot.messages.map((m) => m.seq) : []);
      const old = (await this.source.archived(channel)).filter((m) => !seen.has(m.seq));
      for (const m of select(old, filters, false)) out.push(found(m, true));
    }
    return out;
  }

  /**
   * A store's first search, through the backend's stored index when it keeps one: the matches
   * by what the index says, each read when shown. A query with a phrase reads every candidate
   * now (the index knows words, not their order), so that the total is exact.
   */
  private async storedMatches(channel: string, filters: Filters): Promise<Found[] | undefined> {
    if (this.searches > 1 || this.indexes.has(channel) || !this.source.candidates) return;
    const candidates = await this.source.candidates(channel, filters.terms);
    if (!candidates) return;
    const exact = filters.terms.every((t) => t.words.length === 1);
    const out: Found[] = [];
    for (const { meta, load } of candidates) {
      if (!passes(meta, filters)) continue;
      if (exact) {
        out.push({ meta, load, at: Date.parse(meta.ts) || 0, archived: false });
        continue;
      }
      const message = await load();
      if (message && passes(message, filters) && matchMessage(filters.terms, message)) {
        out.push(found(message, false));
      }
    }
    return out;
  }

  private async channelsOf(options: SearchOptions, warnings: string[]): Promise<string[]> {
    if (options.channels && options.channels.length > 0) {
      const unique = [...new Set(options.channels)];
      for (const channel of unique) {
        validateName("channel", channel);
        await this.source.roster(channel);
      }
      return unique;
    }
    const out: string[] = [];
    for (const name of await this.source.channelNames()) {
      try {
        await this.source.roster(name);
        out.push(name);
      } catch (err) {
        if (isAgentChatError(err, "BACKEND_UNAVAILABLE")) throw err;
        if (!isAgentChatError(err, "CHANNEL_NOT_FOUND")) {
          warnings.push(`channel ${name}: ${(err as Error).message}; not searched`);
        }
      }
    }
    return out;
  }

  /**
   * The hot messages that may match: every one (a scan) on a store's first search, else those
   * the channel's index proposes. `all` tells whether the list is the whole channel.
   */
  private async hotCandidates(
    channel: string,
    terms: Term[],
  ): Promise<{ messages: Message[]; all: boolean; complete: boolean }> {
    if (this.searches <= 1 && !this.indexes.has(channel)) {
      const { messages } = await this.source.scan(channel, 0);
      return { messages, all: true, complete: false };
    }
    const index = await this.indexOf(channel);
    if (terms.every((t) => t.kind === "literal")) {
      return { messages: index.docs, all: false, complete: false };
    }
    // Every word is looked up, so with no phrase (words in a row) and no literal the answer is
    // the match itself.
    const complete = terms.every((t) => t.kind !== "literal" && t.words.length === 1);
    const ids = index.postings.match(terms);
    return { messages: ids.map((id) => index.docs[id]!), all: false, complete };
  }

  private async indexOf(channel: string): Promise<ChannelIndex> {
    let index = this.indexes.get(channel);
    if (!index) {
      index = { postings: new Postings(), docs: [], scannedTo: 0 };
      this.indexes.set(channel, index);
    }
    const current = index;
    while (current.busy) await current.busy;
    current.busy = (async () => {
      const scan = await this.source.scan(channel, current.scannedTo);
      for (const message of scan.messages) {
        current.postings.add(current.docs.length, `${message.title}\n${message.body}`);
        current.docs.push(message);
      }
      current.scannedTo = scan.scannedTo;
    })().finally(() => {
      current.busy = undefined;
    });
    await current.busy;
    return current;
  }
}

function parseFilters(query: string, options: SearchOptions, now: number): Filters {
  const filters: Filters = { terms: parseQuery(query), limit: DEFAULT_SEARCH_LIMIT };
  if (options.limit !== undefined) {
    if (!Number.isSafeInteger(options.limit) || options.limit < 1) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `a search limit is 1 or more (got ${options.limit})`,
      );
    }
    filters.limit = Math.min(options.limit, MAX_SEARCH_LIMIT);
  }
  if (options.from !== undefined) filters.from = identity(options.from);
  if (options.to !== undefined) filters.to = identity(options.to);
  if (options.status !== undefined) filters.status = options.status.trim();
  if (options.since !== undefined) filters.since = parseWhen(options.since, "--since", now);
  if (options.until !== undefined) filters.until = parseWhen(options.until, "--until", now);
  return filters;
}

/** The messages that pass the filters and (unless `matchedAlready`) match the terms. */
function select(messages: Message[], filters: Filters, matchedAlready: boolean): Message[] {
  return messages.filter(
    (m) => passes(m, filters) && (matchedAlready || matchMessage(filters.terms, m) !== undefined),
  );
}

/** The hit, if the message is still there and still matches (a stored candidate is read now). */
async function confirm(entry: Found, filters: Filters): Promise<SearchHit | undefined> {
  const message = entry.message ?? (await entry.load?.());
  if (!message || (!entry.message && !passes(message, filters))) return undefined;
  const matched = matchMessage(filters.terms, message);
  if (!matched || (entry.holds && !entry.holds(message.seq))) return undefined;
  return toHit(entry, message, matched, filters.terms);
}

function toHit(
  entry: Found,
  message: Message,
  matched: MatchedText,
  terms: Filters["terms"],
): SearchHit {
  const hit: SearchHit = {
    channel: message.channel,
    seq: message.seq,
    from: message.from,
    to: message.to,
    ts: message.ts,
    status: message.status,
    title: message.title,
    markedTitle: markedTitle(terms, message.title),
    snippet: snippet(matched),
  };
  if (message.replyTo !== undefined) hit.replyTo = message.replyTo;
  if (entry.archived) hit.archived = true;
  return hit;
}

function passes(message: MessageMeta, filters: Filters): boolean {
  if (filters.from !== undefined && identity(message.from) !== filters.from) return false;
  if (filters.status !== undefined && message.status !== filters.status) return false;
  if (filters.to !== undefined) {
    const to = parseTo(message.to);
    if (to.broadcast || !to.names.includes(filters.to)) return false;
  }
  return inTime(message, filters);
}

/** Within `since` and `until`; a message whose time does not parse is outside any bound. */
function inTime(message: MessageMeta, { since, until }: Filters): boolean {
  if (since === undefined && until === undefined) return true;
  const at = Date.parse(message.ts);
  if (Number.isNaN(at)) return false;
  return (since === undefined || at >= since) && (until === undefined || at <= until);
}

/**
 * A match with its time, parsed once for the sort, and how to tell it is still there; or a
 * stored index's candidate, read only if shown.
 */
interface Found {
  meta: MessageMeta;
  message?: Message;
  load?: () => Promise<Message | undefined>;
  at: number;
  archived: boolean;
  holds?: ((seq: number) => boolean) | undefined;
}

function found(message: Message, archived: boolean, holds?: (seq: number) => boolean): Found {
  return { meta: message, message, at: timeOf(message), archived, holds };
}

/** Each message's time, parsed once: an indexed message is sorted again by every query. */
const times = new WeakMap<Message, number>();

function timeOf(message: Message): number {
  let at = times.get(message);
  if (at === undefined) {
    at = Date.parse(message.ts) || 0;
    times.set(message, at);
  }
  return at;
}

/** Between matches of one time: by channel, then the higher number first. */
function newestFirst(a: Found, b: Found): number {
  const [x, y] = [a.meta, b.meta];
  return x.channel === y.channel ? y.seq - x.seq : x.channel < y.channel ? -1 : 1;
}
