import { connect, type Socket } from "node:net";
import { hostname } from "node:os";
import type { B00tEnvelope } from "../core/envelope.js";
import { AgentChatError, type ErrorCode } from "../core/errors.js";
import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import { LineSplitter } from "../core/ndjson.js";
import { pollReceipts } from "../features/delivery/index.js";
import type {
  Capabilities,
  ChannelInfo,
  ClaimOptions,
  DoneOptions,
  FenceResult,
  Harness,
  InitOptions,
  NewStructuredTask,
  NewTask,
  PathLeaseInfo,
  PathLeaseOptions,
  PeekOptions,
  PostInput,
  PostResult,
  PresenceInfo,
  ReadOptions,
  ReadResult,
  Receipts,
  ReleaseOptions,
  RenewOptions,
  SearchOptions,
  SearchResult,
  Store,
  StructuredTaskChange,
  TaskInfo,
  ThreadNode,
  ThreadOptions,
  WaitForOptions,
  WaitOptions,
  WaitResult,
  WatchOptions,
} from "../store/types.js";
import {
  type DaemonInfo,
  DEFAULT_MAX_LINE_BYTES,
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

type Op = Request["op"];

interface Pending {
  resolve(value: unknown): void;
  reject(err: AgentChatError): void;
}

interface Stream {
  message(message: Message): void;
  presence?(agents: PresenceInfo[]): void;
  end(error?: AgentChatError): void;
}

/**
 * A Store that talks to a running daemon over its socket: one connection, requests multiplexed
 * by id, subscriptions streamed. It keeps the Store contract with one difference, declared by
 * {@link DaemonClient.maxLineBytes}: a request longer than the daemon's line limit (a body near
 * the 1 MiB default) is refused here with `TOO_LARGE` instead of being sent.
 */
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
      client.daemonInfo = (await client.call("info", {})) as DaemonInfo;
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
  get maxLineBytes(): number {
    return this.daemonInfo.maxLineBytes;
  }

  /** Fresh figures from the daemon (connections, subscriptions, sockets …). */
  async info(): Promise<DaemonInfo> {
    this.daemonInfo = (await this.call("info", {})) as DaemonInfo;
    return this.daemonInfo;
  }

  /** Posts a b00t envelope and waits for the daemon's answer (the raw b00t line gets none). */
  envelope(envelope: B00tEnvelope): Promise<PostResult> {
    // A copy: an interface has no index signature, the schema's record type needs one.
    return this.call("envelope", { envelope: { ...envelope } }) as Promise<PostResult>;
  }

  init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const { members, ...rest } = options;
    return this.call(
      "init",
      members === undefined ? { channel, ...rest } : { channel, members: [...members], ...rest },
    ) as Promise<ChannelMeta>;
  }

  channels(): Promise<ChannelInfo[]> {
    return this.call("channels", {}) as Promise<ChannelInfo[]>;
  }

  roster(channel: string): Promise<ChannelMeta> {
    return this.call("roster", { channel }) as Promise<ChannelMeta>;
  }

  post(channel: string, input: PostInput): Promise<PostResult> {
    if (input.signer !== undefined) {
      // A function does not cross the socket, and a post must not lose its signature silently.
      return Promise.reject(
        new AgentChatError(
          "INVALID_ARGUMENT",
          "a signed post cannot go through the daemon; post to the folder store itself",
        ),
      );
    }
    const { to, ...rest } = input;
    return this.call(
      "post",
      to === undefined
        ? { channel, ...rest }
        : { channel, to: typeof to === "string" ? to : [...to], ...rest },
    ) as Promise<PostResult>;
  }

  read(channel: string, options: ReadOptions): Promise<ReadResult> {
    return this.call("read", { channel, ...options }) as Promise<ReadResult>;
  }

  peek(channel: string, count?: number, options: PeekOptions = {}): Promise<Message[]> {
    return this.call("peek", {
      channel,
      ...(count === undefined ? {} : { count }),
      ...(options.archived ? { archived: true } : {}),
    }) as Promise<Message[]>;
  }

  cursor(channel: string, agent: string): Promise<number> {
    return this.call("cursor", { channel, as: agent }) as Promise<number>;
  }

  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    // `activity` stays here: the daemon judges it by this connection (open: active).
    // `onWarning` stays here too: the daemon sends each warning as a `warning` event of the wait.
    const { signal, activity: _activity, onWarning, ...rest } = options;
    if (signal?.aborted) throw new AgentChatError("ABORTED", "wait was interrupted");
    const id = this.nextId++;
    // The daemon parks the wait; aborting asks it to stop, and it answers ABORTED.
    const onAbort = () => this.send({ id: this.nextId++, op: "cancel", target: id });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (onWarning) this.waitWarnings.set(id, onWarning);
    try {
      return (await this.call("wait", { channels: [...channels], ...rest }, id)) as WaitResult;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.waitWarnings.delete(id);
    }
  }

  async *watch(channels: readonly string[], options: WatchOptions = {}): AsyncIterable<Message> {
    const { signal } = options;
    if (signal?.aborted) return;
    const id = this.nextId++;
    const queue: Message[] = [];
    let ended = false;
    let failure: AgentChatError | undefined;
    let wake: (() => void) | undefined;
    this.streams.set(id, {
      message(message) {
        queue.push(message);
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
      const { after } = options;
      await this.call(
        "subscribe",
        after === undefined ? { channels: [...channels] } : { channels: [...channels], after },
        id,
      );
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

  receipts(channel: string, seq: number): Promise<Receipts> {
    return this.call("receipts", { channel, seq }) as Promise<Receipts>;
  }

  explain(channel: string, seq: number): Promise<Receipts> {
    return this.call("explain", { channel, seq }) as Promise<Receipts>;
  }

  /** Looks at the receipts every `intervalMs` (the daemon parks no receipt waits). */
  waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    return pollReceipts(this, channel, seq, options);
  }

  async notify(channel: string, agent: string, seq: number): Promise<void> {
    await this.call("notify", { channel, as: agent, seq });
  }

  who(channel?: string): Promise<PresenceInfo[]> {
    return this.call("who", channel === undefined ? {} : { channel }) as Promise<PresenceInfo[]>;
  }

  /**
   * Presence as the daemon pushes it: everyone's (or a channel's members'), first as it is, then
   * each time it changed, until the signal aborts.
   */
  async *watchPresence(
    channel?: string,
    options: { signal?: AbortSignal } = {},
  ): AsyncIterable<PresenceInfo[]> {
    const { signal } = options;
    if (signal?.aborted) return;
    const id = this.nextId++;
    const queue: PresenceInfo[][] = [];
    let ended = false;
    let failure: AgentChatError | undefined;
    let wake: (() => void) | undefined;
    this.streams.set(id, {
      message() {},
      presence(agents) {
        queue.push(agents);
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
      const first = (await this.call("presence", channel === undefined ? {} : { channel }, id)) as {
        agents: PresenceInfo[];
      };
      yield first.agents;
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

  addTask(channel: string, task: NewTask): Promise<TaskInfo> {
    const { id, ...rest } = task;
    return this.call(
      "add_task",
      id === undefined ? { channel, ...rest } : { channel, taskId: id, ...rest },
    ) as Promise<TaskInfo>;
  }

  tasks(channel: string): Promise<TaskInfo[]> {
    return this.call("tasks", { channel }) as Promise<TaskInfo[]>;
  }

  claim(
    channel: string,
    task: string,
    agent: string,
    options: ClaimOptions = {},
  ): Promise<TaskInfo> {
    return this.call("claim", { channel, task, as: agent, ...options }) as Promise<TaskInfo>;
  }

  renew(
    channel: string,
    task: string,
    agent: string,
    options: RenewOptions = {},
  ): Promise<TaskInfo> {
    return this.call("renew", { channel, task, as: agent, ...options }) as Promise<TaskInfo>;
  }

  done(channel: string, task: string, agent: string, options: DoneOptions = {}): Promise<TaskInfo> {
    return this.call("done", { channel, task, as: agent, ...options }) as Promise<TaskInfo>;
  }

  release(
    channel: string,
    task: string,
    agent: string,
    options: ReleaseOptions = {},
  ): Promise<TaskInfo> {
    return this.call("release", { channel, task, as: agent, ...options }) as Promise<TaskInfo>;
  }

  fence(channel: string, task: string, token: number): Promise<FenceResult> {
    return this.call("fence", { channel, task, token }) as Promise<FenceResult>;
  }

  createStructuredTask(channel: string, task: NewStructuredTask): Promise<TaskInfo> {
    return this.call("task_create", { channel, task }) as Promise<TaskInfo>;
  }

  changeStructuredTask(
    channel: string,
    task: string,
    change: StructuredTaskChange,
  ): Promise<TaskInfo> {
    return this.call("task_change", { channel, task, change }) as Promise<TaskInfo>;
  }

  addPathLease(
    channel: string,
    pattern: string,
    agent: string,
    options: PathLeaseOptions = {},
  ): Promise<PathLeaseInfo> {
    return this.call("lease_add", {
      channel,
      pattern,
      as: agent,
      ...options,
    }) as Promise<PathLeaseInfo>;
  }

  pathLeases(channel: string): Promise<PathLeaseInfo[]> {
    return this.call("leases", { channel }) as Promise<PathLeaseInfo[]>;
  }

  renewPathLease(
    channel: string,
    lease: string,
    agent: string,
    options: RenewOptions = {},
  ): Promise<PathLeaseInfo> {
    return this.call("lease_renew", {
      channel,
      lease,
      as: agent,
      ...options,
    }) as Promise<PathLeaseInfo>;
  }

  releasePathLease(
    channel: string,
    lease: string,
    agent: string,
    options: ReleaseOptions = {},
  ): Promise<PathLeaseInfo> {
    return this.call("lease_release", {
      channel,
      lease,
      as: agent,
      ...options,
    }) as Promise<PathLeaseInfo>;
  }

  search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    const { channels, ...rest } = options;
    return this.call("search", {
      query,
      ...rest,
      ...(channels ? { channels: [...channels] } : {}),
    }) as Promise<SearchResult>;
  }

  thread(channel: string, seq: number, options: ThreadOptions = {}): Promise<ThreadNode> {
    return this.call("thread", { channel, seq, ...options }) as Promise<ThreadNode>;
  }

  async close(): Promise<void> {
    if (this.socket.destroyed) return;
    await new Promise<void>((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 200).unref();
    });
  }

  private call<O extends Op>(
    op: O,
    params: RequestParams<O>,
    id: RequestId = this.nextId++,
  ): Promise<unknown> {
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
    if (!stream) return;
    if (value.event === "message" && value.message) stream.message(value.message);
    else if (value.event === "presence" && value.agents) stream.presence?.(value.agents);
    else if (value.event === "end") stream.end(value.error && fromWire(value.error));
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
  return new AgentChatError(error.code as ErrorCode, error.message);
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
