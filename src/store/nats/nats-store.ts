import { randomUUID } from "node:crypto";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import {
  formatTimestamp,
  isRelevant,
  type Message,
  messageFileName,
  serializeMessage,
} from "../../core/message.js";
import { type ChannelMeta, parseMeta, serializeMeta } from "../../core/meta.js";
import { identity, parseTaskId, validateName } from "../../core/names.js";
import { compareTaskIds, draftMeta, draftPost, draftTask, type PostDraft } from "../draft.js";
import { formatTask, parseTaskFile, TASK_FILE } from "../fs/tasks.js";
import {
  type Capabilities,
  type ChannelInfo,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_WAIT_TIMEOUT_MS,
  type InitOptions,
  type NewTask,
  type PostInput,
  type PostResult,
  type ReadOptions,
  type ReadResult,
  type Store,
  type TaskInfo,
  type WaitOptions,
  type WaitResult,
  type WatchOptions,
} from "../types.js";
import { abortError, timeoutError, Wakeup } from "../wakeup.js";
import { connectNats, DEFAULT_NATS_TIMEOUT_MS } from "./connect.js";
import { ChannelFeed, FILE_HEADER, SEQ_HEADER } from "./feed.js";
import { type NatsStoreOptions, type NatsTarget, parseNatsUrl } from "./options.js";

/** JetStream's error code for a failed expected-last-(subject-)sequence check. */
const WRONG_LAST_SEQUENCE = 10071;
/** Leaves room for the headers inside the server's max_payload. */
const HEADER_ROOM = 1024;

/** A task marker as kept in KV: the marker file's text, and its holder once claimed. */
interface TaskRecord {
  text: string;
  holder?: string;
}

/** The last message of a channel: its stream seq (for the publish check) and our seq. */
interface LastOf {
  streamSeq: number;
  seq: number;
}

/** A channel's contents in SPEC-folder form, for export and import. */
export interface ChannelDump {
  name: string;
  metaText: string;
  messages: Array<{ seq: number; file: string; text: string }>;
  /** Cursor per agent identity. */
  cursors: Record<string, number>;
  tasks: Array<{ file: string; text: string }>;
}

/**
 * The NATS JetStream backend (DESIGN.md §6): one stream per namespace with one subject per
 * channel, one KV bucket per namespace for channel metadata, cursors and task markers.
 *
 * - Gapless seq: a post publishes seq = last + 1 with the expected-last-subject-sequence header
 *   set to the stream seq of the last message it knows; a concurrent post makes the server refuse
 *   it, and it re-reads and retries. Our seq travels in a header and must match the text.
 * - init, addTask and claim are KV creates or revision-checked updates: exactly one winner.
 * - read, wait, peek and watch read through a per-channel ordered consumer that the server
 *   pushes to; after a reconnect it resumes after the last stream seq it delivered.
 */
export class NatsStore implements Store {
  readonly capabilities: Capabilities = { multiHost: true, specFolder: false };
  readonly location: string;
  readonly namespace: string;
  private readonly feeds = new Map<string, ChannelFeed>();
  private readonly lastKnown = new Map<string, LastOf>();
  private readonly existing = new Set<string>();
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly warned = new Set<string>();
  private readonly maxBodyBytes: number;
  private readonly timeoutMs: number;
  private gone: AgentChatError | undefined;
  private advisories: Subscription | undefined;

  private constructor(
    private readonly target: NatsTarget,
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly kv: KV,
    private readonly headerFactory: () => MsgHdrs,
    options: NatsStoreOptions,
  ) {
    this.location = target.location;
    this.namespace = target.namespace;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_NATS_TIMEOUT_MS;
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  get streamName(): string {
    return `AGENTCHAT_${this.namespace}`;
  }

  get bucketName(): string {
    return bucketOf(this.namespace);
  }

  /** Connects and makes sure the namespace's stream and bucket exist (creating both when new). */
  static async open(root: string, options: NatsStoreOptions = {}): Promise<NatsStore> {
    const target = parseNatsUrl(root);
    const nc = await connectNats(target, options);
    try {
      const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");
      const { Kvm } = await import("@nats-io/kv");
      const { headers } = await import("@nats-io/transport-node");
      const timeout = options.timeoutMs ?? DEFAULT_NATS_TIMEOUT_MS;
      let jsm: JetStreamManager;
      try {
        jsm = await jetstreamManager(nc, { timeout });
      } catch (err) {
        throw new AgentChatError(
          "BACKEND_UNAVAILABLE",
          `JetStream is not enabled on ${target.server} (start nats-server with -js)`,
          { cause: err },
        );
      }
      const js = jetstream(nc, { timeout });
      const stream = `AGENTCHAT_${target.namespace}`;
      const bucket = bucketOf(target.namespace);
      const streamInfo = await jsm.streams.info(stream).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      const hasBucket = await exists(() => jsm.streams.info(`KV_${bucket}`));
      const kvm = new Kvm(js);
      // Creating is idempotent, so several first connections to a new namespace may race.
      const kv = hasBucket
        ? await kvm.open(bucket)
        : await kvm.create(bucket, { history: 1, description: "agent-chat channels" });
      // A store only exists after both were made: channels without a stream, or messages
      // without a bucket, mean one was deleted. Recreating it would silently restart at seq 1.
      const damaged =
        (!streamInfo && hasBucket && (await hasAny(kv, "meta.*"))) ||
        (streamInfo !== undefined && !hasBucket && streamInfo.state.messages > 0);
      if (damaged) {
        throw new AgentChatError(
          "BACKEND_UNAVAILABLE",
          `namespace ${target.namespace} on ${target.server} is damaged: its ${streamInfo ? "KV bucket" : "message stream"} was deleted (export what is left, delete the namespace, import it again)`,
        );
      }
      if (!streamInfo) {
        await jsm.streams.add({
          name: stream,
          subjects: [`agentchat.${target.namespace}.msg.>`],
          description: `agent-chat namespace ${target.namespace}`,
        });
      }
      const store = new NatsStore(target, nc, js, jsm, kv, () => headers(), options);
      store.watchForDeletion();
      return store;
    } catch (err) {
      await nc.close().catch(() => {});
      throw toBackendError(err, `cannot open namespace ${target.location}`);
    }
  }

  /** A stream or bucket deleted under us turns every later call into one clear error. */
  private watchForDeletion(): void {
    const prefix = "$JS.EVENT.ADVISORY.STREAM.DELETED";
    this.advisories = this.nc.subscribe(`${prefix}.*`, {
      callback: (_err, msg) => {
        const name = msg.subject.slice(prefix.length + 1);
        if (name !== this.streamName && name !== `KV_${this.bucketName}`) return;
        this.gone = new AgentChatError(
          "BACKEND_UNAVAILABLE",
          `namespace ${this.namespace} was deleted on ${this.target.server} (its ${name === this.streamName ? "message stream" : "KV bucket"} ${name} is gone)`,
        );
        for (const feed of this.feeds.values()) feed.fail(this.gone);
      },
    });
  }

  subject(channel: string): string {
    return `agentchat.${this.namespace}.msg.${token(channel)}`;
  }

  async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const meta = draftMeta(channel, options);
    await this.createMeta(channel, serializeMeta(meta));
    return meta;
  }

  private async createMeta(channel: string, text: string): Promise<void> {
    try {
      await this.guard(() => this.kv.create(metaKey(channel), text), `cannot create ${channel}`);
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new AgentChatError("CHANNEL_EXISTS", `channel ${channel} already exists`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  async channels(): Promise<ChannelInfo[]> {
    const keys = await this.guard(async () => {
      const out: string[] = [];
      for await (const key of await this.kv.keys("meta.*")) out.push(key);
      return out;
    }, "cannot list channels");
    const names = keys.map((k) => untoken(k.slice("meta.".length))).sort();
    const out: ChannelInfo[] = [];
    for (const name of names) {
      let meta: ChannelMeta;
      try {
        meta = await this.roster(name);
      } catch (err) {
        if (isAgentChatError(err, "CHANNEL_NOT_FOUND")) continue;
        throw err;
      }
      const last = await this.lastOf(name);
      out.push({
        name,
        topic: meta.topic,
        members: meta.members,
        created: meta.created,
        lastSeq: last?.seq ?? 0,
      });
    }
    return out;
  }

  async roster(channel: string): Promise<ChannelMeta> {
    validateName("channel", channel);
    const entry = await this.guard(() => this.kv.get(metaKey(channel)), `cannot read ${channel}`);
    if (entry?.operation !== "PUT") {
      throw new AgentChatError(
        "CHANNEL_NOT_FOUND",
        `no channel ${channel} in ${this.location} (create it with: agent-chat init ${channel})`,
      );
    }
    return parseMeta(entry.string(), channel);
  }

  async post(channel: string, input: PostInput): Promise<PostResult> {
    const draft = draftPost(channel, input, this.maxBodyBytes);
    // Channels are never removed one by one (a deleted namespace ends the whole store), so a
    // channel seen once needs no round trip per post to prove it exists.
    if (!this.existing.has(channel)) {
      await this.roster(channel);
      this.existing.add(channel);
    }
    // Posts from this connection to one channel go one at a time: no self-contention.
    const previous = this.tails.get(channel) ?? Promise.resolve();
    const run = previous.then(
      () => this.publishDraft(draft),
      () => this.publishDraft(draft),
    );
    this.tails.set(
      channel,
      run.catch(() => {}),
    );
    return run;
  }

  /**
   * Publishes the post as seq = last + 1, with the expected-last-subject-sequence check, and on
   * a lost race learns the new last message and tries the next seq. Every attempt carries one
   * msgID: when the server goes away mid-publish the same attempt is sent again, and should the
   * first copy have landed after all, JetStream answers the retry as a duplicate of it instead
   * of storing the post twice.
   */
  private async publishDraft(draft: PostDraft): Promise<PostResult> {
    const { channel } = draft;
    const subject = this.subject(channel);
    const msgID = randomUUID();
    const giveUpAt = Date.now() + 2 * this.timeoutMs;
    let pending: { last: LastOf | undefined; seq: number; file: string; text: string } | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        if (!pending) {
          const last = this.lastKnown.get(channel) ?? (await this.lastOf(channel));
          const seq = (last?.seq ?? 0) + 1;
          const text = serializeMessage({ ...draft, seq, ts: formatTimestamp() });
          this.checkPayload(text);
          pending = { last, seq, file: messageFileName(seq, draft.from, draft.title), text };
        }
        const { last, seq, file, text } = pending;
        const ack = await this.guard(
          () =>
            this.js.publish(subject, text, {
              msgID,
              headers: this.headers(seq, file),
              expect: { lastSubjectSequence: last?.streamSeq ?? 0 },
            }),
          `cannot post to ${channel}`,
        );
        this.lastKnown.set(channel, { streamSeq: ack.seq, seq });
        return { seq, channel, file };
      } catch (err) {
        if (this.isServerAway(err) && Date.now() < giveUpAt) {
          await delay(AWAY_RETRY_MS);
          continue;
        }
        if (!isWrongLastSequence(err)) throw err;
        // Someone else took this seq: learn the new last message and try the next one.
        pending = undefined;
        this.lastKnown.delete(channel);
        if (attempt > 3) await delay(Math.random() * Math.min(50, attempt * 2));
      }
    }
  }

  private checkPayload(text: string): void {
    const max = (this.nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM;
    const bytes = Buffer.byteLength(text);
    if (bytes > max) {
      throw new AgentChatError(
        "TOO_LARGE",
        `message is ${bytes} bytes; the NATS server accepts at most ${max} (its max_payload)`,
      );
    }
  }

  private headers(seq: number, file: string): MsgHdrs {
    const h = this.headerFactory();
    h.set(SEQ_HEADER, String(seq));
    h.set(FILE_HEADER, file);
    return h;
  }

  /** The last message of a channel, straight from the server (undefined when empty). */
  async lastOf(channel: string): Promise<LastOf | undefined> {
    const stored = await this.guard(
      () => this.jsm.streams.getMessage(this.streamName, { last_by_subj: this.subject(channel) }),
      `cannot read ${channel}`,
    );
    if (!stored) return undefined;
    const seq = Number(stored.header?.get(SEQ_HEADER));
    if (!Number.isSafeInteger(seq) || seq <= 0) {
      throw new AgentChatError(
        "PROTOCOL_ERROR",
        `the last message of ${channel} (stream seq ${stored.seq}) has no ${SEQ_HEADER} header: not written by agent-chat`,
      );
    }
    return { streamSeq: stored.seq, seq };
  }

  /** The channel's feed, caught up with everything the server held when this was called. */
  private async feed(channel: string): Promise<ChannelFeed> {
    this.check();
    let feed = this.feeds.get(channel);
    if (!feed) {
      feed = new ChannelFeed(this, channel);
      this.feeds.set(channel, feed);
      feed.start();
    }
    const last = await this.lastOf(channel);
    if (last) await feed.reach(last.streamSeq, this.timeoutMs);
    feed.throwIfFailed();
    return feed;
  }

  async cursor(channel: string, agent: string): Promise<number> {
    validateName("channel", channel);
    validateName("agent", agent);
    const entry = await this.guard(
      () => this.kv.get(cursorKey(channel, agent)),
      `cannot read the cursor of ${agent}`,
    );
    if (entry?.operation !== "PUT") return 0;
    const n = Number.parseInt(entry.string().trim(), 10);
    return Number.isSafeInteger(n) && n > 0 ? n : 0;
  }

  private async writeCursor(channel: string, agent: string, seq: number): Promise<void> {
    await this.guard(
      () => this.kv.put(cursorKey(channel, agent), String(seq)),
      `cannot save the cursor of ${agent}`,
    );
  }

  async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    validateName("agent", options.as);
    await this.roster(channel);
    const feed = await this.feed(channel);
    const cursor = await this.cursor(channel, options.as);
    const scan = feed.scan(options.all ? 0 : cursor);
    const messages = options.everyone
      ? scan.messages
      : scan.messages.filter((m) => isRelevant(m, options.as));
    let next = cursor;
    if (!options.peek && scan.scannedTo > cursor) {
      next = scan.scannedTo;
      await this.writeCursor(channel, options.as, next);
    }
    return { channel, messages, cursor: next, warnings: this.newWarnings(feed) };
  }

  async peek(channel: string, count = 3): Promise<Message[]> {
    await this.roster(channel);
    return (await this.feed(channel)).last(count);
  }

  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    validateName("agent", options.as);
    if (channels.length === 0)
      throw new AgentChatError("INVALID_ARGUMENT", "no channel to wait on");
    const unique = [...new Set(channels)];
    for (const channel of unique) await this.roster(channel);
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    const wake = new Wakeup();
    const timer = setTimeout(() => wake.fail(timeoutError(timeoutMs)), timeoutMs);
    const onAbort = () => wake.fail(abortError());
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const unsubscribe: Array<() => void> = [];
    try {
      if (options.signal?.aborted) throw abortError();
      const feeds = [];
      for (const channel of unique) {
        const feed = await this.feed(channel);
        // Listen before the first scan, so that a message in between is never missed.
        unsubscribe.push(feed.onChange(() => wake.kick()));
        feeds.push(feed);
      }
      let found: Found | undefined;
      for (;;) {
        try {
          found ??= await this.findForWait(feeds, options.as);
          if (found) {
            await this.commitWait(found, options.as);
            return found.result;
          }
        } catch (err) {
          if (!this.isServerAway(err)) throw err;
          // The server is away for a moment (a restart): the wait outlives it, as the
          // connection does, and tries again shortly. What it found is kept, so a cursor
          // saved just before the answer was lost cannot hide those messages.
          setTimeout(() => wake.kick(), AWAY_RETRY_MS).unref();
        }
        await wake.next();
        for (const feed of feeds) feed.throwIfFailed();
      }
    } finally {
      for (const off of unsubscribe) off();
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** One pass over the channels: the relevant messages after each cursor, if any. */
  private async findForWait(feeds: ChannelFeed[], agent: string): Promise<Found | undefined> {
    const scans = [];
    for (const feed of feeds) {
      const cursor = await this.cursor(feed.channel, agent);
      scans.push({ feed, cursor, scan: feed.scan(cursor) });
    }
    const messages = scans.flatMap(({ scan }) => scan.messages.filter((m) => isRelevant(m, agent)));
    if (messages.length === 0) return undefined;
    const cursors: Record<string, number> = {};
    const advance: Record<string, number> = {};
    for (const { feed, cursor, scan } of scans) {
      cursors[feed.channel] = Math.max(cursor, scan.scannedTo);
      if (scan.scannedTo > cursor) advance[feed.channel] = scan.scannedTo;
    }
    return {
      result: { messages, cursors, warnings: feeds.flatMap((f) => this.newWarnings(f)) },
      advance,
    };
  }

  /** Saves the cursors a found wait result moves (idempotent, so it may be retried). */
  private async commitWait(found: Found, agent: string): Promise<void> {
    for (const [channel, seq] of Object.entries(found.advance)) {
      await this.writeCursor(channel, agent, seq);
    }
  }

  /**
   * A request that failed only because the server is away for a moment (restarting, JetStream
   * still recovering): not a closed store, not a deleted namespace.
   */
  private isServerAway(err: unknown): boolean {
    if (!isAgentChatError(err, "BACKEND_UNAVAILABLE") || this.gone || this.nc.isClosed()) {
      return false;
    }
    const cause = (err as AgentChatError).cause as Error | undefined;
    return (
      /did not answer/.test(err.message) ||
      /timeout|disconnect/i.test(`${cause?.name ?? ""} ${cause?.message ?? ""}`)
    );
  }

  async *watch(channels: readonly string[], options: WatchOptions = {}): AsyncIterable<Message> {
    const unique = [...new Set(channels)];
    for (const channel of unique) await this.roster(channel);
    const wake = new Wakeup();
    const onAbort = () => wake.end();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const unsubscribe: Array<() => void> = [];
    try {
      const positions = new Map<ChannelFeed, number>();
      for (const channel of unique) {
        const feed = await this.feed(channel);
        unsubscribe.push(feed.onChange(() => wake.kick()));
        const after = options.after;
        positions.set(
          feed,
          typeof after === "number" ? after : (after?.[channel] ?? feed.maxSeq()),
        );
      }
      while (!options.signal?.aborted) {
        for (const [feed, position] of positions) {
          feed.throwIfFailed();
          const scan = feed.scan(position);
          positions.set(feed, scan.scannedTo);
          for (const message of scan.messages) yield message;
        }
        const more = await wake.next().then(
          () => true,
          () => false,
        );
        if (!more) return;
      }
    } finally {
      for (const off of unsubscribe) off();
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  async addTask(channel: string, task: NewTask): Promise<TaskInfo> {
    await this.roster(channel);
    const { from, title } = draftTask(task);
    const explicit = task.id === undefined ? undefined : parseTaskId(task.id);
    for (;;) {
      let id = explicit;
      if (id === undefined) {
        const numbers = (await this.tasks(channel)).map((t) => Number(t.id));
        id = String(Math.max(0, ...numbers.filter(Number.isSafeInteger)) + 1);
      }
      const text = formatTask({ id, from, title, ts: formatTimestamp(), body: task.body ?? "" });
      try {
        await this.guard(
          () => this.kv.create(taskKey(channel, id), JSON.stringify({ text })),
          `cannot create task ${id}`,
        );
        return { id, channel, state: "open", title, file: `task-${id}.md` };
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        if (explicit !== undefined) {
          throw new AgentChatError("TASK_EXISTS", `task ${id} already exists in ${channel}`);
        }
        // Another connection took the next number first: count again.
      }
    }
  }

  async tasks(channel: string): Promise<TaskInfo[]> {
    await this.roster(channel);
    const records = await this.taskRecords(channel);
    return records.map(({ id, record }) => taskInfo(channel, id, record)).sort(byId);
  }

  private async taskRecords(
    channel: string,
  ): Promise<Array<{ id: string; record: TaskRecord; revision: number }>> {
    const prefix = `task.${token(channel)}.`;
    return this.guard(async () => {
      const keys: string[] = [];
      for await (const key of await this.kv.keys(`${prefix}*`)) keys.push(key);
      const out = [];
      for (const key of keys) {
        const entry = await this.kv.get(key);
        if (entry?.operation !== "PUT") continue;
        out.push({
          id: key.slice(prefix.length),
          record: entry.json<TaskRecord>(),
          revision: entry.revision,
        });
      }
      return out;
    }, `cannot list the tasks of ${channel}`);
  }

  private async taskRecord(
    channel: string,
    id: string,
  ): Promise<{ record: TaskRecord; revision: number }> {
    const entry = await this.guard(
      () => this.kv.get(taskKey(channel, id)),
      `cannot read task ${id}`,
    );
    if (entry?.operation !== "PUT") {
      throw new AgentChatError("TASK_NOT_FOUND", `no task ${id} in ${channel}`);
    }
    return { record: entry.json<TaskRecord>(), revision: entry.revision };
  }

  async claim(channel: string, task: string, agent: string): Promise<TaskInfo> {
    const id = parseTaskId(task);
    validateName("agent", agent);
    await this.roster(channel);
    const holder = identity(agent);
    const { record, revision } = await this.taskRecord(channel, id);
    if (record.holder !== undefined) {
      throw new AgentChatError(
        "CLAIM_LOST",
        `task ${id} is already claimed by ${record.holder === holder ? "you" : record.holder}`,
      );
    }
    const claimed: TaskRecord = { ...record, holder };
    try {
      await this.guard(
        () => this.kv.update(taskKey(channel, id), JSON.stringify(claimed), revision),
        `cannot claim task ${id}`,
      );
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new AgentChatError("CLAIM_LOST", `task ${id} was claimed by someone else`);
      }
      throw err;
    }
    return taskInfo(channel, id, claimed);
  }

  async release(channel: string, task: string, agent: string): Promise<TaskInfo> {
    const id = parseTaskId(task);
    validateName("agent", agent);
    await this.roster(channel);
    const me = identity(agent);
    for (;;) {
      const { record, revision } = await this.taskRecord(channel, id);
      if (record.holder === undefined) {
        throw new AgentChatError("NOT_HOLDER", `task ${id} is not claimed`);
      }
      if (record.holder !== me) {
        throw new AgentChatError(
          "NOT_HOLDER",
          `task ${id} is claimed by ${record.holder}; only the holder can release it`,
        );
      }
      const open: TaskRecord = { text: record.text };
      try {
        await this.guard(
          () => this.kv.update(taskKey(channel, id), JSON.stringify(open), revision),
          `cannot release task ${id}`,
        );
        return taskInfo(channel, id, open);
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        // Changed between our read and our update: look again.
      }
    }
  }

  /** Everything of one channel in SPEC-folder form (export). */
  async dump(channel: string): Promise<ChannelDump> {
    const entry = await this.guard(() => this.kv.get(metaKey(channel)), `cannot read ${channel}`);
    if (entry?.operation !== "PUT") {
      throw new AgentChatError("CHANNEL_NOT_FOUND", `no channel ${channel} in ${this.location}`);
    }
    const feed = await this.feed(channel);
    const cursors: Record<string, number> = {};
    const prefix = `cursor.${token(channel)}.`;
    await this.guard(async () => {
      for await (const key of await this.kv.keys(`${prefix}*`)) {
        const e = await this.kv.get(key);
        const n = Number(e?.operation === "PUT" ? e.string() : Number.NaN);
        if (Number.isSafeInteger(n) && n > 0) cursors[key.slice(prefix.length)] = n;
      }
    }, `cannot read the cursors of ${channel}`);
    const tasks = (await this.taskRecords(channel)).map(({ id, record }) => ({
      file: taskInfo(channel, id, record).file,
      text: record.text,
    }));
    return { name: channel, metaText: entry.string(), messages: feed.texts(), cursors, tasks };
  }

  /**
   * Writes a channel read from a SPEC folder (import), keeping its sequence numbers. The channel
   * must not exist yet; messages must come in ascending seq order.
   */
  async restore(dump: ChannelDump): Promise<void> {
    validateName("channel", dump.name);
    parseMeta(dump.metaText, dump.name);
    await this.createMeta(dump.name, dump.metaText);
    const subject = this.subject(dump.name);
    let last = (await this.lastOf(dump.name))?.streamSeq ?? 0;
    let previous = 0;
    for (const m of dump.messages) {
      if (m.seq <= previous) {
        throw new AgentChatError(
          "INVALID_ARGUMENT",
          `messages of ${dump.name} are not in ascending seq order at ${m.file}`,
        );
      }
      this.checkPayload(m.text);
      const ack = await this.guard(
        () =>
          this.js.publish(subject, m.text, {
            headers: this.headers(m.seq, m.file),
            expect: { lastSubjectSequence: last },
          }),
        `cannot import ${m.file}`,
      );
      last = ack.seq;
      previous = m.seq;
    }
    for (const [agent, seq] of Object.entries(dump.cursors)) {
      await this.writeCursor(dump.name, agent, seq);
    }
    for (const task of dump.tasks) {
      const m = TASK_FILE.exec(task.file);
      if (!m) continue;
      const record: TaskRecord = { text: task.text };
      if (m[2]) record.holder = m[2];
      await this.guard(
        () => this.kv.create(taskKey(dump.name, m[1]!), JSON.stringify(record)),
        `cannot import ${task.file}`,
      );
    }
  }

  async close(): Promise<void> {
    for (const feed of this.feeds.values()) feed.stop();
    this.feeds.clear();
    this.advisories?.unsubscribe();
    await this.nc.close().catch(() => {});
  }

  /** Warnings about undeliverable messages, each reported once per store. */
  private newWarnings(feed: ChannelFeed): string[] {
    const out = [];
    for (const w of feed.warnings) {
      const key = `${feed.channel}/${w}`;
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      out.push(w);
    }
    return out;
  }

  private check(): void {
    if (this.gone) throw this.gone;
  }

  /** Runs one server call, turning every failure into an AgentChatError with a clear message. */
  async guard<T>(fn: () => Promise<T>, what: string): Promise<T> {
    this.check();
    try {
      return await fn();
    } catch (err) {
      if (isWrongLastSequence(err)) throw err;
      if (this.gone) throw this.gone;
      const e = err as Error;
      if (e?.name === "StreamNotFoundError" || /stream not found/i.test(e?.message ?? "")) {
        throw new AgentChatError(
          "BACKEND_UNAVAILABLE",
          `${what}: namespace ${this.namespace} was deleted on ${this.target.server}`,
          { cause: err },
        );
      }
      if (e?.name === "JetStreamNotEnabled" || /no responders/i.test(e?.message ?? "")) {
        const streamThere = await exists(() => this.jsm.streams.info(this.streamName)).catch(
          () => true,
        );
        throw new AgentChatError(
          "BACKEND_UNAVAILABLE",
          streamThere
            ? `${what}: JetStream did not answer on ${this.target.server}`
            : `${what}: namespace ${this.namespace} was deleted on ${this.target.server}`,
          { cause: err },
        );
      }
      throw toBackendError(err, what);
    }
  }
}

/** A wait whose scan found relevant messages, and the cursors it moves. */
interface Found {
  result: WaitResult;
  advance: Record<string, number>;
}

/** How soon a wait scans again after the server did not answer. */
const AWAY_RETRY_MS = 250;

function toBackendError(err: unknown, what: string): AgentChatError {
  if (err instanceof AgentChatError) return err;
  const e = err as Error;
  const name = e?.name ?? "";
  let why = e?.message ?? String(err);
  if (name === "TimeoutError" || /timeout/i.test(why))
    why = "the NATS server did not answer in time";
  else if (name === "ClosedConnectionError") why = "the connection to the NATS server is closed";
  else if (/permission/i.test(why)) why = `permission denied (${why})`;
  return new AgentChatError("BACKEND_UNAVAILABLE", `${what}: ${why}`, { cause: err });
}

export function isWrongLastSequence(err: unknown): boolean {
  const e = err as { code?: unknown; message?: string };
  return e?.code === WRONG_LAST_SEQUENCE || /wrong last sequence/i.test(e?.message ?? "");
}

async function exists(fn: () => Promise<unknown>): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as Error;
  return e?.name === "StreamNotFoundError" || /not found/i.test(e?.message ?? "");
}

async function hasAny(kv: KV, filter: string): Promise<boolean> {
  const keys = await kv.keys(filter);
  for await (const _ of keys) {
    keys.stop();
    return true;
  }
  return false;
}

/** A subject token for a channel: channel names may hold `.`, subject tokens may not. */
function token(channel: string): string {
  return channel.replaceAll(".", "=");
}

function untoken(tok: string): string {
  return tok.replaceAll("=", ".");
}

function bucketOf(namespace: string): string {
  return `agentchat-${namespace}`;
}

function metaKey(channel: string): string {
  return `meta.${token(channel)}`;
}

function cursorKey(channel: string, agent: string): string {
  return `cursor.${token(channel)}.${identity(agent)}`;
}

function taskKey(channel: string, id: string): string {
  return `task.${token(channel)}.${id}`;
}

function taskInfo(channel: string, id: string, record: TaskRecord): TaskInfo {
  const title = parseTaskFile(record.text).title;
  if (record.holder !== undefined) {
    return {
      id,
      channel,
      state: "claimed",
      holder: record.holder,
      title,
      file: `task-${id}.CLAIMED-${record.holder}.md`,
    };
  }
  return { id, channel, state: "open", title, file: `task-${id}.md` };
}

function byId(a: TaskInfo, b: TaskInfo): number {
  return compareTaskIds(a.id, b.id);
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
