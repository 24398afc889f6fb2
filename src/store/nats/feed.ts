import type {
  Consumer,
  ConsumerMessages,
  DeliverPolicy,
  JetStreamClient,
} from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import { AgentChatError } from "../../core/errors.js";
import { MAX_SEQ_GAP, type Message, parseMessage } from "../../core/message.js";

/** Our seq of a message, kept beside the payload so that it can be checked against the text. */
export const SEQ_HEADER = "Agent-Chat-Seq";
/** The SPEC file name of a message, so that export writes exactly what the folder store would. */
export const FILE_HEADER = "Agent-Chat-File";

/** A message as the stream holds it: where, its headers and its text. */
export interface StreamMessage {
  streamSeq: number;
  headers: MsgHdrs | undefined;
  text: string;
}

/**
 * A message of the stream as one of ours, or why it is none: its text must parse as a message
 * named by its file header, and its seq header must say the seq of that name. Anyone with the
 * namespace's credentials can publish on a channel's subject: such a message is reported and
 * skipped (as a stray file in a channel folder), never trusted and never fatal.
 */
export function readStored(
  { streamSeq, headers, text }: StreamMessage,
  channel: string,
): { message: Message } | { problem: string } {
  const file = headers?.get(FILE_HEADER) ?? "";
  const name = file || `stream message ${streamSeq}`;
  const seqHeader = headers?.get(SEQ_HEADER) ?? "";
  if (seqHeader === "") {
    return { problem: `${name}: no ${SEQ_HEADER} header (not written by agent-chat)` };
  }
  const parsed = parseMessage(text, file, channel);
  if (!parsed.ok) return { problem: `${name}: ${parsed.reason}` };
  if (Number(seqHeader) !== parsed.message.seq) {
    const seq = parsed.message.seq;
    return { problem: `${name}: its ${SEQ_HEADER} header is not ${seq}, the seq of its file name` };
  }
  return { message: parsed.message };
}

/** What a feed needs from its store. */
export interface FeedSource {
  /**
   * The client feeds create their consumers with: its requests time out sooner than the
   * store's, because on nats-server before 2.9.12 the server may place the consumer on a
   * cluster node that is down, and only a new request (placed anew) gets one that works.
   */
  readonly feedJs: JetStreamClient;
  readonly streamName: string;
  subject(channel: string): string;
  /** The stream seq of the channel's last message on the server (undefined: none). */
  lastStreamSeq(channel: string): Promise<number | undefined>;
}

interface Entry {
  seq: number;
  /** Where it is in the stream (archive purges below a stream seq). */
  streamSeq: number;
  message: Message;
  text: string;
}

/** How long an idle pull waits before the client renews it; also paces the server's heartbeats. */
const PULL_EXPIRES_MS = 5_000;
const MAX_PAUSE_MS = 2_000;
const RETRY_NOW_MS = 25;
/**
 * A consumer that delivers nothing for this long while the server holds more is replaced. After
 * a cluster node is frozen and thawed (a partition healed), nats-server 2.9 can leave an ordered
 * consumer that answers its heartbeats yet delivers nothing, for a minute or more; the client
 * library keeps pulling from it (test/torture/nats-cluster.test.ts, the SIGSTOP row).
 */
const STALL_MS = 2_000;
/**
 * While waits listen, how often the feed asks the server whether it has fallen behind: one small
 * request per listened channel (a daemon with a thousand channels makes some 30 a second).
 */
const PROBE_MS = 30_000;

/**
 * One channel's messages as the server pushes them through an ordered consumer, kept in seq
 * order. After a disconnect or a server restart the consumer is recreated from the stream seq
 * after the last one delivered, so nothing is missed and nothing is delivered twice.
 */
export class ChannelFeed {
  private readonly entries: Entry[] = [];
  /** Messages that cannot be delivered (not written by agent-chat, seq header disagrees). */
  readonly warnings: string[] = [];
  /** The stream seq of the first message skipped: archive never purges it unexported. */
  firstSkipped: number | undefined;
  private delivered = 0;
  private failure: AgentChatError | undefined;
  private readonly listeners = new Set<() => void>();
  private readonly reachers = new Set<{ target: number; done: () => void }>();
  private stopped = false;
  private consumer: Consumer | undefined;
  private messages: ConsumerMessages | undefined;
  /** Runs while something waits on the feed: see {@link STALL_MS}. */
  private watchdog: NodeJS.Timeout | undefined;
  private deliveredAtLastLook = 0;
  /** When the current consumer began to deliver: a newer one is given its chance first. */
  private consumerSince = 0;
  private lastProbe = 0;
  private looking = false;

  constructor(
    private readonly source: FeedSource,
    readonly channel: string,
  ) {}

  start(): void {
    void this.run();
  }

  private async run(): Promise<void> {
    let pause = 100;
    while (!this.stopped && !this.failure) {
      try {
        await this.consumeOnce(() => {
          pause = 100;
        });
      } catch (err) {
        if (this.stopped || this.failed(err)) break;
        // A consumer placed on a node that is down: ask again at once.
        if ((err as Error)?.name === "TimeoutError") pause = RETRY_NOW_MS;
      }
      if (this.stopped) break;
      // The consumer ended (connection lost, server restarted): resume after a short pause.
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(Math.max(pause * 2, 100), MAX_PAUSE_MS);
    }
  }

  /** Follows the channel from the first undelivered message until this consumer ends. */
  private async consumeOnce(onMessage: () => void): Promise<void> {
    const consumer = await this.source.feedJs.consumers.get(this.source.streamName, {
      filter_subjects: this.source.subject(this.channel),
      deliver_policy: "by_start_sequence" as DeliverPolicy,
      opt_start_seq: this.delivered + 1,
    });
    this.consumer = consumer;
    const messages = await consumer.consume({ max_messages: 512, expires: PULL_EXPIRES_MS });
    this.messages = messages;
    this.consumerSince = Date.now();
    if (this.stopped) {
      messages.stop();
      return;
    }
    for await (const m of messages) {
      this.accept(m.seq, m.headers, m.string());
      onMessage();
    }
  }

  /** True when the error ends the feed for good: the stream was deleted. */
  private failed(err: unknown): boolean {
    const e = err as Error;
    if (e?.name !== "StreamNotFoundError" && !/stream not found/i.test(e?.message ?? "")) {
      return false;
    }
    this.fail(
      new AgentChatError(
        "BACKEND_UNAVAILABLE",
        `the stream ${this.source.streamName} was deleted on the server`,
        { cause: err },
      ),
    );
    return true;
  }

  private accept(streamSeq: number, headers: MsgHdrs | undefined, text: string): void {
    if (streamSeq <= this.delivered) return;
    this.delivered = streamSeq;
    const read = readStored({ streamSeq, headers, text }, this.channel);
    const last = this.maxSeq();
    if ("problem" in read) this.warnings.push(`${read.problem}, skipped`);
    else if (read.message.seq <= last) {
      this.warnings.push(
        `${read.message.file}: seq ${read.message.seq} is not after ${last}, skipped`,
      );
    } else if (read.message.seq > last + MAX_SEQ_GAP) {
      // As a folder does with a planted 999999999999-x.md: one publish must not use numbers up.
      this.warnings.push(
        `${read.message.file}: seq ${read.message.seq} is more than ${MAX_SEQ_GAP} past ${last}, skipped`,
      );
    } else {
      this.entries.push({ seq: read.message.seq, streamSeq, message: read.message, text });
    }
    if (this.entries.at(-1)?.streamSeq !== streamSeq) this.firstSkipped ??= streamSeq;
    for (const r of this.reachers) if (streamSeq >= r.target) r.done();
    for (const fn of this.listeners) fn();
  }

  /** Resolves once the stream seq `target` has been delivered (bounded by `timeoutMs`). */
  reach(target: number, timeoutMs: number): Promise<void> {
    if (this.delivered >= target || this.failure) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const reacher = {
        target,
        done: () => {
          clearTimeout(timer);
          this.reachers.delete(reacher);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.reachers.delete(reacher);
        reject(
          new AgentChatError(
            "BACKEND_UNAVAILABLE",
            `the NATS server did not deliver channel ${this.channel} within ${timeoutMs / 1000} s`,
          ),
        );
      }, timeoutMs);
      this.reachers.add(reacher);
      this.watch();
    });
  }

  /**
   * Looks every {@link STALL_MS} while a reach is pending or a wait listens: a consumer that
   * delivered nothing since the last look while the server holds more is replaced.
   */
  private watch(): void {
    if (this.watchdog || this.stopped) return;
    this.deliveredAtLastLook = this.delivered;
    this.watchdog = setInterval(() => void this.look(), STALL_MS);
    this.watchdog.unref();
  }

  private async look(): Promise<void> {
    if (this.stopped || (this.reachers.size === 0 && this.listeners.size === 0)) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
      return;
    }
    const moved = this.delivered !== this.deliveredAtLastLook;
    this.deliveredAtLastLook = this.delivered;
    const young = !this.messages || Date.now() - this.consumerSince < STALL_MS;
    if (moved || young || this.looking) return;
    this.looking = true;
    try {
      if ((await this.behind()) && !this.stopped) this.replaceConsumer();
    } finally {
      this.looking = false;
    }
  }

  /** Whether the server holds messages this feed has not delivered (asked now and then). */
  private async behind(): Promise<boolean> {
    if ([...this.reachers].some((r) => r.target > this.delivered)) return true;
    if (Date.now() - this.lastProbe < PROBE_MS) return false;
    this.lastProbe = Date.now();
    const last = await this.source.lastStreamSeq(this.channel).catch(() => undefined);
    return last !== undefined && last > this.delivered;
  }

  /** Ends the current consumer: `run` creates the next one from the stream seq after the last. */
  private replaceConsumer(): void {
    const messages = this.messages;
    this.messages = undefined;
    messages?.stop();
    this.consumer?.delete().catch(() => {});
  }

  fail(err: AgentChatError): void {
    this.failure ??= err;
    for (const r of this.reachers) r.done();
    for (const fn of this.listeners) fn();
    this.stop();
  }

  throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    this.watch();
    return () => this.listeners.delete(fn);
  }

  /** Messages with seq greater than `after`, and the largest seq this scan saw. */
  scan(after: number): { messages: Message[]; scannedTo: number } {
    const messages = this.entries.slice(this.firstAbove(after)).map((e) => e.message);
    return { messages, scannedTo: messages.at(-1)?.seq ?? after };
  }

  /** The last `count` messages numbered below `before`. */
  last(count: number, before = Number.POSITIVE_INFINITY): Message[] {
    const end = this.firstAbove(before - 1);
    return this.entries.slice(Math.max(0, end - count), end).map((e) => e.message);
  }

  /** The index of the first entry whose seq is greater than `seq` (entries are in seq order). */
  private firstAbove(seq: number): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  maxSeq(): number {
    return this.entries.at(-1)?.seq ?? 0;
  }

  /** The stream seq of the last message delivered, and the largest seq of ours up to it. */
  highWater(): { streamSeq: number; seq: number } {
    return { streamSeq: this.delivered, seq: this.maxSeq() };
  }

  /** The messages held, with their stream seqs (archive's export). */
  held(): readonly Readonly<Entry>[] {
    return this.entries;
  }

  /** Forgets the messages below stream seq `cut`, purged from the stream by archive. */
  dropBelow(cut: number): void {
    const keep = this.entries.findIndex((e) => e.streamSeq >= cut);
    this.entries.splice(0, keep < 0 ? this.entries.length : keep);
  }

  texts(): Array<{ seq: number; file: string; text: string }> {
    return this.entries.map((e) => ({ seq: e.seq, file: e.message.file, text: e.text }));
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.watchdog);
    this.messages?.stop();
    this.consumer?.delete().catch(() => {});
  }
}
