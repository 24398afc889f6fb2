import { connect, type Socket } from "node:net";
import { hostname } from "node:os";
import type { B00tEnvelope } from "../core/envelope.js";
import { AgentChatError, type ErrorCode } from "../core/errors.js";
import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import { LineSplitter } from "../core/ndjson.js";
import { pollReceipts } from "../features/delivery/index.js";
import {
  defineOperations,
  type MetaExchange,
  REQUEST_OPERATIONS,
  type RequestRow,
  type StoreOperation,
} from "../store/operations.js";
import type {
  Capabilities,
  Harness,
  PostResult,
  PresenceInfo,
  Receipts,
  Store,
  WaitForOptions,
  WaitOptions,
  WaitResult,
  WatchOptions,
} from "../store/types.js";
import {
  type DaemonInfo,
  DEFAULT_MAX_LINE_BYTES,
  type Op,
  type RequestId,
  type WireError,
} from "./protocol.js";
import type { Request, RequestParams } from "./requests.js";

/**
 * The longest line accepted from a daemon by default. Not the daemon's own line limit: that one
 * bounds requests, while one answer holds a whole `read` (every unread message, each up to the
 * body limit, JSON-escaped). Below V8's longest string (about 512 Mi characters), which a line
 * must become to be parsed.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/**
 * The longest line accepted before the daemon has answered `info` (its answer is a few hundred
 * bytes): a socket that is not an agent-chat daemon is dropped after this much, not after the
 * timeout and however much it sent by then.
 */
const HELLO_MAX_BYTES = DEFAULT_MAX_LINE_BYTES;

export interface ConnectOptions {
  /** Give up connecting after this long (default 1 s). */
  timeoutMs?: number;
  /** The longest line accepted from the daemon (default {@link DEFAULT_MAX_RESPONSE_BYTES}). */
  maxResponseBytes?: number;
  /**
   * The host tool this client runs in (default `cli`): with its host and pid, what the daemon
   * records as the presence of every agent this connection acts as.
   */
  harness?: Harness;
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: AgentChatError): void;
}

/** What the daemon answers to the requests written here by hand (the table types the others). */
interface Answers {
  info: DaemonInfo;
  envelope: PostResult;
  wait: WaitResult;
  presence: { agents: PresenceInfo[] };
  update_meta: MetaExchange;
}

/**
 * How often a change of a channel's meta is tried again when it changed under it: only a storm
 * of other changes, each landing between this one's look and its write, runs out of tries.
 */
const META_TRIES = 20;

/** A request answered over several lines (`subscribe`, `presence`), until its `end`. */
interface Stream {
  event(line: WireLine): void;
  end(error?: AgentChatError): void;
}

/**
 * A Store that talks to a running daemon over its socket: one connection, requests multiplexed
 * by id, subscriptions streamed. It keeps the Store contract with one difference, declared by
 * {@link DaemonClient.maxLineBytes}: a request longer than the daemon's line limit (a body near
 * the 1 MiB default) is refused here with `TOO_LARGE` instead of being sent.
 *
 * Each store operation answered by one line is a method put on the prototype from its row of
 * the operation table (src/store/operations.ts), typed by the `Store` contract through the
 * interface of the same name; the streams (`wait`, `watch`) and `waitFor` are written here.
 */
export interface DaemonClient extends Store {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above types the methods this class puts on its prototype.
export class DaemonClient implements Store {
  readonly capabilities: Capabilities = { multiHost: false, specFolder: true };
  private readonly pending = new Map<RequestId, Pending>();
  private readonly streams = new Map<RequestId, Stream>();
  /** The `onWarning` of each parked wait, told the warnings the daemon sends as it meets them. */
  private readonly waitWarnings = new Map<RequestId, (warning: string) => void>();
  private nextId = 1;
  private readonly lines = new LineSplitter({
    maxLineBytes: HELLO_MAX_BYTES,
    onLine: (line) => this.onLine(line.toString("utf8")),
    onTooLong: () => this.tooLong(),
  });
  private closedError: AgentChatError | undefined;
  private daemonInfo!: DaemonInfo;

  private constructor(
    private readonly socket: Socket,
    readonly socketPath: string,
  ) {
    socket.on("data", (chunk: Buffer) => this.lines.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => this.onClose());
  }

  /** Connects and fetches the daemon's `info`; BACKEND_UNAVAILABLE when nobody listens. */
  static async connect(path: string, options: ConnectOptions = {}): Promise<DaemonClient> {
    const timeoutMs = options.timeoutMs ?? 1000;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(path);
      const timer = setTimeout(() => {
        s.destroy();
        reject(unavailable(path, `no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once("connect", () => {
        clearTimeout(timer);
        resolve(s);
      });
      s.once("error", (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(unavailable(path, err.code === "ENOENT" ? "no socket" : (err.code ?? err.message)));
      });
    });
    const client = new DaemonClient(socket, path);
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    try {
      client.daemonInfo = await client.call("info", {});
    } finally {
      clearTimeout(timer);
    }
    client.lines.maxLineBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    if (client.daemonInfo.hello) {
      // Not awaited: the daemon runs a connection's requests in order, so it knows who we are
      // before our next request; a refusal only leaves the daemon's own actor on our records.
      client
        .call("hello", { harness: options.harness ?? "cli", host: localHost(), pid: process.pid })
        .catch(() => {});
    }
    return client;
  }

  /** The canonical root the daemon serves. */
  get location(): string {
    return this.daemonInfo.root;
  }

  /** The longest request line the daemon accepts. */
  /** The daemon's release, as it said at connection. */
  get daemonVersion(): string {
    return this.daemonInfo.version;
  }

  get maxLineBytes(): number {
    return this.daemonInfo.maxLineBytes;
  }

  /** Fresh figures from the daemon (connections, subscriptions, sockets …). */
  async info(): Promise<DaemonInfo> {
    this.daemonInfo = await this.call("info", {});
    return this.daemonInfo;
  }

  /** Posts a b00t envelope and waits for the daemon's answer (the raw b00t line gets none). */
  envelope(envelope: B00tEnvelope): Promise<PostResult> {
    // A copy: an interface has no index signature, the schema's record type needs one.
    return this.call("envelope", { envelope: { ...envelope } });
  }

  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    // `activity` stays here: the daemon judges it by this connection (open: active).
    // `onWarning` stays here too: the daemon sends each warning as a `warning` event of the wait.
    // `onAnswer` hears the answer once it came: the daemon answers once the cursors are saved.
    const { signal, activity: _activity, onWarning, onAnswer, ...rest } = options;
    if (signal?.aborted) throw new AgentChatError("ABORTED", "wait was interrupted");
    const id = this.nextId++;
    // The daemon parks the wait; aborting asks it to stop, and it answers ABORTED.
    const onAbort = () => this.send({ id: this.nextId++, op: "cancel", target: id });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (onWarning) this.waitWarnings.set(id, onWarning);
    try {
      const result: WaitResult = await this.call("wait", { channels: [...channels], ...rest }, id);
      onAnswer?.(result);
      return result;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.waitWarnings.delete(id);
    }
  }

  watch(channels: readonly string[], options: WatchOptions = {}): AsyncIterable<Message> {
    const { after } = options;
    const params =
      after === undefined ? { channels: [...channels] } : { channels: [...channels], after };
    return this.stream(
      async (id) => {
        await this.call("subscribe", params, id);
        return [];
      },
      options.signal,
      (line) => (line.event === "message" ? line.message || undefined : undefined),
    );
  }

  /**
   * A function does not cross the socket: the change is made here from the meta the daemon
   * has, and written there only if the channel's meta is still that one (else made again from
   * the meta it has now).
   */
  async updateMeta(
    channel: string,
    update: (meta: ChannelMeta) => ChannelMeta,
  ): Promise<ChannelMeta> {
    let expected = await this.roster(channel);
    for (let tries = 1; ; tries++) {
      const answer = await this.call("update_meta", {
        channel,
        expected,
        next: update(expected),
      });
      if (answer.changed) return answer.meta;
      if (tries === META_TRIES) {
        throw new AgentChatError(
          "LOCK_TIMEOUT",
          `the meta of ${channel} changed ${tries} times while this change was being made; ` +
            "try again",
        );
      }
      expected = answer.meta;
    }
  }

  /** Looks at the receipts every `intervalMs` (the daemon parks no receipt waits). */
  waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    return pollReceipts(this, channel, seq, options);
  }

  /**
   * Presence as the daemon pushes it: everyone's (or a channel's members'), first as it is, then
   * each time it changed, until the signal aborts.
   */
  watchPresence(
    channel?: string,
    options: { signal?: AbortSignal } = {},
  ): AsyncIterable<PresenceInfo[]> {
    return this.stream(
      async (id) => {
        const first = await this.call("presence", channel === undefined ? {} : { channel }, id);
        return [first.agents];
      },
      options.signal,
      (line) => (line.event === "presence" ? line.agents || undefined : undefined),
    );
  }

  async close(): Promise<void> {
    if (this.socket.destroyed) return;
    await new Promise<void>((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 200).unref();
    });
  }

  static {
    defineOperations(DaemonClient.prototype, REQUEST_OPERATIONS, function (row, args) {
      return this.callRow(row, args);
    });
  }

  /** A store operation as its row sends it, its answer as the row receives it. */
  private async callRow(row: RequestRow<StoreOperation>, args: unknown[]): Promise<unknown> {
    const result = await this.request(row.op, Reflect.apply(row.send, row, args));
    return row.receive ? Reflect.apply(row.receive, row, [result, ...args]) : result;
  }

  /** A request typed by the daemon's schema of its op, its answer by {@link Answers}. */
  private call<O extends Op>(
    op: O,
    params: RequestParams<O>,
    id: RequestId = this.nextId++,
  ): Promise<O extends keyof Answers ? Answers[O] : unknown> {
    // What the daemon answers each op (docs/daemon.md, "Requests").
    return this.request(op, params, id) as Promise<O extends keyof Answers ? Answers[O] : unknown>;
  }

  private request(op: string, params: object, id: RequestId = this.nextId++): Promise<unknown> {
    if (this.closedError) return Promise.reject(this.closedError);
    const line = JSON.stringify({ id, op, ...params });
    const bytes = Buffer.byteLength(line);
    if (this.daemonInfo && bytes > this.daemonInfo.maxLineBytes) {
      return Promise.reject(
        new AgentChatError(
          "TOO_LARGE",
          `the ${op} request is ${bytes} bytes; the daemon accepts lines of at most ` +
            `${this.daemonInfo.maxLineBytes} bytes (serve --max-line raises it)`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.write(`${line}\n`);
    });
  }

  /**
   * The items of a stream: `start` sends its request (with the stream's id) and resolves with
   * the first items; `take` picks an item out of each event line. Ends when the daemon ends it,
   * or the signal aborts (we then ask the daemon to cancel it); throws the error it ended with.
   */
  private async *stream<T>(
    start: (id: RequestId) => Promise<readonly T[]>,
    signal: AbortSignal | undefined,
    take: (line: WireLine) => T | undefined,
  ): AsyncIterable<T> {
    if (signal?.aborted) return;
    const id = this.nextId++;
    const queue: T[] = [];
    let ended = false;
    let failure: AgentChatError | undefined;
    let wake: (() => void) | undefined;
    this.streams.set(id, {
      event(line) {
        const item = take(line);
        if (item === undefined) return;
        queue.push(item);
        wake?.();
      },
      end(error) {
        ended = true;
        failure = error;
        wake?.();
      },
    });
    const cancel = () => {
      if (!ended) this.send({ id: this.nextId++, op: "cancel", target: id });
      wake?.();
    };
    signal?.addEventListener("abort", cancel, { once: true });
    try {
      queue.unshift(...(await start(id)));
      for (;;) {
        while (queue.length > 0) {
          if (signal?.aborted) return;
          yield queue.shift()!;
        }
        if (failure) throw failure;
        if (ended || signal?.aborted) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      signal?.removeEventListener("abort", cancel);
      if (!ended) cancel();
      this.streams.delete(id);
    }
  }

  /** Sends a request whose answer nobody waits for (a cancel). */
  private send(request: Request): void {
    if (!this.socket.destroyed) this.socket.write(`${JSON.stringify(request)}\n`);
  }

  /** A line past our limit: what the daemon sends cannot be trusted any more, so we hang up. */
  private tooLong(): void {
    const limit = this.lines.maxLineBytes;
    this.lines.close();
    this.fail(
      new AgentChatError(
        "TOO_LARGE",
        this.daemonInfo
          ? `the daemon at ${this.socketPath} sent a line longer than ${limit} bytes (the ` +
              "client's maxResponseBytes); closed the connection"
          : `the socket at ${this.socketPath} sent a line longer than ${limit} bytes before ` +
              "answering info (is it an agent-chat daemon?); closed the connection",
      ),
    );
    this.socket.destroy();
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let value: WireLine;
    try {
      value = JSON.parse(line);
    } catch {
      return; // Not ours to answer; the daemon only ever writes JSON.
    }
    if (value.id === undefined || value.id === null) return;
    if (value.event !== undefined) {
      this.onEvent(value.id, value);
      return;
    }
    const pending = this.pending.get(value.id);
    if (!pending) return;
    this.pending.delete(value.id);
    if (value.ok) pending.resolve(value.result);
    else pending.reject(fromWire(value.error ?? { code: "INTERNAL", message: "no error given" }));
  }

  /** A line of a stream (`subscribe`, `presence`) or a parked wait's `warning`. */
  private onEvent(id: RequestId, value: WireLine): void {
    if (value.event === "warning") {
      if (typeof value.warning === "string") this.waitWarnings.get(id)?.(value.warning);
      return;
    }
    const stream = this.streams.get(id);
    if (value.event === "end") stream?.end(value.error && fromWire(value.error));
    else stream?.event(value);
  }

  private onClose(): void {
    this.lines.close();
    this.fail(
      new AgentChatError(
        "BACKEND_UNAVAILABLE",
        `the daemon at ${this.socketPath} closed the connection`,
      ),
    );
  }

  /** Fails every request in flight and every later one with `error` (the first one given). */
  private fail(error: AgentChatError): void {
    this.closedError ??= error;
    for (const p of this.pending.values()) p.reject(this.closedError);
    this.pending.clear();
    for (const s of this.streams.values()) s.end(this.closedError);
  }
}

/** Any line the daemon sends: an answer, or an event of a stream or a wait. */
interface WireLine {
  id?: RequestId | null;
  ok?: boolean;
  result?: unknown;
  error?: WireError;
  event?: string;
  message?: Message;
  agents?: PresenceInfo[];
  warning?: string;
}

function fromWire(error: WireError): AgentChatError {
  const reference = typeof error.reference === "string" ? error.reference : undefined;
  return new AgentChatError(error.code as ErrorCode, error.message, { reference });
}

function unavailable(path: string, why: string): AgentChatError {
  return new AgentChatError(
    "BACKEND_UNAVAILABLE",
    `no agent-chat daemon is listening on ${path} (${why}); start one with: agent-chat serve`,
  );
}

function localHost(): string {
  try {
    return hostname();
  } catch {
    return "localhost";
  }
}
