import { randomUUID } from "node:crypto";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import { formatTimestamp, messageFileName, parseSeqText } from "../../core/message.js";
import { type ChannelMeta, parseMeta, serializeMeta } from "../../core/meta.js";
import { identity, validateName } from "../../core/names.js";
import {
  BackendStore,
  type Feed,
  formatLease,
  HOLDER,
  type Lease,
  type PostDraft,
  parseLease,
  renderMessage,
  TASK_FILE,
  type TaskRecord,
  taskFileName,
} from "../core/index.js";
import type { Capabilities, PostResult } from "../types.js";
import { connectNats, DEFAULT_NATS_TIMEOUT_MS } from "./connect.js";
import { ChannelFeed, FILE_HEADER, SEQ_HEADER } from "./feed.js";
import { type NatsStoreOptions, type NatsTarget, parseNatsUrl } from "./options.js";

/** JetStream's error code for a failed expected-last-(subject-)sequence check. */
const WRONG_LAST_SEQUENCE = 10071;
/** Leaves room for the headers inside the server's max_payload. */
const HEADER_ROOM = 1024;

/**
 * A task marker as kept in KV: the marker file's text, its holder once claimed, and its lease
 * (the same JSON as the folder store's lease file, read as untrusted input too).
 */
interface StoredTask {
  text: string;
  holder?: string;
  lease?: Lease;
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
  /** Task markers, each with its lease (the folder store's lease file text) when it has one. */
  tasks: Array<{ file: string; text: string; lease?: string }>;
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
export class NatsStore extends BackendStore {
  readonly capabilities: Capabilities = { multiHost: true, specFolder: false };
  readonly location: string;
  readonly namespace: string;
  private readonly feeds = new Map<string, ChannelFeed>();
  private readonly lastKnown = new Map<string, LastOf>();
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
    super(options.maxBodyBytes, options.now);
    this.location = target.location;
    this.namespace = target.namespace;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_NATS_TIMEOUT_MS;
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

  protected async createChannel(channel: string, meta: ChannelMeta): Promise<void> {
    await this.createMeta(channel, serializeMeta(meta));
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

  protected async channelNames(): Promise<string[]> {
    const keys = await this.guard(async () => {
      const out: string[] = [];
      for await (const key of await this.kv.keys("meta.*")) out.push(key);
      return out;
    }, "cannot list channels");
    return keys.map((k) => untoken(k.slice("meta.".length))).sort();
  }

  protected async lastSeq(channel: string): Promise<number> {
    return (await this.lastOf(channel))?.seq ?? 0;
  }

  protected async readMeta(channel: string): Promise<ChannelMeta> {
    const entry = await this.guard(() => this.kv.get(metaKey(channel)), `cannot read ${channel}`);
    if (entry?.operation !== "PUT") {
      throw new AgentChatError(
        "CHANNEL_NOT_FOUND",
        `no channel ${channel} in ${this.location} (create it with: agent-chat init ${channel})`,
      );
    }
    return parseMeta(entry.string(), channel);
  }

  /**
   * Publishes the post as seq = last + 1, with the expected-last-subject-sequence check, and on
   * a lost race learns the new last message and tries the next seq. Every attempt carries one
   * msgID: when the server goes away mid-publish the same attempt is sent again, and should the
   * first copy have landed after all, JetStream answers the retry as a duplicate of it instead
   * of storing the post twice.
   */
  protected async append(draft: PostDraft): Promise<PostResult> {
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
          const text = renderMessage(draft, seq, formatTimestamp());
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
        if (this.isTransient(err) && Date.now() < giveUpAt) {
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

  protected override openFeed(channel: string): Promise<Feed> {
    return this.feed(channel).then((feed) => ({
      channel,
      scan: async (after) => ({ ...feed.scan(after), warnings: this.newWarnings(feed) }),
      maxSeq: async () => feed.maxSeq(),
      last: async (count) => feed.last(count),
      onChange: (listener) => feed.onChange(listener),
      throwIfFailed: () => feed.throwIfFailed(),
    }));
  }

  protected async loadCursor(channel: string, agent: string): Promise<number> {
    const entry = await this.guard(
      () => this.kv.get(cursorKey(channel, agent)),
      `cannot read the cursor of ${agent}`,
    );
    return entry?.operation === "PUT" ? parseSeqText(entry.string()) : 0;
  }

  protected async saveCursor(channel: string, agent: string, seq: number): Promise<void> {
    await this.guard(
      () => this.kv.put(cursorKey(channel, agent), String(seq)),
      `cannot save the cursor of ${agent}`,
    );
  }

  /**
   * A request that failed only because the server is away for a moment (restarting, JetStream
   * still recovering): not a closed store, not a deleted namespace.
   */
  protected override isTransient(err: unknown): boolean {
    if (!isAgentChatError(err, "BACKEND_UNAVAILABLE") || this.gone || this.nc.isClosed()) {
      return false;
    }
    const cause = (err as AgentChatError).cause as Error | undefined;
    return (
      /did not answer/.test(err.message) ||
      /timeout|disconnect/i.test(`${cause?.name ?? ""} ${cause?.message ?? ""}`)
    );
  }

  protected async taskRecords(channel: string): Promise<TaskRecord[]> {
    const prefix = `task.${token(channel)}.`;
    return this.guard(async () => {
      const keys: string[] = [];
      for await (const key of await this.kv.keys(`${prefix}*`)) keys.push(key);
      const out: TaskRecord[] = [];
      for (const key of keys) {
        const entry = await this.kv.get(key);
        if (entry?.operation !== "PUT") continue;
        const stored = storedTask(entry.string());
        // A value that is no task of ours (written by another client) is no task, as a marker
        // that cannot be read is none on the folder store: it never hides the others.
        if (stored) out.push(taskRecord(key.slice(prefix.length), stored, entry.revision));
      }
      return out;
    }, `cannot list the tasks of ${channel}`);
  }

  protected override async taskRecord(
    channel: string,
    id: string,
  ): Promise<TaskRecord | undefined> {
    const entry = await this.guard(
      () => this.kv.get(taskKey(channel, id)),
      `cannot read task ${id}`,
    );
    if (entry?.operation !== "PUT") return undefined;
    const stored = storedTask(entry.string());
    return stored && taskRecord(id, stored, entry.revision);
  }

  protected async createTaskRecord(channel: string, id: string, text: string): Promise<boolean> {
    try {
      await this.guard(
        () => this.kv.create(taskKey(channel, id), JSON.stringify({ text })),
        `cannot create task ${id}`,
      );
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }

  /** The marker, its holder and its lease change in one update, checked against the revision. */
  protected async swapTaskRecord(
    channel: string,
    current: TaskRecord,
    { holder, lease }: { holder: string | undefined; lease: Lease },
  ): Promise<boolean> {
    const next: StoredTask =
      holder === undefined ? { text: current.text, lease } : { text: current.text, holder, lease };
    const verb = holder === undefined ? "release" : "claim";
    try {
      await this.guard(
        () =>
          this.kv.update(
            taskKey(channel, current.id),
            JSON.stringify(next),
            Number(current.version),
          ),
        `cannot ${verb} task ${current.id}`,
      );
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
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
    const tasks = (await this.taskRecords(channel)).map(({ id, holder, text, lease }) => ({
      file: taskFileName(id, holder),
      text,
      ...(lease === undefined ? {} : { lease: formatLease(lease) }),
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
      await this.saveCursor(dump.name, agent, seq);
    }
    for (const task of dump.tasks) {
      const m = TASK_FILE.exec(task.file);
      if (!m) continue;
      const record: StoredTask = { text: task.text };
      if (m[2]) record.holder = m[2];
      // The lease comes from an untrusted folder: only what parses is kept, the token above all.
      const lease = task.lease === undefined ? undefined : parseLease(task.lease).lease;
      if (lease) record.lease = lease;
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
    const out: string[] = [];
    for (const w of feed.warnings) this.warnOnce(w, (warning) => out.push(warning), feed.channel);
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

/** How soon a post is sent again after the server did not answer. */
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

/** A task value as read from KV, which any client of the server may have written. */
function storedTask(text: string): StoredTask | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const v = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof v.text !== "string") return undefined;
  if (v.holder !== undefined && (typeof v.holder !== "string" || !HOLDER.test(v.holder))) {
    return undefined;
  }
  return v as unknown as StoredTask;
}

function taskRecord(id: string, stored: StoredTask, revision: number): TaskRecord {
  const record: TaskRecord = { id, text: stored.text, version: revision };
  if (stored.holder !== undefined) record.holder = stored.holder;
  if (stored.lease !== undefined) {
    const { lease, problem } = parseLease(JSON.stringify(stored.lease));
    if (lease) record.lease = lease;
    if (problem !== undefined) record.problem = problem;
  }
  return record;
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
