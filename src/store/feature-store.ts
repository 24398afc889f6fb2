import { referenceError } from "../core/errors.js";
import type { Message } from "../core/message.js";
import { validateName } from "../core/names.js";
import {
  Delivery,
  type DeliveryHost,
  defaultHost,
  deliveryExtension,
} from "../features/delivery/index.js";
import { PathLeaseBook, pathLeaseExtension } from "../features/leases/index.js";
import { agentsToKeep, loadSearcher, type Searcher } from "../features/search/index.js";
import type {
  Candidate,
  NoteStore,
  PathLease,
  PathLeaseDoc,
  PathLeaseRecord,
  PresenceEntry,
  PresenceOptions,
  Term,
} from "./records/index.js";
import { BackendStore, channelTtl, checkTtl, type Feed } from "./shared/index.js";
import type {
  PathLeaseInfo,
  PathLeaseOptions,
  PathLockChange,
  PresenceInfo,
  Receipts,
  ReleaseOptions,
  RenewOptions,
  SearchOptions,
  SearchResult,
  SignedReadReceipt,
  Store,
  WaitForOptions,
  WhoOptions,
} from "./types.js";

/** A feed that can answer a search from an index its backend keeps (the folder store). */
export interface IndexedFeed extends Feed {
  candidates?(terms: Term[]): Promise<Candidate[] | undefined>;
}

/**
 * The message core with the features every backend serves: path leases, delivery and presence,
 * search. Each is a part from its folder under src/features/, run over the primitives declared
 * here, and hooked into post, read and wait through the core's one extension point
 * (BackendStore.extend); the core knows none of them. The backends (FsStore, NatsStore)
 * extend this class and implement its primitives beside the core's.
 */
export abstract class FeatureStore<F extends IndexedFeed = IndexedFeed>
  extends BackendStore<F>
  implements Store
{
  /** Path leases: their rules over this backend's {@link readPathLeases} and swap. */
  private readonly pathBook: PathLeaseBook;
  /** Delivery states and presence (src/features/delivery/), over the note primitives. */
  private readonly delivery: Delivery;
  /** Search with its in-memory index (src/features/search/search.ts says why it lives here). */
  private searcher: Searcher | undefined;

  constructor(
    maxBodyBytes: number | undefined,
    now: () => number = Date.now,
    presence: PresenceOptions = {},
  ) {
    super(maxBodyBytes, now);
    this.pathBook = new PathLeaseBook({
      read: (channel) => this.readPathLeases(channel),
      swap: (channel, current, doc) => this.swapPathLeases(channel, current, doc),
      exclusive: (channel, fn) => this.pathLeaseExclusive(channel, fn),
      foreign: (channel) => this.foreignPathLeases(channel),
      recordsLocks: this.recordsPathLocks(),
      channelTtl: async (channel) => channelTtl(await this.roster(channel)),
      now: () => this.now(),
    });
    this.delivery = new Delivery(this.deliveryHost(presence));
    this.extend(pathLeaseExtension(this.pathBook));
    this.extend(deliveryExtension(this.delivery));
  }

  private deliveryHost(presence: PresenceOptions): DeliveryHost {
    const store = this;
    return {
      get location() {
        return store.location;
      },
      now: this.now,
      actor: {
        harness: presence.harness ?? "cli",
        host: presence.host ?? defaultHost(),
        pid: presence.pid ?? process.pid,
      },
      roster: (channel) => this.roster(channel),
      messages: async (channel, after) =>
        (await (await this.openFeed(channel)).scan(after)).messages,
      loadCursor: (channel, agent) => this.cursorOrZero(channel, agent),
      onChange: async (channel, listener) => (await this.openFeed(channel)).onChange(listener),
      // Through `notes` at call time: a backend sets it after this constructor has run.
      listNotes: (...args) => this.notes.listNotes(...args),
      readNote: (...args) => this.notes.readNote(...args),
      writeNote: (...args) => this.notes.writeNote(...args),
      warnOnce: (warning, report, scope) => this.warnOnce(warning, report, scope),
      ...(presence.onWarning ? { onWarning: presence.onWarning } : {}),
      recordPresence: presence.recordPresence !== false,
      written: () => this.late.written(),
    };
  }

  // ---- Primitives of the features: what each backend implements besides the core's. ----

  /** A channel's path lease document (empty when it has none). */
  protected abstract readPathLeases(channel: string): Promise<PathLeaseRecord>;
  /** Replaces it unless it changed since `current` was read; false then. */
  protected abstract swapPathLeases(
    channel: string,
    current: PathLeaseRecord,
    doc: PathLeaseDoc,
  ): Promise<boolean>;
  /** Presence and receipts: the records delivery keeps, in this backend's form. */
  protected abstract readonly notes: NoteStore;

  /**
   * Runs path lease changes excluded from the channel's other writers: {@link exclusive}, and
   * on the folder store also chat.py 0.7's path-lock mutex.
   */
  protected pathLeaseExclusive<T>(channel: string, fn: () => Promise<T>): Promise<T> {
    return this.exclusive(channel, fn);
  }

  /** Whether exclusive path leases are also another implementation's lock records (folder store). */
  protected recordsPathLocks(): boolean {
    return false;
  }

  /**
   * Whose cursors and presence a backend's prune keeps however old they are: the search
   * feature's rule, handed to the backends that keep the records.
   */
  protected agentsToKeep(
    entries: readonly PresenceEntry[],
    now: number,
    olderThanMs: number,
  ): Set<string> {
    return agentsToKeep(entries, now, olderThanMs);
  }

  /** Path reservations of another implementation in the channel (none but on the folder store). */
  protected async foreignPathLeases(_channel: string): Promise<PathLease[]> {
    return [];
  }

  // ---- Delivery and presence ----

  async receipts(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    validateName("channel", channel);
    return this.delivery.receipts(channel, seq, options);
  }

  /** Receipts with, per addressee short of answered, what is known of why (`explain`). */
  async explain(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    validateName("channel", channel);
    return this.delivery.explain(channel, seq, options);
  }

  async waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    validateName("channel", channel);
    return this.delivery.waitFor(channel, seq, options);
  }

  async notify(channel: string, agent: string, seq: number): Promise<void> {
    validateName("channel", channel);
    return this.delivery.notify(channel, agent, seq);
  }

  async attestRead(channel: string, agent: string, receipt: SignedReadReceipt): Promise<void> {
    validateName("channel", channel);
    return this.delivery.attest(channel, agent, receipt);
  }

  async touch(agent: string): Promise<void> {
    validateName("agent", agent);
    return this.delivery.touch(agent);
  }

  async who(channel?: string, options?: WhoOptions): Promise<PresenceInfo[]> {
    if (channel !== undefined) validateName("channel", channel);
    return this.delivery.who(channel, options);
  }

  // ---- Search (src/features/search/) ----

  // Loaded by the first search: a post, read or hook never reads its code.
  async search(query: string, options?: SearchOptions): Promise<SearchResult> {
    const { Searcher } = await loadSearcher();
    this.searcher ??= new Searcher(
      {
        channelNames: () => this.channelNames(),
        roster: (channel) => this.roster(channel),
        scan: async (channel, after) => (await this.openFeed(channel)).scan(after),
        holds: async (channel) => {
          const feed = await this.openFeed(channel);
          return feed.holds ? feed.holds() : () => true;
        },
        archived: (channel): Promise<Message[]> => this.archivedMessages(channel),
        candidates: async (channel, terms) => (await this.openFeed(channel)).candidates?.(terms),
      },
      this.now,
    );
    return this.searcher.search(query, options);
  }

  // ---- Path leases (docs/leases.md; the rules are in src/features/leases/) ----

  async addPathLease(
    channel: string,
    pattern: string,
    agent: string,
    options: PathLeaseOptions = {},
  ): Promise<PathLeaseInfo> {
    checkTtl(options.ttlMs);
    return this.pathBook.add(channel, pattern, agent, options);
  }

  async pathLeases(channel: string): Promise<PathLeaseInfo[]> {
    return this.pathBook.list(channel);
  }

  async renewPathLease(
    channel: string,
    lease: string,
    agent: string,
    options: RenewOptions = {},
  ): Promise<PathLeaseInfo> {
    checkTtl(options.ttlMs);
    return this.pathBook.renew(channel, lease, agent, options);
  }

  async releasePathLease(
    channel: string,
    lease: string,
    agent: string,
    options: ReleaseOptions = {},
  ): Promise<PathLeaseInfo> {
    return this.pathBook.release(channel, lease, agent, options);
  }

  /** Only the folder store shares a root with chat.py 0.7, whose locks these are. */
  async changePathLock(
    channel: string,
    lock: string,
    _change: PathLockChange,
  ): Promise<{ before: PathLeaseInfo; after: PathLeaseInfo }> {
    throw referenceError(
      "NOT_FOUND",
      "PATH_LOCK_NOT_FOUND",
      `no chat.py lock ${lock} in ${channel} (chat.py's locks live in folder roots)`,
    );
  }
}
