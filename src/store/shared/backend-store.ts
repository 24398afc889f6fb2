import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import { formatTimestamp, isRelevant, type Message, oneLine } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { identity, parseTaskId, slug, validateName } from "../../core/names.js";
import {
  type Capabilities,
  type ChannelInfo,
  type ChannelsOptions,
  type ClaimOptions,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_WAIT_TIMEOUT_MS,
  type DoneOptions,
  type FenceResult,
  type InitOptions,
  MAX_BODY_KEY,
  MAX_CHANNEL_BODY_BYTES,
  type NewStructuredTask,
  type NewTask,
  type PeekOptions,
  type PostInput,
  type PostResult,
  type ReadLimit,
  type ReadOptions,
  type ReadResult,
  type ReleaseOptions,
  type RenewOptions,
  SKEW_GRACE_MS,
  type StructuredTaskChange,
  type TaskInfo,
  type ThreadNode,
  type ThreadOptions,
  type WaitOptions,
  type WaitResult,
  type WatchOptions,
} from "../types.js";
import { Budget } from "./budget.js";
import { compareTaskIds, draftMeta, draftPost, draftTask, type PostDraft } from "./draft.js";
import {
  type ParkingWait,
  renewWhileParked,
  type StoreExtension,
  type WaitHooks,
} from "./extension.js";
import { refuseNotHolder } from "./holder.js";
import { LateWork } from "./late-work.js";
import {
  channelTtl,
  checkTtl,
  formatTask,
  LEASE_LOOK_MS,
  type Lease,
  type LeaseStatus,
  leaseStatus,
  MAX_HISTORY,
  MAX_NOTE,
  nextTaskId,
  type TaskRecord,
  taskInfo,
} from "./tasks.js";
import { abortError, timeoutError, Wakeup } from "./wakeup.js";

/** A scan of a channel after some seq: the well-formed messages and how far it got. */
export interface Scan {
  messages: Message[];
  scannedTo: number;
  /** Why files were passed over; each is reported once per store. */
  warnings: string[];
  /** It stopped before an entry that may still be being written: look again on the next poll. */
  stalled?: boolean;
  /** When stalled: which entry, and why it is waited for, for a read to say. */
  held?: string;
}

/** One channel as a backend serves it to the shared read, wait and watch loops. */
export interface Feed {
  readonly channel: string;
  /** Well-formed messages with seq greater than `after`, in seq order. */
  scan(after: number): Promise<Scan>;
  /** The largest seq of the channel as this feed knows it now. */
  maxSeq(): Promise<number>;
  /** The last `count` messages numbered below `before` (default: any), oldest first. */
  last(count: number, before?: number): Promise<Message[]>;
  /** Calls `listener` whenever new messages may have appeared; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  /** Throws once the feed can no longer deliver (its stream was deleted under it). */
  throwIfFailed?(): void;
  /** One message by seq, without a scan (search and thread; default: a scan from it). */
  message?(seq: number): Promise<Message | undefined>;
  /** Whether a message file with this seq is there now (the folder store; default: yes). */
  holds?(): Promise<(seq: number) => boolean>;
}

/** What a backend runs beside its change events while a wait or watch is parked. */
export interface SafetyNet {
  /** A scan starts: what it will see is no longer news. */
  scanned(): void;
  /** Whether that scan stopped before an entry still being written. */
  stalledOn(stalled: boolean): void;
  end(): void;
}

const NO_SAFETY_NET: SafetyNet = { scanned() {}, stalledOn() {}, end() {} };

/** How long a closing store waits for the records its waits left to write. */
const SETTLE_ON_CLOSE_MS = 5_000;

/** How soon a wait looks again after its backend failed for a moment ({@link isTransient}). */
const TRANSIENT_RETRY_MS = 250;

/**
 * A cursor move: from the cursor a scan began at to the seq it scanned to. `from` omitted: the
 * cursor moves forward from wherever it is (an import). `retried`: an earlier save of this move
 * may have landed unanswered, so a cursor found at `to` or past it is taken as that save.
 */
export interface CursorMove {
  from?: number;
  to: number;
  retried?: boolean;
}

/** The refusal of a read or wait from a cursor that holds no message number. */
export function corruptCursor(
  channel: string,
  agent: string,
  where: string,
  text: string,
): AgentChatError {
  return new AgentChatError(
    "CORRUPT_CURSOR",
    `the cursor of ${agent} in ${channel} (${where}) holds ${JSON.stringify(text.trim().slice(0, 40))}, ` +
      `not a message number: nothing was read (read as #0, it would hand ${agent} every message ` +
      "again). Read from the start (read --all, or chat_read all=true) to set it again, or " +
      `write there the number of the last message ${agent} has read`,
  );
}

/** A wait's scan that found relevant messages, and the cursor moves that hand them out. */
interface Found {
  result: WaitResult;
  advance: Record<string, { from: number; to: number }>;
}

/** What one wait remembers between its passes. */
interface WaitPass<F> {
  feeds: F[];
  agent: string;
  net: SafetyNet;
  /** How far earlier passes scanned each channel and found nothing for the agent. */
  looked: Map<F, number>;
  /** Warnings met by those passes, returned with the messages (or told as met). */
  warnings: string[];
  /**
   * The cursor each channel had when this wait first read it: a cursor removed or moved back
   * while the wait is parked (a prune, a hand edit) never hands the agent again what it had.
   */
  floors: Map<F, number>;
  onWarning?: ((warning: string) => void) | undefined;
  /** What the store's extensions are to be told of this wait. */
  hooks: WaitHooks[];
  /** The most it returns (see ReadLimit). */
  limit?: ReadLimit | undefined;
  /** Hears the answer first (WaitOptions.onAnswer); `handedOver` once it did. */
  onAnswer?: ((result: WaitResult) => void) | undefined;
  handedOver?: boolean;
}

/**
 * The Store contract implemented once, over a backend's primitives (docs/design.md §4): validation
 * order, the post queue, the read, wait and watch loops and the task rules with their wording
 * live here, so that every backend behaves alike and a feature is written once. A backend
 * (the folder store, NATS) implements the abstract primitives below: messages through
 * {@link append} and {@link openFeed}, cursors, and task markers as records it can create and
 * swap atomically. It may override the hooks: {@link exclusive}, {@link safetyNet},
 * {@link isTransient} and {@link cursorProblem}.
 */
export abstract class BackendStore<F extends Feed = Feed> {
  abstract readonly capabilities: Capabilities;
  abstract readonly location: string;
  protected readonly maxBodyBytes: number;
  /** The limit the caller set for this store's posts, if any; else the channel's decides. */
  private readonly ownBodyLimit: number | undefined;
  /** Channels known to exist: a post needs no round trip to prove it again. */
  private readonly known = new Set<string>();
  /** Posts from this store to one channel go one at a time: no self-contention. */
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly warned = new Set<string>();
  /** Each channel's body limit, from its `_meta.json` as last read. */
  private readonly bodyLimits = new Map<string, number>();
  /** When the default {@link heldTasks} last listed a channel's markers for a holder. */
  private readonly leaseLooks = new Map<string, number>();
  /** The clock leases are measured by (injected by tests to expire a lease without sleeping). */
  protected readonly now: () => number;
  /** The features hooked into post, read and wait, in the order registered ({@link extend}). */
  private readonly extensions: StoreExtension[] = [];
  /** What operations left to finish after they answered: the store's close waits for it. */
  protected readonly late = new LateWork();

  constructor(maxBodyBytes: number | undefined, now: () => number = Date.now) {
    this.maxBodyBytes = maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.ownBodyLimit = maxBodyBytes;
    this.now = now;
    // Task leases follow their holder: its activity in a channel renews those due there.
    this.extend({
      afterPost: (channel, agent) => this.keepTaskLeases(channel, agent),
      afterRead: (channel, agent) => this.keepTaskLeases(channel, agent),
      duringWait: async (wait) =>
        renewWhileParked(wait, (channel) => this.keepTaskLeases(channel, wait.agent)),
    });
  }

  /**
   * The extension point: a feature registered here is told of every post, read and wait (see
   * {@link StoreExtension}); the message operations know nothing else of it.
   */
  protected extend(extension: StoreExtension): void {
    this.extensions.push(extension);
  }

  // ---- Primitives: what each backend implements. ----

  /** Creates a channel with this meta; `CHANNEL_EXISTS` when it exists. */
  protected abstract createChannel(channel: string, meta: ChannelMeta): Promise<void>;
  /** A valid channel name's meta; `CHANNEL_NOT_FOUND` when there is none. */
  protected abstract readMeta(channel: string): Promise<ChannelMeta>;
  /** The names that may be channels, sorted. */
  protected abstract channelNames(): Promise<string[]>;
  protected abstract lastSeq(channel: string): Promise<number>;

  /** How many messages a channel holds, where a backend knows it at no cost. */
  protected async messageCount(_channel: string): Promise<number | undefined> {
    return undefined;
  }
  /** Allocates the next seq atomically and stores the message under it. */
  protected abstract append(draft: PostDraft): Promise<PostResult>;
  protected abstract openFeed(channel: string): Promise<F>;
  protected abstract loadCursor(channel: string, agent: string): Promise<number>;
  /**
   * Moves a cursor as `move` says. Returns where the cursor is instead, and leaves it there,
   * when it had moved past `move.from` (another call moved it, or `from` was read stale from a
   * lagging replica): what the caller found after `from` may have been handed out already, so
   * it looks again from the returned cursor. A backend without such a check returns undefined.
   */
  protected abstract saveCursor(
    channel: string,
    agent: string,
    move: CursorMove,
  ): Promise<number | undefined>;
  /**
   * Whether {@link saveCursor} may refuse a move (it checks `move.from`): a wait then hands its
   * answer over only once the save landed; without the check, before it (`WaitOptions.onAnswer`).
   */
  protected readonly checksCursorSaves: boolean = true;
  /** Every task marker of a channel, in any order. */
  protected abstract taskRecords(channel: string): Promise<TaskRecord[]>;
  /** Creates an open task marker; false when one with that id exists. */
  protected abstract createTaskRecord(channel: string, id: string, text: string): Promise<boolean>;
  /**
   * Moves a marker to a new holder (undefined: open) and stores its next lease, atomically as
   * far as the backend's other writers can tell; false when it changed since it was read.
   */
  protected abstract swapTaskRecord(
    channel: string,
    current: TaskRecord,
    next: { holder: string | undefined; lease: Lease },
  ): Promise<boolean>;
  abstract close(): Promise<void>;

  // ---- Hooks: defaults a backend may override. ----

  /** One task marker; the folder store lists them, a key-value backend gets one key. */
  protected async taskRecord(channel: string, id: string): Promise<TaskRecord | undefined> {
    return (await this.sortedTasks(channel)).find((t) => t.id === id);
  }

  /**
   * The tasks `holder` (an identity) holds in a channel, for renewal by its activity. This
   * default lists every marker, at most once per {@link LEASE_LOOK_MS} per channel and holder;
   * the folder store answers from its index instead, on every operation.
   */
  protected async heldTasks(channel: string, holder: string): Promise<TaskRecord[]> {
    const key = `${channel}\n${holder}`;
    const at = Date.now();
    if (at - (this.leaseLooks.get(key) ?? Number.NEGATIVE_INFINITY) < LEASE_LOOK_MS) return [];
    this.leaseLooks.set(key, at);
    return (await this.taskRecords(channel)).filter((t) => t.holder === holder);
  }

  /** Runs task changes excluded from this channel's other writers, where the backend must. */
  protected exclusive<T>(_channel: string, fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  /**
   * Renewal by activity of the task leases a backend keeps in another implementation's format
   * (chat.py 0.7's structured tasks, on the folder store): called with {@link keepTaskLeases}.
   */
  protected async keepForeignTaskLeases(_channel: string, _agent: string): Promise<void> {}

  /** What catches a change the backend's events missed, while a wait or watch is parked. */
  protected safetyNet(_feeds: F[], _intervalMs: number, _kick: () => void): SafetyNet {
    return NO_SAFETY_NET;
  }

  /** A failure a parked wait outlives (its server restarting), trying again shortly. */
  protected isTransient(_err: unknown): boolean {
    return false;
  }

  /** Why the agent's cursor in this channel cannot be saved; undefined when it can. */
  protected cursorProblem(_channel: string, _agent: string): string | undefined {
    return undefined;
  }

  /** A channel's archived messages, oldest first (none unless the backend archives). */
  protected async archivedMessages(_channel: string): Promise<Message[]> {
    return [];
  }

  /** Reports `warning` through `report` the first time this store meets it in `scope`. */
  protected warnOnce(
    warning: string,
    report: ((warning: string) => void) | undefined,
    scope = this.location,
  ): void {
    const key = `${scope}/${warning}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    report?.(warning);
  }

  // ---- Channels ----

  async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const meta = draftMeta(channel, options);
    await this.refuseCaseClash(channel);
    await this.createChannel(channel, meta);
    return meta;
  }

  /**
   * `Review` beside `review` would be one folder on macOS and Windows, where a clone of the
   * root, or chat.py there, would mix the two channels' messages and cursors.
   */
  private async refuseCaseClash(channel: string): Promise<void> {
    const lower = channel.toLowerCase();
    const other = (await this.channelNames()).find(
      (name) => name !== channel && name.toLowerCase() === lower,
    );
    if (other === undefined) return;
    throw new AgentChatError(
      "CHANNEL_EXISTS",
      `channel ${channel} would clash with ${other}: names that differ only in case are one ` +
        "folder on macOS and Windows; pick another name",
    );
  }

  async roster(channel: string): Promise<ChannelMeta> {
    validateName("channel", channel);
    const meta = await this.readMeta(channel);
    this.bodyLimits.set(channel, channelBodyLimit(meta));
    return meta;
  }

  /**
   * The most body bytes this store reads of a message in the channel: the channel's limit (as
   * of its last roster), or this store's own when that is larger.
   */
  protected readLimit(channel: string): number {
    return Math.max(this.maxBodyBytes, this.bodyLimits.get(channel) ?? DEFAULT_MAX_BODY_BYTES);
  }

  /**
   * Every channel. One that cannot be read (a corrupt meta, a folder that is a link) never hides
   * the others: it is left out, and `onWarning` hears why, once. A backend that is down fails.
   */
  async channels(options: ChannelsOptions = {}): Promise<ChannelInfo[]> {
    const out: ChannelInfo[] = [];
    for (const name of await this.channelNames()) {
      let meta: ChannelMeta;
      try {
        meta = await this.roster(name);
      } catch (err) {
        if (isAgentChatError(err, "CHANNEL_NOT_FOUND")) continue;
        if (isAgentChatError(err, "BACKEND_UNAVAILABLE")) throw err;
        this.warnOnce(unlistedChannel(name, err as Error), options.onWarning);
        continue;
      }
      const { topic, members, created } = meta;
      const info: ChannelInfo = {
        name,
        topic,
        members,
        created,
        lastSeq: await this.lastSeq(name),
      };
      const messages = await this.messageCount(name);
      if (messages !== undefined) info.messages = messages;
      out.push(info);
    }
    return out;
  }

  // ---- Messages ----

  async post(channel: string, input: PostInput): Promise<PostResult> {
    const result = await this.postQuietly(channel, input);
    for (const extension of this.extensions) await extension.afterPost?.(channel, input.from);
    return result;
  }

  /**
   * Stores a post without telling the extensions: an audit message the store writes for a
   * change it makes inside a lock that their renewals would wait on.
   */
  protected async postQuietly(channel: string, input: PostInput): Promise<PostResult> {
    const draft = draftPost(channel, input, this.ownBodyLimit ?? MAX_CHANNEL_BODY_BYTES);
    if (!this.known.has(channel)) {
      await this.roster(channel);
      this.known.add(channel);
    }
    checkChannelLimit(channel, draft.body, this.bodyLimits.get(channel) ?? DEFAULT_MAX_BODY_BYTES);
    const previous = this.tails.get(channel) ?? Promise.resolve();
    const run = previous.then(
      () => this.append(draft),
      () => this.append(draft),
    );
    this.tails.set(
      channel,
      run.catch((err) => {
        if (isAgentChatError(err, "CHANNEL_NOT_FOUND")) this.known.delete(channel);
      }),
    );
    return await run;
  }

  async cursor(channel: string, agent: string): Promise<number> {
    validateName("channel", channel);
    validateName("agent", agent);
    return this.cursorOrZero(channel, agent);
  }

  /**
   * The agent's cursor, one that holds no number read as 0 (as chat.py reads it): for what is
   * only counted or shown (receipts, unread counts), never for where a read starts.
   */
  protected async cursorOrZero(channel: string, agent: string): Promise<number> {
    try {
      return await this.loadCursor(channel, agent);
    } catch (err) {
      if (isAgentChatError(err, "CORRUPT_CURSOR")) return 0;
      throw err;
    }
  }

  /**
   * A cursor past the channel's last number (a hand edit, a folder restored from a backup) would
   * hide every message posted up to it. It is set back to that number, which hands out nothing
   * twice (no message lies above it), and the reader is told; a peek only tells.
   */
  private async settleCursor(
    feed: F,
    agent: string,
    loaded: number,
    peek: boolean,
  ): Promise<{ cursor: number; warning?: string }> {
    if (loaded <= (await feed.maxSeq())) return { cursor: loaded };
    const last = Math.max(await feed.maxSeq(), await this.seqCeiling(feed.channel));
    if (loaded <= last) return { cursor: loaded };
    const past = `the cursor of ${agent} is at #${loaded}, past the channel's last message #${last}`;
    if (peek) {
      return {
        cursor: loaded,
        warning: `${past}: the messages posted up to #${loaded} would not be shown; a read without peek sets it back`,
      };
    }
    const at = await this.saveCursor(feed.channel, agent, { from: loaded, to: last });
    const warning = `${past}: set back to #${last}, so that the next messages are shown (none is skipped or shown again)`;
    return { cursor: at ?? last, warning };
  }

  /**
   * The largest number the channel has used (the next post gets a larger one), malformed files
   * included: a cursor up to it hides nothing.
   */
  protected async seqCeiling(channel: string): Promise<number> {
    return this.lastSeq(channel);
  }

  async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    validateName("agent", options.as);
    await this.roster(channel);
    const feed = await this.openFeed(channel);
    // `all` reads from #1 whatever the cursor holds, and sets it again.
    const held = options.all
      ? await this.cursorOrZero(channel, options.as)
      : await this.loadCursor(channel, options.as);
    const settled = await this.settleCursor(feed, options.as, held, options.peek === true);
    const loaded = settled.cursor;
    const keep = options.everyone ? () => true : (m: Message) => isRelevant(m, options.as);
    // A bounded read moves the cursor only past what it returns.
    const take = (scan: Scan) => new Budget(options.limit).take(scan, keep);
    let cursor = loaded;
    let scan = await feed.scan(options.all ? 0 : cursor);
    let taken = take(scan);
    let next = cursor;
    while (!options.peek && taken.scannedTo > cursor) {
      const at = await this.saveCursor(channel, options.as, { from: cursor, to: taken.scannedTo });
      if (at === undefined) {
        next = taken.scannedTo;
        break;
      }
      // Moved on meanwhile: what came before it is not this read's to return.
      cursor = next = at;
      scan = await feed.scan(options.all ? 0 : cursor);
      taken = take(scan);
    }
    const { messages, more } = taken;
    const movedTo = next > loaded ? next : undefined;
    for (const extension of this.extensions) {
      await extension.afterRead?.(channel, options.as, movedTo);
    }
    // A read that stopped before a file still being written says so: "no new messages" alone
    // would hide the messages behind it. (A wait just waits for the file.)
    const warnings = [
      ...(settled.warning === undefined ? [] : [settled.warning]),
      ...scan.warnings,
      ...(scan.held === undefined ? [] : [scan.held]),
    ];
    return { channel, messages, cursor: next, warnings, ...(more > 0 ? { more } : {}) };
  }

  async peek(channel: string, count = 3, options: PeekOptions = {}): Promise<Message[]> {
    await this.roster(channel);
    const before = options.before ?? Number.POSITIVE_INFINITY;
    const hot = await (await this.openFeed(channel)).last(count, before);
    if (!options.archived || hot.length >= count) return hot;
    const first = hot[0]?.seq ?? before;
    const old = (await this.archivedMessages(channel)).filter((m) => m.seq < first);
    return old.slice(Math.max(0, old.length - (count - hot.length))).concat(hot);
  }

  /**
   * Parks until a relevant message exists in one of the channels, then returns it and moves the
   * cursors. It listens before its first scan, so that a post in between is never missed; the
   * backend's safety net catches what its events miss.
   */
  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    validateName("agent", options.as);
    if (channels.length === 0) {
      throw new AgentChatError("INVALID_ARGUMENT", "no channel to wait on");
    }
    const unique = [...new Set(channels)];
    const metas = [];
    for (const channel of unique) metas.push(await this.roster(channel));
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    const wake = new Wakeup();
    const timer = setTimeout(() => wake.fail(timeoutError(timeoutMs)), timeoutMs);
    const onAbort = () => wake.fail(abortError());
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const unsubscribe: Array<() => void> = [];
    let net = NO_SAFETY_NET;
    const wait = { agent: options.as, channels: unique, metas, activity: options.activity };
    const hooks = await this.parking(wait);
    let answered = false;
    try {
      if (options.signal?.aborted) throw abortError();
      const feeds: F[] = [];
      for (const channel of unique) {
        const feed = await this.openFeed(channel);
        unsubscribe.push(feed.onChange(() => wake.kick()));
        feeds.push(feed);
      }
      net = this.safetyNet(feeds, options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS, () =>
        wake.kick(),
      );
      const pass: WaitPass<F> = {
        feeds,
        agent: options.as,
        net,
        looked: new Map(),
        warnings: [],
        floors: new Map(),
        onWarning: options.onWarning,
        hooks,
        limit: options.limit,
        onAnswer: options.onAnswer,
      };
      const result = await this.waitLoop(pass, wake);
      answered = !options.activity?.aborted;
      if (!pass.handedOver) options.onAnswer?.(result);
      return result;
    } finally {
      for (const off of unsubscribe) off();
      net.end();
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      const end = { answered, abandoned: options.signal?.aborted === true };
      for (const hook of hooks) if (hook.ended) this.late.add(hook.ended(end));
    }
  }

  /** Tells the wait's extensions it moved the cursor; their records finish after it answers. */
  private tellMoved(pass: WaitPass<F>, channel: string, seq: number): void {
    for (const hook of pass.hooks) if (hook.moved) this.late.add(hook.moved(channel, seq));
  }

  /** Tells each extension that a wait parks, in the order they were registered. */
  private async parking(wait: ParkingWait): Promise<WaitHooks[]> {
    const hooks: WaitHooks[] = [];
    for (const extension of this.extensions) {
      if (extension.duringWait) hooks.push(await extension.duringWait(wait));
    }
    return hooks;
  }

  private async waitLoop(pass: WaitPass<F>, wake: Wakeup): Promise<WaitResult> {
    let found: Found | undefined;
    let retried = false;
    for (;;) {
      try {
        pass.net.scanned();
        // What a pass found is kept across a transient failure, so that a cursor saved just
        // before the answer was lost cannot hide those messages.
        found ??= await this.findForWait(pass);
        if (!found) tellWarnings(pass);
        if (found) {
          const saving = retried;
          retried = true;
          this.handOverFirst(pass, found);
          const result = await this.saveFound(pass, found, saving);
          if (result) return result;
          found = undefined;
          retried = false;
          wake.kick();
        }
      } catch (err) {
        if (!this.isTransient(err)) throw err;
        setTimeout(() => wake.kick(), TRANSIENT_RETRY_MS).unref();
      }
      // Ended while saving, with the save landed: the next turn returns what it found.
      await wake.next().catch((err: unknown) => this.endedWhileSaving(pass, found, err));
      for (const feed of pass.feeds) feed.throwIfFailed?.();
    }
  }

  /**
   * Where the cursor save cannot take any of the answer back (no check of `move.from`), the
   * answer is handed over before it: at least once, as a crash in between leaves the cursor
   * where it was and the next read or wait hands the same messages again.
   */
  private handOverFirst(pass: WaitPass<F>, found: Found): void {
    if (this.checksCursorSaves || pass.handedOver || !pass.onAnswer) return;
    pass.handedOver = true;
    pass.onAnswer(found.result);
  }

  /**
   * Saves the cursors of what a pass found. A channel whose cursor had moved past where the pass
   * began (read stale, or moved by another call for the agent) keeps that cursor, and its
   * messages are left out: they may have been handed out already. What is left is the answer;
   * undefined when nothing is (the wait looks again, from the cursors as they are).
   */
  private async saveFound(
    pass: WaitPass<F>,
    found: Found,
    retried: boolean,
  ): Promise<WaitResult | undefined> {
    const cursors = { ...found.result.cursors };
    const moved = new Set<string>();
    for (const [channel, move] of Object.entries(found.advance)) {
      const at = await this.saveCursor(channel, pass.agent, { ...move, retried });
      if (at === undefined) {
        this.tellMoved(pass, channel, move.to);
        continue;
      }
      moved.add(channel);
      cursors[channel] = at;
      const feed = pass.feeds.find((f) => f.channel === channel);
      if (feed) pass.floors.set(feed, Math.max(at, pass.floors.get(feed) ?? 0));
    }
    if (moved.size === 0) return found.result;
    const messages = found.result.messages.filter((m) => !moved.has(m.channel));
    return messages.length > 0 ? { ...found.result, messages, cursors } : undefined;
  }

  /**
   * A wait that ends (its time out, its caller gone) while saving the cursors of what it found:
   * a save whose answer was lost may have landed, and then those messages are returned, never
   * dropped; otherwise the wait ends as it was told (nothing moved, nothing lost).
   */
  private async endedWhileSaving(
    pass: WaitPass<F>,
    found: Found | undefined,
    err: unknown,
  ): Promise<void> {
    if (!found || !(await this.cursorsAt(pass.agent, found.advance).catch(() => false))) throw err;
  }

  /** Whether every cursor of `advance` is already there (saved by an earlier try). */
  private async cursorsAt(agent: string, advance: Found["advance"]): Promise<boolean> {
    for (const [channel, { to }] of Object.entries(advance)) {
      if ((await this.cursorOrZero(channel, agent)) < to) return false;
    }
    return true;
  }

  /**
   * One pass over the channels. Relevance does not depend on the cursor, so a pass first looks
   * only at what came after the earlier passes, and reads cursors only when some of it is for
   * the agent: thousands of waiters woken by a post meant for a few each look at one message.
   */
  private async findForWait(pass: WaitPass<F>): Promise<Found | undefined> {
    if (pass.looked.size === pass.feeds.length && !(await this.anythingNew(pass))) {
      return undefined;
    }
    const scans = [];
    for (const feed of pass.feeds) {
      const loaded = await this.waitCursor(pass, feed);
      const cursor = Math.max(loaded, pass.floors.get(feed) ?? 0);
      if (!pass.floors.has(feed)) pass.floors.set(feed, loaded);
      scans.push({ feed, cursor, scan: await feed.scan(cursor) });
    }
    pass.net.stalledOn(scans.some(({ scan }) => scan.stalled));
    for (const { scan } of scans) pass.warnings.push(...scan.warnings);
    const usable = scans.filter((s) => this.cursorUsable(pass, s));
    if (usable.every(({ scan }) => this.relevant(scan, pass.agent).length === 0)) {
      for (const { feed, scan } of usable) pass.looked.set(feed, scan.scannedTo);
      return undefined;
    }
    // One budget across the channels: a bounded wait moves each cursor only past what it returns.
    const budget = new Budget(pass.limit);
    const taken = usable.map((s) => ({
      ...s,
      taken: budget.take(s.scan, (m) => isRelevant(m, pass.agent)),
    }));
    const cursors: Record<string, number> = {};
    const advance: Found["advance"] = {};
    for (const {
      feed,
      cursor,
      taken: { scannedTo },
    } of taken) {
      cursors[feed.channel] = Math.max(cursor, scannedTo);
      if (scannedTo > cursor) advance[feed.channel] = { from: cursor, to: scannedTo };
    }
    const messages = taken.flatMap((t) => t.taken.messages);
    const more = taken.reduce((n, t) => n + t.taken.more, 0);
    const warnings = pass.warnings.splice(0);
    const result = { messages, cursors, warnings, ...(more > 0 ? { more } : {}) };
    return { result, advance };
  }

  /** Where a wait reads a channel from; the first time, a cursor past its end is set back. */
  private async waitCursor(pass: WaitPass<F>, feed: F): Promise<number> {
    const loaded = await this.loadCursor(feed.channel, pass.agent);
    if (pass.floors.has(feed)) return loaded;
    const settled = await this.settleCursor(feed, pass.agent, loaded, false);
    if (settled.warning !== undefined) pass.warnings.push(`${feed.channel}: ${settled.warning}`);
    return settled.cursor;
  }

  /** Whether anything after what earlier passes looked at is for the agent. */
  private async anythingNew(pass: WaitPass<F>): Promise<boolean> {
    let stalled = false;
    for (const feed of pass.feeds) {
      const scan = await feed.scan(pass.looked.get(feed) ?? 0);
      stalled ||= scan.stalled === true;
      pass.warnings.push(...scan.warnings);
      if (this.relevant(scan, pass.agent).length > 0) return true;
      pass.looked.set(feed, scan.scannedTo);
    }
    pass.net.stalledOn(stalled);
    return false;
  }

  /**
   * Every cursor that will move is checked before any is written: one channel whose cursor
   * cannot be saved (a `.cursors` planted as a file or link) must not cost the others their
   * messages, moved past but never returned. Such a channel leaves this wait, with a warning.
   */
  private cursorUsable(
    pass: WaitPass<F>,
    { feed, cursor, scan }: { feed: F; cursor: number; scan: Scan },
  ): boolean {
    const problem =
      scan.scannedTo > cursor ? this.cursorProblem(feed.channel, pass.agent) : undefined;
    if (problem === undefined) return true;
    const warning = `${feed.channel}: ${problem}; its messages are left unread`;
    pass.warnings.push(warning);
    pass.feeds.splice(pass.feeds.indexOf(feed), 1);
    pass.looked.delete(feed);
    if (pass.feeds.length === 0) throw new AgentChatError("UNSAFE_FILE", warning);
    return false;
  }

  private relevant(scan: Scan, agent: string): Message[] {
    return scan.messages.filter((m) => isRelevant(m, agent));
  }

  /** Every new message of the channels as it appears, until the signal aborts. */
  async *watch(channels: readonly string[], options: WatchOptions = {}): AsyncIterable<Message> {
    const unique = [...new Set(channels)];
    for (const channel of unique) await this.roster(channel);
    const wake = new Wakeup();
    const onAbort = () => wake.end();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const unsubscribe: Array<() => void> = [];
    let net = NO_SAFETY_NET;
    try {
      const positions = new Map<F, number>();
      for (const channel of unique) {
        const feed = await this.openFeed(channel);
        unsubscribe.push(feed.onChange(() => wake.kick()));
        const after = options.after;
        const start = typeof after === "number" ? after : after?.[channel];
        positions.set(feed, start ?? (await feed.maxSeq()));
      }
      net = this.safetyNet(
        [...positions.keys()],
        options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS,
        () => wake.kick(),
      );
      while (!options.signal?.aborted) {
        yield* this.watchPass(positions, net);
        const more = await wake.next().then(
          () => true,
          () => false,
        );
        if (!more) return;
      }
    } finally {
      for (const off of unsubscribe) off();
      net.end();
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async *watchPass(positions: Map<F, number>, net: SafetyNet): AsyncIterable<Message> {
    net.scanned();
    let stalled = false;
    for (const [feed, position] of positions) {
      feed.throwIfFailed?.();
      const scan = await feed.scan(position);
      positions.set(feed, scan.scannedTo);
      stalled ||= scan.stalled === true;
      yield* scan.messages;
    }
    net.stalledOn(stalled);
  }

  /** Waits for the records operations left to write after they answered ({@link late}): a
   * backend's close calls it before it lets go of its files or its connection. */
  protected settleRecords(): Promise<void> {
    return this.late.settled(SETTLE_ON_CLOSE_MS);
  }

  // ---- Threads (src/store/shared/thread.ts) ----

  // Loaded by the first thread: a post, read or hook never reads its code.
  async thread(channel: string, seq: number, options?: ThreadOptions): Promise<ThreadNode> {
    const { findThread } = await import("./thread.js");
    const source = {
      roster: (ch: string) => this.roster(ch),
      message: async (ch: string, n: number) => {
        const feed = await this.openFeed(ch);
        if (feed.message) return feed.message(n);
        return (await feed.scan(n - 1)).messages.find((m) => m.seq === n);
      },
      scan: async (ch: string, after: number) => (await this.openFeed(ch)).scan(after),
      archived: (ch: string) => this.archivedMessages(ch),
    };
    return findThread(source, channel, seq, options);
  }

  // ---- Tasks ----

  async addTask(channel: string, task: NewTask): Promise<TaskInfo> {
    await this.roster(channel);
    const { from, title } = draftTask(task);
    const explicit = task.id === undefined ? undefined : parseTaskId(task.id);
    const text = (id: string) =>
      formatTask({ id, from, title, ts: formatTimestamp(), body: task.body ?? "" });
    const exists = (id: string) =>
      new AgentChatError("TASK_EXISTS", `task ${id} already exists in ${channel}`);
    return this.exclusive(channel, async () => {
      if (explicit !== undefined) {
        if (await this.taskRecord(channel, explicit)) throw exists(explicit);
        if (!(await this.createTaskRecord(channel, explicit, text(explicit)))) {
          throw exists(explicit);
        }
        return taskInfo(channel, { id: explicit, text: text(explicit), version: 0 }, this.now());
      }
      // Another writer may take the next number first (or an unreadable marker hold it): count
      // again, never below the number just lost.
      for (let floor = 1; ; ) {
        const id = nextTaskId(await this.taskRecords(channel), floor);
        const marker = text(id);
        if (await this.createTaskRecord(channel, id, marker)) {
          return taskInfo(channel, { id, text: marker, version: 0 }, this.now());
        }
        floor = Number(id) + 1;
      }
    });
  }

  async tasks(channel: string): Promise<TaskInfo[]> {
    await this.roster(channel);
    const now = this.now();
    return (await this.sortedTasks(channel)).map((record) => this.describe(channel, record, now));
  }

  async task(channel: string, task: string): Promise<TaskInfo> {
    const id = parseTaskId(task);
    await this.roster(channel);
    return this.describe(channel, await this.existingTask(channel, id), this.now());
  }

  /** A record as callers see it; a lease that could not be read is reported once per task. */
  private describe(channel: string, record: TaskRecord, now: number): TaskInfo {
    const info = taskInfo(channel, record, now);
    if (record.problem !== undefined) {
      this.warnOnce(
        `task ${record.id} in ${channel}: ${record.problem}`,
        (w) => {
          info.warning = w;
        },
        channel,
      );
    }
    return info;
  }

  private async sortedTasks(channel: string): Promise<TaskRecord[]> {
    return (await this.taskRecords(channel)).sort((a, b) => compareTaskIds(a.id, b.id));
  }

  /**
   * Grants a lease with the next fencing token on an open task, or on one whose lease expired
   * (now past its end): the token only grows, whoever held the task before.
   */
  async claim(
    channel: string,
    task: string,
    agent: string,
    options: ClaimOptions = {},
  ): Promise<TaskInfo> {
    const id = parseTaskId(task);
    validateName("agent", agent);
    checkTtl(options.ttlMs);
    const ttlMs = options.ttlMs ?? channelTtl(await this.roster(channel));
    const holder = identity(agent);
    return this.exclusive(channel, async () => {
      const current = await this.existingTask(channel, id);
      const now = this.now();
      const status = leaseStatus(current, now);
      if (status.state === "claimed") {
        // The wording of chat.py's days, which scripts and the README show; `tasks` has the rest.
        const who = status.holder === holder ? "you" : status.holder;
        throw new AgentChatError(
          "CLAIM_LOST",
          `task ${id} is already claimed by ${who}${inGrace(status, now)}`,
        );
      }
      if (status.state === "done") {
        throw new AgentChatError("CLAIM_LOST", `task ${id} is done (finished by ${status.holder})`);
      }
      const token = (current.lease?.token ?? 0) + 1;
      const history = [...(current.lease?.history ?? []), { token, holder, at: now }];
      const lease: Lease = {
        token,
        holder,
        expiresAt: now + ttlMs,
        ttlMs,
        history: history.slice(-MAX_HISTORY),
      };
      if (!(await this.swapTaskRecord(channel, current, { holder, lease }))) {
        throw new AgentChatError("CLAIM_LOST", `task ${id} was claimed by someone else`);
      }
      return taskInfo(channel, { ...current, holder, lease }, now);
    });
  }

  /** Extends the holder's live lease by a TTL from now; the token stays. */
  async renew(
    channel: string,
    task: string,
    agent: string,
    options: RenewOptions = {},
  ): Promise<TaskInfo> {
    checkTtl(options.ttlMs);
    return this.asHolder(channel, task, agent, "renew", options.token, (current, now, meta) => {
      const ttlMs = options.ttlMs ?? channelTtl(meta);
      const lease = current.lease;
      if (lease === undefined || lease.holder !== current.holder) {
        throw new AgentChatError(
          "INVALID_ARGUMENT",
          `task ${current.id} was claimed without a lease (by chat.py); it never expires`,
        );
      }
      return { holder: current.holder, lease: { ...lease, expiresAt: now + ttlMs, ttlMs } };
    });
  }

  /**
   * Ends a task. The marker keeps its holder's name (so chat.py, which knows no `done`, sees it
   * taken and never hands it out again); the lease records who finished it, when and why.
   */
  async done(
    channel: string,
    task: string,
    agent: string,
    options: DoneOptions = {},
  ): Promise<TaskInfo> {
    return this.asHolder(channel, task, agent, "finish", options.token, (current, now) => {
      const by = current.holder as string;
      const done: NonNullable<Lease["done"]> = { by, at: now };
      if (options.note !== undefined) done.note = oneLine(options.note).slice(0, MAX_NOTE);
      return { holder: by, lease: { ...endedLease(current.lease), done } };
    });
  }

  async release(
    channel: string,
    task: string,
    agent: string,
    options: ReleaseOptions = {},
  ): Promise<TaskInfo> {
    return this.asHolder(channel, task, agent, "release", options.token, (current) => ({
      holder: undefined,
      lease: endedLease(current.lease),
    }));
  }

  /** Whether `token` is the task's current grant with a lease that has not expired. */
  async fence(channel: string, task: string, token: number): Promise<FenceResult> {
    const id = parseTaskId(task);
    checkToken(token);
    await this.roster(channel);
    const current = await this.existingTask(channel, id);
    const now = this.now();
    const status = leaseStatus(current, now);
    // The holder acts only until its lease's end by its own clock, not into the skew grace.
    const live =
      status.state === "claimed" &&
      status.leased &&
      status.token === token &&
      now <= (status.expiresAt ?? 0);
    return { live, task: this.describe(channel, current, now) };
  }

  /** chat.py 0.7's structured tasks live in a channel folder: the folder store has them. */
  async createStructuredTask(channel: string, _task: NewStructuredTask): Promise<TaskInfo> {
    throw noStructuredTasks(channel);
  }

  async changeStructuredTask(
    channel: string,
    _task: string,
    _change: StructuredTaskChange,
  ): Promise<TaskInfo> {
    throw noStructuredTasks(channel);
  }

  /**
   * Runs a change that only the holder of the live grant may make (and, given a token, only
   * with that grant's token): a late holder, whose lease expired or passed to someone else,
   * is refused and changes nothing. The channel is looked up first (an unknown one is refused
   * before the task); `change` gets its meta, for the lease length it sets.
   */
  private async asHolder(
    channel: string,
    task: string,
    agent: string,
    verb: string,
    token: number | undefined,
    change: (
      current: TaskRecord,
      now: number,
      meta: ChannelMeta,
    ) => { holder: string | undefined; lease: Lease },
  ): Promise<TaskInfo> {
    const meta = await this.roster(channel);
    const id = parseTaskId(task);
    validateName("agent", agent);
    if (token !== undefined) checkToken(token);
    const me = identity(agent);
    return this.exclusive(channel, async () => {
      for (;;) {
        const current = await this.existingTask(channel, id);
        const now = this.now();
        const status = leaseStatus(current, now);
        refuseUnlessHolder(id, status, me, verb, token, now);
        const next = change(current, now, meta);
        if (await this.swapTaskRecord(channel, current, next)) {
          return taskInfo(channel, { ...current, ...next }, now);
        }
        // Changed between our read and our swap: look again.
      }
    });
  }

  /**
   * Renewal by activity: an agent that posts, reads or waits in a channel keeps the leases it
   * holds there alive. A lease is extended to now + the channel's TTL (never shortened) once a
   * third of that TTL has passed, so an active holder costs one write per task per TTL/3 at
   * most. It never fails the operation that caused it: a lease it could not renew runs on.
   */
  private async keepTaskLeases(channel: string, agent: string): Promise<void> {
    try {
      await this.keepForeignTaskLeases(channel, agent);
      const holder = identity(agent);
      // Most activity finds nothing due: only a lease past a third of its length takes the lock.
      const due = (await this.heldTasks(channel, holder)).filter((t) =>
        isDue(t, holder, this.now()),
      );
      if (due.length === 0) return;
      const channelTtlMs = channelTtl(await this.roster(channel));
      for (const { id } of due) {
        await this.exclusive(channel, async () => {
          const current = await this.taskRecord(channel, id);
          const now = this.now();
          // As long again as it was granted or last renewed for (older leases: the channel's).
          const ttlMs = current?.lease?.ttlMs ?? channelTtlMs;
          if (!current?.lease || !dueForRenewal(current, holder, now, ttlMs)) return;
          const lease = { ...current.lease, expiresAt: now + ttlMs };
          await this.swapTaskRecord(channel, current, { holder, lease });
        });
      }
    } catch {
      // A courtesy of activity: the post, read or wait it rode on has succeeded.
    }
  }

  private async existingTask(channel: string, id: string): Promise<TaskRecord> {
    const current = await this.taskRecord(channel, id);
    if (!current) throw new AgentChatError("TASK_NOT_FOUND", `no task ${id} in ${channel}`);
    return current;
  }
}

/**
 * Whether a held task may be due, before the lock: a lease that records its length is judged by
 * it; an older one (no length) is looked at under the lock with the channel's.
 */
/** A lease without its holder and expiry, as a task leaves it when it ends (done or released). */
function endedLease(lease: Lease | undefined): Omit<Lease, "holder" | "expiresAt"> {
  const { holder: _h, expiresAt: _e, ...rest } = lease ?? { token: 0, history: [] };
  return rest;
}

function isDue(record: TaskRecord, holder: string, now: number): boolean {
  const ttlMs = record.lease?.ttlMs;
  if (ttlMs === undefined) return record.lease?.holder === holder;
  return dueForRenewal(record, holder, now, ttlMs);
}

/** A live lease of `holder` with less than two thirds of `ttlMs` left. */
function dueForRenewal(record: TaskRecord, holder: string, now: number, ttlMs: number): boolean {
  const status = leaseStatus(record, now);
  if (status.state !== "claimed" || !status.leased || status.holder !== holder) return false;
  return status.expiresAt !== undefined && status.expiresAt - now < (ttlMs * 2) / 3;
}

/** `NOT_HOLDER`, naming the current holder and token, unless `me` holds the live grant. */
function refuseUnlessHolder(
  id: string,
  status: LeaseStatus,
  me: string,
  verb: string,
  token: number | undefined,
  now: number,
): void {
  const expired = status.state === "expired";
  refuseNotHolder(`task ${id}`, [
    status.state === "open" && `is not claimed${lastToken(status)}`,
    status.state === "done" && `is done (finished by ${status.holder})`,
    status.holder !== me &&
      `is ${expired ? "no longer held: the lease of" : "claimed by"} ` +
        `${status.holder}${describeGrant(status, now)}; only the holder can ${verb} it`,
    expired && `is no longer yours: your lease${describeGrant(status, now)}; claim it again`,
    token !== undefined &&
      token !== status.token &&
      `is held by ${status.holder} ` +
        (status.token === undefined
          ? "without a lease (claimed by chat.py)"
          : `with token ${status.token}`) +
        `; token ${token} is stale`,
  ]);
}

function lastToken(status: LeaseStatus): string {
  return status.token === undefined ? "" : ` (last token ${status.token})`;
}

/**
 * Why a lease past its end still holds: `tasks` shows it ended, and the claim refused must say
 * for how much longer and why, or the two look like they disagree.
 */
function inGrace(status: LeaseStatus, now: number): string {
  if (status.expiresAt === undefined || now <= status.expiresAt) return "";
  const ended = Math.ceil((now - status.expiresAt) / 1000);
  const left = Math.max(1, Math.ceil((status.expiresAt + SKEW_GRACE_MS - now) / 1000));
  return (
    `: its lease ended ${ended} s ago, and a lease is its holder's for ${SKEW_GRACE_MS / 1000} s ` +
    `more (the clock-skew grace, docs/leases.md); claimable in ${left} s`
  );
}

/** ` (token 2, expires 2026-…)`, or ` (no lease: claimed by chat.py)`. */
function describeGrant(status: LeaseStatus, now: number): string {
  if (!status.leased || status.expiresAt === undefined) return " (no lease: claimed by chat.py)";
  const when = new Date(status.expiresAt).toISOString();
  const verb = now > status.expiresAt ? "expired" : "expires";
  return ` (token ${status.token}, ${verb} ${when})`;
}

function noStructuredTasks(channel: string): AgentChatError {
  return new AgentChatError(
    "UNSUPPORTED",
    `structured tasks (chat.py 0.7's tasks/<id>.json) live on a folder root; ${channel} is not in one`,
  );
}

/** A parked wait that passed over a file says so now, not with a message that may never come. */
function tellWarnings<F>(pass: WaitPass<F>): void {
  if (pass.onWarning) for (const w of pass.warnings.splice(0)) pass.onWarning(w);
}

/**
 * Why a channel is left out of the list, naming it. A name off our rule (one chat.py made:
 * `my channel`, `café`) gets the rule and a name that keeps it, since renaming the folder is
 * the way to use it here.
 */
function unlistedChannel(name: string, err: Error): string {
  const shown = JSON.stringify(name);
  if (!isAgentChatError(err, "INVALID_NAME")) return `channel ${shown}: ${err.message}; skipped`;
  return (
    `channel ${shown} is not usable here (${err.message}; chat.py allows more): ` +
    `rename its folder to use it, e.g. to ${slug(name)}`
  );
}

function checkToken(token: number): void {
  if (!Number.isSafeInteger(token) || token <= 0) {
    throw new AgentChatError("INVALID_ARGUMENT", `a token is a positive integer (got ${token})`);
  }
}

/**
 * The channel's body limit: `max_body_bytes` in `_meta.json` when it is a whole number from 1
 * to 64 MiB (the file is shared input: anything else is ignored), else 1 MiB.
 */
function channelBodyLimit(meta: ChannelMeta): number {
  const bytes = meta[MAX_BODY_KEY];
  const sane = Number.isSafeInteger(bytes) && (bytes as number) > 0;
  return sane && (bytes as number) <= MAX_CHANNEL_BODY_BYTES
    ? (bytes as number)
    : DEFAULT_MAX_BODY_BYTES;
}

/**
 * A post larger than its channel's readers read is refused when written, never stored to be
 * skipped by every reader. The poster's own limit (`--max-body`) may only be lower.
 */
function checkChannelLimit(channel: string, body: string, limit: number): void {
  const bytes = Buffer.byteLength(body);
  if (bytes <= limit) return;
  throw new AgentChatError(
    "TOO_LARGE",
    `message body is ${bytes} bytes; channel ${channel} takes at most ${limit}, the most its ` +
      `readers read (${MAX_BODY_KEY} in its _meta.json, set when the channel is created; else 1 MiB)`,
  );
}
