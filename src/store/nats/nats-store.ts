import { randomUUID } from "node:crypto";
import type {
  JetStreamClient,
  JetStreamManager,
  MsgRequest,
  StoredMsg,
  StreamInfo,
} from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import { parseUntrustedJson } from "../../core/json.js";
import {
  cursorSeq,
  formatTimestamp,
  MAX_SEQ,
  MAX_SEQ_GAP,
  messageFileName,
} from "../../core/message.js";
import { type ChannelMeta, parseMeta, serializeMeta, withOurKeys } from "../../core/meta.js";
import { identity, validateName } from "../../core/names.js";
import { FeatureStore } from "../feature-store.js";
import type { ArchiveOptions, ArchiveResult, PruneOptions, PruneResult } from "../find-types.js";
import type { Note, NoteKind, NoteStore } from "../records/index.js";
import {
  formatPathLeases,
  type PathLeaseDoc,
  type PathLeaseRecord,
  parsePathLeases,
} from "../records/index.js";
import { type NatsTarget, parseNatsUrl } from "../roots.js";
import {
  type CursorMove,
  corruptCursor,
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
} from "../shared/index.js";
import type { Capabilities, PostResult, PublishedKeyDirectory, Retention } from "../types.js";
import { connectNats, DEFAULT_NATS_TIMEOUT_MS } from "./connect.js";
import { ChannelFeed, FILE_HEADER, readStored, SEQ_HEADER } from "./feed.js";
import { CasWriter, isWrongLastSequence } from "./kv-cas.js";
import type { NatsStoreOptions } from "./options.js";
import {
  ATTEMPT_MS,
  delay,
  isElecting,
  isTimedOut,
  NOT_ROUTED_YET,
  type Patience,
  patiently,
  RETRY_PAUSE_MS,
  retryWindowMs,
} from "./patience.js";
import {
  checkReplicas,
  clusterSize,
  createReplicated,
  replicasFor,
  replicaWarning,
  setReplicas,
} from "./replicas.js";
import { type AgedEntry, archiveNats, pruneNats } from "./retention.js";

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

/**
 * A channel's high-water mark as of one of its messages: that message's stream seq (for the
 * publish check) and the largest seq of ours up to it (see `lastOf`).
 */
interface LastOf {
  streamSeq: number;
  seq: number;
}

/** A channel's mark as last read or written here, with its KV revision (0: none). */
interface KnownMark extends LastOf {
  revision: number;
}

/** The stream seqs after a channel's mark up to `upTo`, to read at once (see `readSpan`). */
interface SpanToRead {
  mark: LastOf;
  upTo: number;
}

/**
 * A post's view of the channel's last message, and the checks that it is still last: always
 * the channel's own (the message the post numbered after), on a cluster the stream's too.
 */
interface Basis {
  last: LastOf;
  expect: { lastSubjectSequence: number; lastSequence?: number };
}

/**
 * The same connection's JetStream client, manager and bucket for requests that are safe to
 * send twice (reads): each waits ATTEMPT_MS, then is sent again (see `ask`).
 */
interface Quick {
  js: JetStreamClient;
  jsm: JetStreamManager;
  kv: KV;
}

/** One attempt of a post: its basis, seq and text; `sent` once a copy went to the server. */
interface Pending {
  channel: string;
  basis: Basis;
  seq: number;
  file: string;
  text: string;
  sent: boolean;
  /** The stream seq of the turn marker this attempt expects (see `inTurn`). */
  turn?: number;
}

/** A post as stored: its stream seq, and the seq and file name its headers carry. */
interface Copy {
  streamSeq: number;
  seq: number;
  file: string;
}

/** The copy a stored message of ours is (our own headers, written by this very post). */
function copyOf(stored: StoredMsg): Copy {
  return {
    streamSeq: stored.seq,
    seq: Number(stored.header?.get(SEQ_HEADER)),
    file: stored.header?.get(FILE_HEADER) ?? "",
  };
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
 * The NATS JetStream backend (docs/design.md §6): one stream per namespace with one subject per
 * channel, one KV bucket per namespace for channel metadata, cursors and task markers.
 *
 * - Gapless seq: a post publishes seq = the channel's high-water mark + 1 (see `lastOf`) with the
 *   expected-last-subject-sequence header set to the stream seq of the last message it knows; a
 *   concurrent post (or any other publish) makes the server refuse it, and it re-reads and
 *   retries. Our seq travels in a header and must match the text.
 * - init, addTask and claim are KV creates or revision-checked updates: exactly one winner.
 * - read, wait, peek and watch read through a per-channel ordered consumer that the server
 *   pushes to; after a reconnect it resumes after the last stream seq it delivered.
 */
export class NatsStore extends FeatureStore {
  readonly capabilities: Capabilities = { multiHost: true, specFolder: false };
  readonly location: string;
  readonly namespace: string;
  private readonly feeds = new Map<string, ChannelFeed>();
  private readonly lastKnown = new Map<string, LastOf>();
  /** Each channel's mark in KV as last read or written here (see `raiseMark`). */
  private readonly marks = new Map<string, KnownMark>();
  /** The highest mark asked for per channel and not yet written (see `raiseMark`). */
  private readonly wantedMarks = new Map<string, LastOf>();
  /** The mark write under way per channel (close waits for them). */
  private readonly markWrites = new Map<string, Promise<void>>();
  /** The stream seq of this store's last post, for the cluster's check (see `basis`). */
  private streamLast = -1;
  /** Connected to a cluster: posts check the stream's last sequence (see `basis`). */
  private readonly clustered: boolean;
  /** The cluster's revision-checked KV writes (see CasWriter). */
  private readonly cas: CasWriter;
  /** Each cursor's value and revision as last read or written here (see `saveCursor`). */
  private readonly cursors = new Map<string, KnownCursor>();
  /** Names this store's cursor saves (see `saveCursor`), with a count of them. */
  private readonly savePrefix = randomUUID();
  private saves = 0;
  private readonly timeoutMs: number;
  private gone: AgentChatError | undefined;
  private advisories: Subscription | undefined;
  /** A move off a server that stopped answering, while one is under way. */
  private leaving: Promise<void> | undefined;

  private constructor(
    private readonly target: NatsTarget,
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly kv: KV,
    private readonly quick: Quick,
    private readonly headerFactory: () => MsgHdrs,
    private readonly options: NatsStoreOptions,
  ) {
    super(options.maxBodyBytes, options.now, options);
    this.location = target.location;
    this.namespace = target.namespace;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_NATS_TIMEOUT_MS;
    this.clustered = nc.info?.cluster !== undefined;
    this.cas = new CasWriter(js, jsm, this.bucketName);
  }

  /** For the channel feeds: their consumers are asked for again soon (see FeedSource). */
  get feedJs(): JetStreamClient {
    return this.quick.js;
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
    const timeout = options.timeoutMs ?? DEFAULT_NATS_TIMEOUT_MS;
    const started = Date.now();
    const nc = await connectNats(target, options);
    try {
      // Opening outlasts a leader election (a node frozen or dead), as a post's retries do.
      const clustered = nc.info?.cluster !== undefined;
      const deadline =
        started + retryWindowMs(options.timeoutMs, DEFAULT_NATS_TIMEOUT_MS, clustered, 2);
      const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");
      const { headers } = await import("@nats-io/transport-node");
      const { Kvm } = await import("@nats-io/kv");
      const attempt = Math.min(timeout, ATTEMPT_MS);
      // No account-info request first: only the meta leader answers it, and it may be the node
      // that is down. A server without JetStream shows at the first stream request instead.
      const jsm = await jetstreamManager(nc, { timeout, checkAPI: false });
      const js = jetstream(nc, { timeout, checkAPI: false });
      const quickJs = jetstream(nc, { timeout: attempt, checkAPI: false });
      const quickJsm = await jetstreamManager(nc, { timeout: attempt, checkAPI: false });
      const kv = await openNamespace({ nc, js, jsm: quickJsm, target, options, deadline });
      const quick = {
        js: quickJs,
        jsm: quickJsm,
        kv: await new Kvm(quickJs).open(bucketOf(target.namespace)),
      };
      const store = new NatsStore(target, nc, js, jsm, kv, quick, () => headers(), options);
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
    const created = await this.guard(
      () => this.kvCreate(metaKey(channel), text),
      `cannot create ${channel}`,
    );
    if (!created) throw new AgentChatError("CHANNEL_EXISTS", `channel ${channel} already exists`);
  }

  /**
   * Public keys (docs/signatures.md) under `keys.<identity>` in the namespace's bucket, each
   * written over the revision its writer read: two rotations at once cannot both land.
   */
  readonly publishedKeys: PublishedKeyDirectory = {
    get: async (name) => {
      const entry = await this.ask(
        () => this.quick.kv.get(publishedKeyKey(name)),
        "cannot read keys",
      );
      if (entry?.operation !== "PUT") return undefined;
      return { text: entry.string(), revision: entry.revision };
    },
    put: (name, text, revision) =>
      this.guard(
        () =>
          revision === 0
            ? this.kvCreate(publishedKeyKey(name), text)
            : this.kvUpdate(publishedKeyKey(name), text, revision),
        "cannot publish a key",
      ),
  };

  /** KV create: exactly one winner, on a cluster too (see CasWriter). */
  private async kvCreate(key: string, value: string): Promise<boolean> {
    if (this.clustered) {
      const set = await this.cas.set(key, value, (state) => state === undefined);
      return set !== undefined;
    }
    try {
      await this.kv.create(key, value);
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }

  /** KV update checked against the revision read: exactly one winner, on a cluster too. */
  private async kvUpdate(key: string, value: string, revision: number): Promise<boolean> {
    if (this.clustered) {
      const set = await this.cas.set(key, value, (state) => state?.revision === revision);
      return set !== undefined;
    }
    try {
      await this.kv.update(key, value, revision);
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }

  protected async channelNames(): Promise<string[]> {
    const keys = await this.ask(async () => {
      const out: string[] = [];
      for await (const key of await this.kv.keys("meta.*")) out.push(key);
      return out;
    }, "cannot list channels");
    return keys.map((k) => untoken(k.slice("meta.".length))).sort();
  }

  protected async lastSeq(channel: string): Promise<number> {
    return (await this.lastOf(channel)).seq;
  }

  protected async readMeta(channel: string): Promise<ChannelMeta> {
    return (await this.metaRecord(channel)).meta;
  }

  /** The channel's meta with the revision of its record. */
  private async metaRecord(channel: string): Promise<{ meta: ChannelMeta; revision: number }> {
    const entry = await this.ask(
      () => this.quick.kv.get(metaKey(channel)),
      `cannot read ${channel}`,
    );
    if (entry?.operation !== "PUT") {
      throw new AgentChatError(
        "CHANNEL_NOT_FOUND",
        `no channel ${channel} in ${this.location} (create it with: agent-chat init ${channel})`,
      );
    }
    return { meta: parseMeta(entry.string(), channel), revision: entry.revision };
  }

  /**
   * Rewrites the channel's meta record over the revision it was read at, a compare-and-set: of
   * two changes made at once, the one that lost the race is made again from the meta the other
   * left, so neither is lost (docs/nats.md). Only keys of ours change, as on a folder.
   */
  async updateMeta(
    channel: string,
    update: (meta: ChannelMeta) => ChannelMeta,
  ): Promise<ChannelMeta> {
    validateName("channel", channel);
    for (;;) {
      const { meta, revision } = await this.metaRecord(channel);
      const next = withOurKeys(meta, update(meta));
      const written = await this.guard(
        () => this.kvUpdate(metaKey(channel), serializeMeta(next), revision),
        `cannot update channel ${channel}`,
      );
      if (written) return next;
    }
  }

  /**
   * Publishes the post as seq = last + 1, with a check that the channel's last message is still
   * last (see `basis`), and on a lost race learns the new last message and tries the next seq.
   * Every attempt carries the post's one msgID: when the server goes away mid-publish (a node
   * or the stream leader died) the same attempt is sent again, and should an earlier copy have
   * landed after all, JetStream answers as a duplicate of it instead of storing the post twice,
   * and the post is that copy, under the seq it carries (a later attempt may have built another
   * seq meanwhile). A single nats-server 2.10 and later checks the expected sequence before its
   * duplicate window and refuses a resent copy as a lost race: the copy is then looked for where
   * it would be (see `landed`).
   */
  protected async append(draft: PostDraft): Promise<PostResult> {
    const { channel } = draft;
    const msgID = randomUUID();
    const giveUpAt = Date.now() + this.retryMs(2);
    let pending: Pending | undefined;
    let lost = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        pending ??=
          this.clustered && lost >= TURN_AFTER
            ? await this.inTurn(draft)
            : await this.onBasis(draft, await this.basis(channel));
        return this.posted(pending, await this.publishOnce(channel, pending, msgID), attempt);
      } catch (err) {
        const landed = await this.landed(err, pending, msgID);
        if (landed) return this.posted(pending!, landed, attempt);
        // Someone else took this seq: learn the new last message and try the next one.
        if (await this.afterFailedPost(err, channel, attempt, giveUpAt)) {
          pending = undefined;
          lost++;
        }
      }
    }
  }

  /**
   * Notes an acknowledged post and answers with its stored copy, which may be an earlier
   * attempt's (another seq) that landed after all: all attempts of a post share one msgID.
   */
  private posted(pending: Pending, { streamSeq, seq, file }: Copy, attempt: number): PostResult {
    const { channel, turn } = pending;
    this.lastKnown.set(channel, { streamSeq, seq });
    const mark = this.marks.get(channel);
    // A post that read past the mark moved it (see `lastOf`); posts on this store's own basis
    // move it now and then, so that a store reading anew reads some MARK_EVERY at most.
    if (mark && !this.markWrites.has(channel) && seq - mark.seq >= MARK_EVERY) {
      this.raiseMark(channel, { streamSeq, seq });
    }
    this.streamLast = streamSeq;
    this.options.onPosted?.({ channel, seq, tries: attempt + 1 });
    if (turn !== undefined && turn % PURGE_TURNS_EVERY === 0) {
      // Markers are removed now and then, in the background (a leftover one is harmless).
      this.jsm.streams
        .purge(this.streamName, { filter: turnSubject(this.subject(channel)), seq: turn + 1 })
        .catch(() => {});
    }
    return { seq, channel, file };
  }

  /**
   * The post lost TURN_AFTER races in a row on a cluster: another poster keeps winning, as it
   * posts again at once on what it knows while a loser must first read. So this post takes its
   * turn: a marker on the channel's turn subject, which lands unchecked and moves the stream's
   * last sequence, makes the others' next publishes fail their check and read again, while this
   * post reads its channel once after the marker and publishes expecting the marker: it is one
   * read ahead of them. (Readers never see markers: they read the channel's own subject.)
   */
  private async inTurn(draft: PostDraft): Promise<Pending> {
    const { channel } = draft;
    const [marker, mark] = await Promise.all([
      this.guard(
        () =>
          this.js.publish(turnSubject(this.subject(channel)), "", {
            timeout: Math.min(this.timeoutMs, ATTEMPT_MS),
          }),
        `cannot post to ${channel}`,
      ),
      this.readMark(channel),
    ]);
    // The leader answered once the marker was applied: the channel is read up to it after it.
    const last = await this.lastOf(channel, { mark, upTo: marker.seq });
    const expect = { lastSequence: marker.seq, lastSubjectSequence: last.streamSeq };
    const pending = await this.onBasis(draft, { last, expect });
    return { ...pending, turn: marker.seq };
  }

  /** The post as seq = last + 1 on `basis`. */
  private async onBasis(draft: PostDraft, basis: Basis): Promise<Pending> {
    const { channel } = draft;
    const seq = basis.last.seq + 1;
    if (seq > MAX_SEQ) {
      throw new AgentChatError(
        "TOO_LARGE",
        `channel ${channel} has no numbers left: a message on its subject holds ${MAX_SEQ}, the largest number`,
      );
    }
    const text = renderMessage(draft, seq, formatTimestamp());
    this.checkPayload(text);
    const file = messageFileName(seq, draft.from, draft.title);
    return { channel, basis, seq, file, text, sent: false };
  }

  /** One publish of the attempt; its stored copy (for a duplicate, the copy read back). */
  private async publishOnce(channel: string, pending: Pending, msgID: string): Promise<Copy> {
    const { basis, seq, file, text } = pending;
    const publishing = this.js.publish(this.subject(channel), text, {
      msgID,
      headers: this.headers(seq, file),
      expect: basis.expect,
      // Sent again under the same msgID when unanswered: a new leader soon takes it.
      timeout: Math.min(this.timeoutMs, ATTEMPT_MS),
    });
    // From here the copy may be stored even if no answer comes.
    pending.sent = true;
    // The guard may give up before the publish settles (a closed or stuck connection): its
    // late refusal is then nobody's to handle, and must not surface as an unhandled rejection.
    publishing.catch(() => {});
    // One answer: the post itself sends the publish again when that answer was no answer, an
    // election or a subject not routed yet (see `afterFailedPost`).
    const ack = await this.guardOnce(() => publishing, `cannot post to ${channel}`);
    if (ack.duplicate) return this.confirmDuplicate(ack.seq, msgID, channel);
    return { streamSeq: ack.seq, seq, file };
  }

  /**
   * When a copy already sent was refused as a lost race (a resend): the post's copy if it is
   * stored after all, found where it must be (the channel's first message after the attempt's
   * basis, carrying the post's msgID, which JetStream stores once).
   */
  private async landed(
    err: unknown,
    pending: Pending | undefined,
    msgID: string,
  ): Promise<Copy | undefined> {
    if (!pending?.sent || !isWrongLastSequence(err)) return undefined;
    const { channel } = pending;
    const after = pending.basis.last.streamSeq;
    const next = await this.ask(
      () =>
        // The server takes `next_by_subj` here too; the client's type names it for direct gets.
        this.quick.jsm.streams.getMessage(this.streamName, {
          next_by_subj: this.subject(channel),
          seq: after + 1,
        } as unknown as MsgRequest),
      `cannot read ${channel}`,
    ).catch(() => null);
    return next?.header?.get("Nats-Msg-Id") === msgID ? copyOf(next) : undefined;
  }

  /**
   * Decides what a failed publish does next: false sends the same text and msgID again after a
   * pause (the server was away), true builds a new seq (another post took this one); any other
   * error is thrown.
   */
  private async afterFailedPost(
    err: unknown,
    channel: string,
    attempt: number,
    giveUpAt: number,
  ): Promise<boolean> {
    if (this.isTransient(err) && Date.now() < giveUpAt) {
      if (isTimedOut(err)) await this.leaveIfStuck();
      await delay(RETRY_PAUSE_MS);
      return false;
    }
    if (!isWrongLastSequence(err)) throw err;
    this.lastKnown.delete(channel);
    if (attempt > 3) await delay(Math.random() * Math.min(50, attempt * 2));
    return true;
  }

  /**
   * What a post builds on: the channel's last message, and the checks the server makes that it
   * is still the last. A single server checks the subject's last sequence in order. A cluster
   * (nats-server 2.9) checks that one against the messages it applied, not those still in
   * flight, so two concurrent posts could both pass (nats-server#4320); it checks the stream's
   * last sequence against what it proposed, so there a post expects the stream's last message
   * too, read before the channel's last so that the two agree (a message after it fails).
   * The channel's check stays: the two reads are two requests, and around a healed partition
   * each may be answered by another leader, a cut-off one answering from its stale copy. A
   * fresh stream sequence beside a stale last message would pass the stream's check alone and
   * store the post under a number already taken (readers skip it: acknowledged, yet lost).
   */
  private async basis(channel: string): Promise<Basis> {
    const cached = this.lastKnown.get(channel);
    if (!this.clustered) {
      const last = cached ?? (await this.lastOf(channel));
      return { last, expect: { lastSubjectSequence: last.streamSeq } };
    }
    if (cached && cached.streamSeq === this.streamLast) {
      const expect = { lastSequence: cached.streamSeq, lastSubjectSequence: cached.streamSeq };
      return { last: cached, expect };
    }
    const [info, mark] = await Promise.all([
      this.ask(() => this.quick.jsm.streams.info(this.streamName), `cannot read ${channel}`),
      this.readMark(channel),
    ]);
    const last = await this.lastOf(channel, { mark, upTo: info.state.last_seq });
    const expect = { lastSequence: info.state.last_seq, lastSubjectSequence: last.streamSeq };
    return { last, expect };
  }

  /**
   * A duplicate answer means the first copy was stored, but nats-server 2.9 may answer so while
   * that copy is still in flight (seq 0), or for a copy a leader change dropped: the post is
   * acknowledged only once the copy is there, else it is sent again. The copy may be an earlier
   * attempt's, under another seq: the post is that copy.
   */
  private async confirmDuplicate(streamSeq: number, msgID: string, channel: string): Promise<Copy> {
    const stored =
      streamSeq > 0
        ? await this.ask(
            () => this.quick.jsm.streams.getMessage(this.streamName, { seq: streamSeq }),
            `cannot read ${channel}`,
          ).catch(() => undefined)
        : undefined;
    const seq = Number(stored?.header?.get(SEQ_HEADER));
    const file = stored?.header?.get(FILE_HEADER);
    if (stored?.header?.get("Nats-Msg-Id") !== msgID || !Number.isSafeInteger(seq) || !file) {
      throw new AgentChatError(
        "BACKEND_UNAVAILABLE",
        `cannot post to ${channel}: JetStream did not answer with the stored copy yet`,
      );
    }
    return copyOf(stored);
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

  /**
   * The channel's last message and the largest seq of ours up to it, straight from the server
   * (stream seq 0 when it has none). The next post numbers on from that seq, never from the
   * last message's own header: anyone with the namespace's credentials can publish on the
   * channel's subject, and a message that is not ours, or not after the ones before it, is
   * skipped by readers (see `readStored`). The channel's mark (`mark.<channel>` in KV, see
   * `raiseMark`) spares looking at the messages before it; those after it are looked at one by
   * one, up to WALK_LIMIT, or else through the channel's feed, and the mark is raised to them.
   * A post on a cluster gives the mark it read beside a stream seq it expects to be the last
   * (`known`): the few messages up to that one are read at once, in one round trip.
   */
  async lastOf(channel: string, known?: { mark: KnownMark; upTo: number }): Promise<LastOf> {
    if (known && fitsSpan(known)) {
      this.marks.set(channel, known.mark);
      return this.reached(channel, known.mark, await this.readSpan(channel, known));
    }
    const [mark, last] = await Promise.all([this.readMark(channel), this.lastStreamSeq(channel)]);
    // A mark past the last message was written since that read, or planted: not trusted.
    const from = mark.streamSeq > (last ?? 0) ? { streamSeq: 0, seq: 0 } : mark;
    this.marks.set(channel, { revision: mark.revision, streamSeq: from.streamSeq, seq: from.seq });
    // No message at all (purged by hand): the numbering still goes on from the mark.
    if (last === undefined) return { streamSeq: 0, seq: mark.seq };
    return this.reached(channel, from, await this.walk(channel, from, last));
  }

  /** `top`, which `lastOf` reached from `from`: the mark moves up to it. */
  private reached(channel: string, from: LastOf, top: LastOf): LastOf {
    if (top.streamSeq > from.streamSeq) this.raiseMark(channel, top);
    return top;
  }

  /** `from` raised by the channel's messages after it, up to stream seq `last`. */
  private async walk(channel: string, from: LastOf, last: number): Promise<LastOf> {
    const span = { mark: from, upTo: last };
    if (fitsSpan(span)) return this.readSpan(channel, span);
    let top = from;
    for (let steps = 0; top.streamSeq < last; steps++) {
      if (steps === WALK_LIMIT) {
        // A long way (a flood, or a channel from before marks): the feed reads it in batches.
        const fed = (await this.feed(channel)).highWater();
        return { streamSeq: fed.streamSeq, seq: Math.max(fed.seq, from.seq) };
      }
      const next = await this.ask(
        () =>
          this.quick.jsm.streams.getMessage(this.streamName, {
            next_by_subj: this.subject(channel),
            seq: top.streamSeq + 1,
          } as unknown as MsgRequest),
        `cannot read ${channel}`,
      );
      if (!next) break;
      top = { streamSeq: next.seq, seq: raisedSeq(top.seq, ourSeq(next, channel)) };
    }
    return top;
  }

  /**
   * As `walk`, for a few stream seqs: every message between, of any subject, read at once (one
   * round trip, where posts racing on a channel would otherwise wait for one after another).
   * What it reaches is the last message of the channel it read: a lagging server that has not
   * the newest yet leaves the post's check to refuse it, as a walk does.
   */
  private async readSpan(channel: string, { mark: from, upTo }: SpanToRead): Promise<LastOf> {
    const seqs = Array.from({ length: upTo - from.streamSeq }, (_, i) => from.streamSeq + 1 + i);
    const stored = await Promise.all(
      seqs.map((seq) =>
        this.ask(
          () => this.quick.jsm.streams.getMessage(this.streamName, { seq }),
          `cannot read ${channel}`,
        ),
      ),
    );
    let top = from;
    for (const m of stored) {
      if (m?.subject !== this.subject(channel)) continue;
      top = { streamSeq: m.seq, seq: raisedSeq(top.seq, ourSeq(m, channel)) };
    }
    return top;
  }

  /** The channel's mark and its revision; all 0 when it has none (or one that is not a mark). */
  private async readMark(channel: string): Promise<KnownMark> {
    const entry = await this.ask(
      () => this.quick.kv.get(markKey(channel)),
      `cannot read ${channel}`,
    );
    const mark = (entry?.operation === "PUT" && parseMark(entry.string())) || {
      streamSeq: 0,
      seq: 0,
    };
    return { revision: entry?.revision ?? 0, ...mark };
  }

  /**
   * Moves the channel's mark up to `top`, in the background, one write at a time per channel:
   * the write under way takes the highest `top` asked for meanwhile next. The mark only spares
   * reading: any mark `lastOf` or a post writes is true, an older one leaves more to look at.
   * (On a cluster each write also makes the bucket's checked writes of other connections read
   * again, as a cursor save does: so it is written after a walk, or every MARK_EVERY posts.)
   */
  private raiseMark(channel: string, top: LastOf): void {
    const wanted = this.wantedMarks.get(channel);
    if (!wanted || wanted.streamSeq < top.streamSeq) this.wantedMarks.set(channel, top);
    if (this.markWrites.has(channel)) return;
    const writing = this.writeMarks(channel).finally(() => this.markWrites.delete(channel));
    this.markWrites.set(channel, writing);
  }

  /**
   * Writes the channel's wanted marks, each checked against the revision last seen here so
   * that it never replaces a newer one.
   */
  private async writeMarks(channel: string): Promise<void> {
    for (let top = this.takeWanted(channel); top; top = this.takeWanted(channel)) {
      const known = this.marks.get(channel);
      if (!known || top.streamSeq <= known.streamSeq) continue;
      try {
        const ack = await this.quick.js.publish(
          `$KV.${this.bucketName}.${markKey(channel)}`,
          formatMark(top),
          { expect: { lastSubjectSequence: known.revision } },
        );
        this.marks.set(channel, { revision: ack.seq, ...top });
        this.cas.acked(ack.seq);
      } catch {
        // Another writer came first (or the server is away): read the mark before writing it.
        this.marks.delete(channel);
      }
    }
  }

  private takeWanted(channel: string): LastOf | undefined {
    const top = this.wantedMarks.get(channel);
    this.wantedMarks.delete(channel);
    return top;
  }

  private lastStored(channel: string): Promise<StoredMsg | null> {
    return this.ask(
      () =>
        this.quick.jsm.streams.getMessage(this.streamName, { last_by_subj: this.subject(channel) }),
      `cannot read ${channel}`,
    );
  }

  async lastStreamSeq(channel: string): Promise<number | undefined> {
    return (await this.lastStored(channel))?.seq;
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
    const last = await this.lastStreamSeq(channel);
    // Room for a few consumer placements on a cluster with a node down (see FeedSource.feedJs).
    if (last) await feed.reach(last, 3 * this.timeoutMs);
    feed.throwIfFailed();
    return feed;
  }

  protected override openFeed(channel: string): Promise<Feed> {
    return this.feed(channel).then((feed) => ({
      channel,
      scan: async (after) => ({ ...feed.scan(after), warnings: this.newWarnings(feed) }),
      maxSeq: async () => feed.maxSeq(),
      last: async (count, before) => feed.last(count, before),
      onChange: (listener) => feed.onChange(listener),
      throwIfFailed: () => feed.throwIfFailed(),
    }));
  }

  /** Archive and prune (Store.retention). */
  readonly retention: Retention = {
    archive: (channel, options) => this.archive(channel, options),
    prune: (options) => this.prune(options),
  };

  /** Removes the cursors and presence records of agents not seen for a while (retention.ts). */
  prune(options: PruneOptions): Promise<PruneResult> {
    return pruneNats(
      {
        entries: (filter) =>
          this.ask(async () => {
            const out: AgedEntry[] = [];
            for (const key of await this.keysOf(filter)) {
              const entry = await this.quick.kv.get(key);
              if (entry?.operation !== "PUT") continue;
              const aged: AgedEntry = { key, written: entry.created, revision: entry.revision };
              if (key.startsWith(PRESENCE_PREFIX)) aged.text = entry.string();
              out.push(aged);
            }
            return out;
          }, "cannot list the cursors and presence records"),
        remove: (entry) =>
          this.guard(
            () => this.kv.delete(entry.key, { previousSeq: entry.revision }),
            `cannot remove ${entry.key}`,
          ).then(
            () => true,
            (err: unknown) => {
              if (isWrongLastSequence(err)) return false;
              throw err;
            },
          ),
        cursorOf: (key) => {
          const m = /^cursor\.([^.]+)\.(.+)$/.exec(key);
          return m ? { channel: untoken(m[1]!), agent: m[2]! } : undefined;
        },
        presencePrefix: PRESENCE_PREFIX,
        keep: (entries, now, olderThanMs) => this.agentsToKeep(entries, now, olderThanMs),
        now: this.now(),
      },
      options,
    );
  }

  /** Exports the old messages into a SPEC folder, then purges them (retention.ts). */
  async archive(channel: string, options: ArchiveOptions): Promise<ArchiveResult> {
    validateName("channel", channel);
    await this.roster(channel);
    const feed = await this.feed(channel);
    return archiveNats(
      {
        channel,
        held: () => feed.held(),
        firstSkipped: () => feed.firstSkipped,
        metaText: async () => (await this.dump(channel)).metaText,
        purge: async (cut) => {
          await this.guard(
            () =>
              this.jsm.streams.purge(this.streamName, { filter: this.subject(channel), seq: cut }),
            `cannot purge the archived messages of ${channel}`,
          );
          feed.dropBelow(cut);
        },
        now: this.now(),
      },
      options,
    );
  }

  protected async loadCursor(channel: string, agent: string): Promise<number> {
    const key = cursorKey(channel, agent);
    const known = await this.readCursor(key, `cannot read the cursor of ${agent}`);
    this.noteCursor(key, known);
    if (known.corrupt !== undefined)
      throw corruptCursor(channel, agent, `KV ${key}`, known.corrupt);
    return known.seq;
  }

  /**
   * Moves a cursor forward only, each write checked against the revision last seen. A plain put
   * can land late: a request sent to a node that froze (SIGSTOP, a partition) waits in its socket
   * and is passed on when the node thaws, after the wait that timed out on it ran again and later
   * reads were saved; it would move the cursor back and hand those messages out again. Checked,
   * the late write finds a newer revision and does nothing. The subject's own check is
   * enough here (not CasWriter's): the writes it must refuse are long applied, not in flight.
   *
   * A refused write reads the cursor again. Past `move.from`, it is left as it is: the caller's
   * `from` was read stale (around a healed partition a cut-off leader still answers from its
   * old copy) or another call moved it, and what the caller found after `from` may have been
   * handed out already. Written over, those messages would be handed out a second time.
   * A refusal may be a cut-off leader's too, while the real one stored the write: every try of
   * one save carries the save's own name in a header, and a cursor read back under it is this
   * save, landed. (A save that failed unanswered is made again as `move.retried`.)
   */
  protected async saveCursor(
    channel: string,
    agent: string,
    move: CursorMove,
  ): Promise<number | undefined> {
    const key = cursorKey(channel, agent);
    const what = `cannot save the cursor of ${agent}`;
    const save = `${this.savePrefix}.${++this.saves}`;
    for (let attempt = 0; attempt < CURSOR_TRIES; attempt++) {
      if (attempt > 1) await delay(attempt * 10);
      // The first try writes over the revision last seen here; a refused one reads it again.
      const known = (attempt === 0 && this.cursors.get(key)) || (await this.readCursor(key, what));
      const verdict = known.save === save ? "there" : saveVerdict(known.seq, move);
      if (verdict !== "write") return verdict === "there" ? undefined : known.seq;
      const written = await this.writeCursor(key, { seq: move.to, save }, known.revision, what);
      if (written !== undefined) {
        this.noteCursor(key, { revision: written, seq: move.to, save });
        this.cas.acked(written);
        return undefined;
      }
    }
    throw new AgentChatError("BACKEND_UNAVAILABLE", `${what}: ${CURSOR_KEPT_CHANGING}`);
  }

  /** A cursor's last entry, from the bucket's leader, with the name of the save that wrote it. */
  private async readCursor(key: string, what: string): Promise<KnownCursor> {
    const stored = await this.ask(
      () =>
        this.quick.jsm.streams.getMessage(`KV_${this.bucketName}`, {
          last_by_subj: `$KV.${this.bucketName}.${key}`,
        }),
      what,
    );
    if (!stored) return { revision: 0, seq: 0 };
    // A deletion (a prune) leaves a marker with no value: the cursor starts again.
    const put = !stored.header?.get(KV_OPERATION_HEADER);
    const save = stored.header?.get(CURSOR_SAVE_HEADER) || undefined;
    const seq = put ? cursorSeq(stored.string()) : 0;
    // Not a number: read as 0 by a save (which writes over it), refused by a read.
    if (seq === undefined) return { revision: stored.seq, seq: 0, save, corrupt: stored.string() };
    return { revision: stored.seq, seq, save };
  }

  /**
   * Writes a cursor as a KV put that expects `revision` to be its last entry (0: none), named by
   * its save in a header (KV reads and exports ignore it). Its new revision; undefined when
   * `revision` is no longer its last.
   */
  private writeCursor(
    key: string,
    { seq, save }: { seq: number; save: string },
    revision: number,
    what: string,
  ): Promise<number | undefined> {
    const headers = this.headerFactory();
    headers.set(CURSOR_SAVE_HEADER, save);
    return this.guard(
      async () =>
        (
          await this.js.publish(`$KV.${this.bucketName}.${key}`, String(seq), {
            expect: { lastSubjectSequence: revision },
            headers,
          })
        ).seq,
      what,
    ).catch((err: unknown) => {
      if (isWrongLastSequence(err)) return undefined;
      throw err;
    });
  }

  private noteCursor(key: string, known: KnownCursor): void {
    // A daemon serves any number of agents: the cache is only a shortcut, so it is simply reset.
    if (this.cursors.size >= MAX_CURSOR_REVISIONS) this.cursors.clear();
    const cached = this.cursors.get(key);
    if (!cached || cached.revision <= known.revision) this.cursors.set(key, known);
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
    // A cluster still electing a leader after its retry window (a healed partition can take
    // nats-server 2.9 ten seconds and more) is away for a moment too.
    return (
      isElecting(err) ||
      /did not answer/.test(err.message) ||
      // Read back stale (a leader that lags, after a heal), a save that landed looks refused:
      // the wait keeps what it found and saves again, once the reads are current.
      err.message.endsWith(CURSOR_KEPT_CHANGING) ||
      /timeout|disconnect/i.test(`${cause?.name ?? ""} ${cause?.message ?? ""}`)
    );
  }

  /** Delivery's notes as KV keys (notePrefix), each write checked against the revision read. */
  protected readonly notes: NoteStore = {
    listNotes: (scope, kind) => {
      const prefix = notePrefix(scope, kind);
      return this.ask(async () => {
        const out: Note[] = [];
        for (const key of await this.keysOf(`${prefix}*`)) {
          const entry = await this.quick.kv.get(key);
          if (entry?.operation !== "PUT") continue;
          out.push({
            name: key.slice(prefix.length),
            text: entry.string(),
            version: entry.revision,
          });
        }
        return out;
      }, `cannot list the ${kind} records`);
    },
    readNote: async (scope, kind, name) => {
      const entry = await this.ask(
        () => this.quick.kv.get(`${notePrefix(scope, kind)}${name}`),
        `cannot read the ${kind} record of ${name}`,
      );
      if (entry?.operation !== "PUT") {
        // A deleted key keeps a revision: the next write must be checked against it.
        return entry ? { name, version: -entry.revision } : undefined;
      }
      return { name, text: entry.string(), version: entry.revision };
    },
    // A create when there was none, else an update checked against the revision read.
    writeNote: (scope, kind, name, text, version) => {
      const key = `${notePrefix(scope, kind)}${name}`;
      return this.guard(
        () =>
          typeof version === "number" && version > 0
            ? this.kvUpdate(key, text, version)
            : this.kvCreate(key, text),
        `cannot write the ${kind} record of ${name}`,
      );
    },
  };

  /**
   * The bucket's keys that match `filter`, from one stream-info request: `kv.keys` would create
   * a consumer, and a thousand agents woken at once each check their leases this way.
   */
  private async keysOf(filter: string): Promise<string[]> {
    const prefix = `$KV.${this.bucketName}.`;
    const info = await this.quick.jsm.streams.info(`KV_${this.bucketName}`, {
      subjects_filter: `${prefix}${filter}`,
    });
    return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  }

  protected async taskRecords(channel: string): Promise<TaskRecord[]> {
    const prefix = `task.${token(channel)}.`;
    return this.ask(async () => {
      const out: TaskRecord[] = [];
      for (const key of await this.keysOf(`${prefix}*`)) {
        const entry = await this.quick.kv.get(key);
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
    const entry = await this.ask(
      () => this.quick.kv.get(taskKey(channel, id)),
      `cannot read task ${id}`,
    );
    if (entry?.operation !== "PUT") return undefined;
    const stored = storedTask(entry.string());
    return stored && taskRecord(id, stored, entry.revision);
  }

  protected async createTaskRecord(channel: string, id: string, text: string): Promise<boolean> {
    return this.guard(
      () => this.kvCreate(taskKey(channel, id), JSON.stringify({ text })),
      `cannot create task ${id}`,
    );
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
    return this.guard(
      () =>
        this.kvUpdate(taskKey(channel, current.id), JSON.stringify(next), Number(current.version)),
      `cannot ${verb} task ${current.id}`,
    );
  }

  /** A channel's path leases: one KV value, created once and then updated by revision. */
  protected async readPathLeases(channel: string): Promise<PathLeaseRecord> {
    const entry = await this.ask(
      () => this.quick.kv.get(pathLeasesKey(channel)),
      `cannot read the path leases of ${channel}`,
    );
    if (entry?.operation !== "PUT") return { doc: parsePathLeases(undefined), version: 0 };
    return { doc: parsePathLeases(entry.string()), version: entry.revision };
  }

  protected async swapPathLeases(
    channel: string,
    current: PathLeaseRecord,
    doc: PathLeaseDoc,
  ): Promise<boolean> {
    const key = pathLeasesKey(channel);
    const text = formatPathLeases(doc);
    const revision = Number(current.version);
    return this.guard(
      () => (revision === 0 ? this.kvCreate(key, text) : this.kvUpdate(key, text, revision)),
      `cannot write the path leases of ${channel}`,
    );
  }

  /** Everything of one channel in SPEC-folder form (export). */
  async dump(channel: string): Promise<ChannelDump> {
    const entry = await this.ask(
      () => this.quick.kv.get(metaKey(channel)),
      `cannot read ${channel}`,
    );
    if (entry?.operation !== "PUT") {
      throw new AgentChatError("CHANNEL_NOT_FOUND", `no channel ${channel} in ${this.location}`);
    }
    const feed = await this.feed(channel);
    const cursors: Record<string, number> = {};
    const prefix = `cursor.${token(channel)}.`;
    await this.ask(async () => {
      for await (const key of await this.kv.keys(`${prefix}*`)) {
        const e = await this.quick.kv.get(key);
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
    this.marks.set(dump.name, await this.readMark(dump.name));
    let last = (await this.lastStreamSeq(dump.name)) ?? 0;
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
    this.raiseMark(dump.name, { streamSeq: last, seq: previous });
    for (const [agent, seq] of Object.entries(dump.cursors)) {
      await this.saveCursor(dump.name, agent, { to: seq });
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

  /**
   * Keeps the namespace's stream and KV bucket on `replicas` servers (raising an R1 namespace
   * made before the cluster grew); resolves once the copies are current.
   */
  async setReplicas(replicas: number): Promise<void> {
    checkReplicas(replicas, clusterSize(this.nc), this.target.server);
    await this.guard(
      () =>
        setReplicas(
          this.jsm,
          [this.streamName, `KV_${this.bucketName}`],
          replicas,
          6 * this.timeoutMs,
        ),
      `cannot set the replicas of namespace ${this.namespace}`,
    );
  }

  async close(): Promise<void> {
    await this.settleRecords();
    await Promise.all(this.markWrites.values());
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

  /** How long a call keeps trying (see `retryWindowMs`): `times` its timeout, or an election. */
  private retryMs(times: 1 | 2): number {
    return retryWindowMs(this.options.timeoutMs, DEFAULT_NATS_TIMEOUT_MS, this.clustered, times);
  }

  private check(): void {
    if (this.gone) throw this.gone;
  }

  /**
   * Runs one server call, turning every failure into an AgentChatError with a clear message.
   * A cluster electing a leader answers "JetStream system temporarily unavailable" without
   * doing anything: the call is made again for up to the timeout.
   */
  guard<T>(fn: () => Promise<T>, what: string, patience: Patience = { resend: false }): Promise<T> {
    return patiently(() => this.guardOnce(fn, what), Date.now() + this.retryMs(1), patience);
  }

  /**
   * A server call that may be sent twice (a read): as `guard`, and when unanswered it is sent
   * again too, soon, for up to the timeout, after moving off a connected server that froze.
   */
  private ask<T>(fn: () => Promise<T>, what: string): Promise<T> {
    return this.guard(fn, what, { resend: true, onTimeout: () => this.leaveIfStuck() });
  }

  /**
   * After a request went unanswered on a cluster: when the connected server does not answer a
   * ping either (frozen, cut off), the connection moves to another server now. Its socket stays
   * open, so the client alone would notice only after its ping timer (20 s and more).
   */
  private leaveIfStuck(): Promise<void> {
    if (!this.clustered || this.nc.isClosed()) return Promise.resolve();
    this.leaving ??= (async () => {
      const answered = await Promise.race([
        this.nc.flush().then(
          () => true,
          () => false,
        ),
        delay(ATTEMPT_MS).then(() => false),
      ]);
      if (!answered && !this.nc.isClosed()) await this.nc.reconnect();
    })().finally(() => {
      this.leaving = undefined;
    });
    return this.leaving;
  }

  /** The namespace deleted or JetStream silent, said as such; undefined for any other error. */
  private async unavailable(err: unknown, what: string): Promise<AgentChatError | undefined> {
    const e = err as Error;
    if (e?.name === "StreamNotFoundError" || /stream not found/i.test(e?.message ?? "")) {
      return new AgentChatError(
        "BACKEND_UNAVAILABLE",
        `${what}: namespace ${this.namespace} was deleted on ${this.target.server}`,
        { cause: err },
      );
    }
    if (e?.name === "JetStreamNotEnabled" || /no responders/i.test(e?.message ?? "")) {
      return await this.unheard(err, what);
    }
    return undefined;
  }

  private async guardOnce<T>(fn: () => Promise<T>, what: string): Promise<T> {
    this.check();
    try {
      return await fn();
    } catch (err) {
      if (isWrongLastSequence(err)) throw err;
      if (this.gone) throw this.gone;
      throw (await this.unavailable(err, what)) ?? toBackendError(err, what);
    }
  }

  /** Why nobody listened to a request: the namespace deleted, or not routed to us yet. */
  private async unheard(err: unknown, what: string): Promise<AgentChatError> {
    const streamThere = await exists(() => this.jsm.streams.info(this.streamName)).catch(
      () => true,
    );
    // On a cluster the subjects of a stream just made (a new namespace's bucket) reach the
    // other nodes a moment later: nobody got this request, so it may be sent again.
    const why = !streamThere
      ? `namespace ${this.namespace} was deleted on ${this.target.server}`
      : `JetStream did not answer on ${this.target.server}${this.clustered ? ` ${NOT_ROUTED_YET}` : ""}`;
    return new AgentChatError("BACKEND_UNAVAILABLE", `${what}: ${why}`, { cause: err });
  }
}

/** Messages after a channel's mark that `lastOf` reads one by one before it reads them all. */
const WALK_LIMIT = 64;
/** Stream seqs after a channel's mark that `lastOf` reads all at once (see `readSpan`). */
const SPAN_AT_ONCE = 16;
/** A store's posts on its own basis after the channel's mark before it moves the mark. */
const MARK_EVERY = 32;
/** Races a post loses on a cluster before it takes its turn (see `inTurn`). */
const TURN_AFTER = 2;
/** One turn marker in so many (by stream seq) removes the markers before it. */
const PURGE_TURNS_EVERY = 32;
/**
 * What a cursor save does about the cursor it found at `seq`: nothing ("there": already moved
 * as asked), leave it ("moved": it is past the `from` the caller's scan began at), or write.
 */
function saveVerdict(seq: number, move: CursorMove): "there" | "moved" | "write" {
  if (seq >= move.to && (move.from === undefined || move.retried)) return "there";
  if (move.from !== undefined && seq > move.from) return "moved";
  return "write";
}

/** A cursor as last read or written: its revision, its value and the save that wrote it. */
interface KnownCursor {
  revision: number;
  seq: number;
  save?: string | undefined;
  /** The text of a cursor that holds no number. */
  corrupt?: string;
}

/** Names the save that wrote a cursor entry (see `saveCursor`). */
const CURSOR_SAVE_HEADER = "Agent-Chat-Cursor-Save";
/** The KV's own header on a deletion marker (DEL, PURGE); a value has none. */
const KV_OPERATION_HEADER = "KV-Operation";

/** Checked cursor writes lost to another writer of the same cursor before giving up. */
const CURSOR_TRIES = 8;
/** Why a cursor save gave up after CURSOR_TRIES (see `isTransient`). */
const CURSOR_KEPT_CHANGING = "it kept changing while saved";
/** Cursor revisions a store remembers (see `saveCursor`). */
const MAX_CURSOR_REVISIONS = 10_000;

/**
 * Makes sure the namespace's stream and bucket exist, creating both (replicated to fit the
 * cluster) when new, and returns the bucket. An existing namespace with fewer copies than the
 * cluster could give it is opened with a warning that says how to raise it.
 */
async function openNamespace({
  nc,
  js,
  jsm,
  target,
  options,
  deadline,
}: {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  target: NatsTarget;
  options: NatsStoreOptions;
  /** Every request is sent again while unanswered (an election), up to then. */
  deadline: number;
}): Promise<KV> {
  const { Kvm } = await import("@nats-io/kv");
  const asked = target.replicas ?? options.replicas;
  const replicas = replicasFor(nc, asked, target.server);
  const stream = `AGENTCHAT_${target.namespace}`;
  const bucket = bucketOf(target.namespace);
  const streamInfo = await patiently(() => firstInfoOf(jsm, stream, target), deadline);
  const bucketInfo = await patiently(() => infoOf(jsm, `KV_${bucket}`), deadline);
  const kvm = new Kvm(js);
  // Creating is idempotent, so several first connections to a new namespace may race (and a
  // create that went unanswered may be sent again).
  const kv = bucketInfo
    ? await kvm.open(bucket)
    : await createReplicated(nc, replicas, asked !== undefined, target.server, (r) =>
        // Reads from the stream leader, not a replica's direct get that may lag: a cursor
        // saved on a cluster is read back as saved.
        patiently(
          () =>
            kvm.create(bucket, {
              history: 1,
              description: "agent-chat channels",
              replicas: r,
              allow_direct: false,
            }),
          deadline,
        ),
      );
  // A store only exists after both were made: channels without a stream, or messages
  // without a bucket, mean one was deleted. Recreating it would silently restart at seq 1.
  const damaged =
    (!streamInfo && bucketInfo && (await hasAny(kv, "meta.*"))) ||
    (streamInfo !== undefined && !bucketInfo && streamInfo.state.messages > 0);
  if (damaged) {
    throw new AgentChatError(
      "BACKEND_UNAVAILABLE",
      `namespace ${target.namespace} on ${target.server} is damaged: its ${streamInfo ? "KV bucket" : "message stream"} was deleted (export what is left, delete the namespace, import it again)`,
    );
  }
  if (!streamInfo) {
    await createReplicated(nc, replicas, asked !== undefined, target.server, (r) =>
      patiently(
        () =>
          jsm.streams.add({
            name: stream,
            subjects: [`agentchat.${target.namespace}.msg.>`],
            description: `agent-chat namespace ${target.namespace}`,
            num_replicas: r,
          }),
        deadline,
      ),
    );
  }
  if (streamInfo && bucketInfo) {
    const warning = replicaWarning(target.namespace, [streamInfo, bucketInfo], nc);
    if (warning) options.onWarning?.(warning);
  }
  return kv;
}

/** As `infoOf`, for the first request of a connection: no JetStream there is said plainly. */
async function firstInfoOf(
  jsm: JetStreamManager,
  name: string,
  target: NatsTarget,
): Promise<StreamInfo | undefined> {
  try {
    return await infoOf(jsm, name);
  } catch (err) {
    const e = err as Error;
    if (e?.name !== "JetStreamNotEnabled" && !/no responders/i.test(e?.message ?? "")) throw err;
    throw new AgentChatError(
      "BACKEND_UNAVAILABLE",
      `JetStream is not enabled on ${target.server} (start nats-server with -js)`,
      { cause: err },
    );
  }
}

/** A stream's info, or undefined when there is no such stream. */
async function infoOf(jsm: JetStreamManager, name: string): Promise<StreamInfo | undefined> {
  return jsm.streams.info(name).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
}

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
function publishedKeyKey(name: string): string {
  return `keys.${identity(name)}`;
}

/** Where a channel's turn markers go: in the namespace's stream, beside the channel's subject. */
function turnSubject(subject: string): string {
  return `${subject}.turn`;
}

function token(channel: string): string {
  return channel.replaceAll(".", "=");
}

function untoken(tok: string): string {
  return tok.replaceAll("=", ".");
}

export function bucketOf(namespace: string): string {
  return `agentchat-${namespace}`;
}

function metaKey(channel: string): string {
  return `meta.${token(channel)}`;
}

/** Whether `span` is short enough to read at once (a mark past `upTo` is not trusted). */
function fitsSpan({ mark, upTo }: SpanToRead): boolean {
  return mark.streamSeq <= upTo && upTo - mark.streamSeq <= SPAN_AT_ONCE;
}

/**
 * The channel's seq after a message of ours numbered `seq`: a number more than MAX_SEQ_GAP past
 * it is skipped by readers (see ChannelFeed) and moves nothing, so one publish cannot use the
 * numbers up.
 */
function raisedSeq(top: number, seq: number): number {
  return seq > top && seq - top <= MAX_SEQ_GAP ? seq : top;
}

/** The seq of a stored message when it is one of ours, else 0 (see `readStored`). */
function ourSeq(stored: StoredMsg, channel: string): number {
  const read = readStored(
    { streamSeq: stored.seq, headers: stored.header, text: stored.string() },
    channel,
  );
  return "message" in read ? read.message.seq : 0;
}

/** Where a channel's high-water mark is kept (as `.seq` is in its folder). */
function markKey(channel: string): string {
  return `mark.${token(channel)}`;
}

function formatMark(mark: LastOf): string {
  return JSON.stringify({ seq: mark.seq, streamSeq: mark.streamSeq });
}

/** A mark as read from KV, which any client of the server may have written. */
function parseMark(text: string): LastOf | undefined {
  const value = parseUntrustedJson(text) as Partial<Record<keyof LastOf, unknown>> | undefined;
  const { seq, streamSeq } = value !== null && typeof value === "object" ? value : {};
  if (!isCount(seq) || !isCount(streamSeq) || seq > MAX_SEQ) return undefined;
  return { seq, streamSeq };
}

function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}

function cursorKey(channel: string, agent: string): string {
  return `cursor.${token(channel)}.${identity(agent)}`;
}

function pathLeasesKey(channel: string): string {
  return `leases.${token(channel)}`;
}

const PRESENCE_PREFIX = notePrefix("", "presence");

/** `presence.<agent>` for the namespace, `receipts.<channel>.<agent>` per channel. */
function notePrefix(scope: string, kind: NoteKind): string {
  return scope === "" ? `${kind}.` : `${kind}.${token(scope)}.`;
}

function taskKey(channel: string, id: string): string {
  return `task.${token(channel)}.${id}`;
}

/** A task value as read from KV, which any client of the server may have written. */
function storedTask(text: string): StoredTask | undefined {
  const value = parseUntrustedJson(text);
  if (value === undefined) return undefined;
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
