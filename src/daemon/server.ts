import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import {
  type B00tEnvelope,
  type EnvelopePost,
  envelopeToPost,
  validateEnvelope,
} from "../core/envelope.js";
import { AgentChatError, isAgentChatError } from "../core/errors.js";
import { LineSplitter } from "../core/ndjson.js";
import { type Actor, actingFor } from "../features/delivery/index.js";
import { OPTIONAL_OPERATIONS, REQUEST_OPERATIONS } from "../store/operations.js";
import type { PostResult, Store } from "../store/types.js";
import { type Bound, bindSocket, ensurePrivateDir, unlinkOwnSocket } from "./listen.js";
import {
  type DaemonInfo,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_LINE_BYTES,
  type EnvelopeCounts,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  type RequestId,
  type WireError,
} from "./protocol.js";
import { parseRequest, type Request } from "./requests.js";

export interface DaemonOptions {
  store: Store;
  /** The canonical root the store serves (shown by `info`). */
  root: string;
  version: string;
  /** The longest accepted line in bytes, newline excluded (default 1 MiB). */
  maxLineBytes?: number;
  /**
   * The most bytes of unfinished lines held across all connections (default 64 MiB); past it,
   * the connection holding the largest one is refused with TOO_LARGE and closed.
   */
  maxBufferedBytes?: number;
  /** Envelopes naming a channel that does not exist create it, open to everyone (default true). */
  autoCreate?: boolean;
  /** Hears each envelope posted and each line refused without an answer anyone reads. */
  log?: (event: DaemonLogEvent) => void;
}

/** What `serve` logs (seed 002: drained messages are logged, so operators can stitch context). */
export type DaemonLogEvent =
  | {
      event: "envelope";
      at: string;
      seq: number;
      channel: string;
      /** The agent name the message is from (the sender's slug when it was not a valid name). */
      from: string;
      /** The envelope's own `sender` and `channel`, as sent. */
      sender: string;
      sentChannel: string;
      /** The body's size in UTF-8 bytes (the body itself stays in the channel). */
      bytes: number;
    }
  | {
      event: "refused";
      at: string;
      code: string;
      message: string;
      /** The envelope's `channel` and `sender`, when the line had them. */
      channel?: string;
      sender?: string;
    };

/** Queued requests per connection past which we stop reading from it until it catches up. */
const PAUSE_AT = 256;
const RESUME_AT = 32;

/**
 * The daemon: one store, any number of Unix sockets, any number of connections. Requests of one
 * connection run in the order they arrive (so a client's posts land in its order); `wait` and
 * `subscribe` run alongside, so one connection can hold several of them and keep issuing
 * requests.
 */
export class DaemonServer {
  private readonly servers: Array<{ server: Server; bound: Bound }> = [];
  private readonly connections = new Set<Connection>();
  private readonly startedAt = new Date().toISOString();
  readonly maxLineBytes: number;
  readonly maxBufferedBytes: number;
  readonly autoCreate: boolean;
  /** Bytes of unfinished lines held by all connections together. */
  private bufferedBytes = 0;
  private readonly envelopes: EnvelopeCounts = { posted: 0, refused: 0, lastRefusal: null };
  private closing: Promise<void> | undefined;

  constructor(private readonly options: DaemonOptions) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.autoCreate = options.autoCreate ?? true;
  }

  get store(): Store {
    return this.options.store;
  }

  /**
   * Listens at `path` (probing it first; a live daemon there is `DAEMON_RUNNING`). `lockDir` is
   * our private socket folder: creation of every socket we bind is serialised through it.
   */
  async listen(path: string, lockDir = dirname(path)): Promise<void> {
    await ensurePrivateDir(lockDir);
    // Half-open: a client may send its lines and shut its side (`nc -N`) and still get answers.
    const server = createServer({ allowHalfOpen: true }, (socket) => this.accept(socket));
    const bound = await bindSocket(server, path, lockDir);
    this.servers.push({ server, bound });
  }

  get sockets(): string[] {
    return this.servers.map((s) => s.bound.path);
  }

  info(): DaemonInfo {
    let subscriptions = 0;
    for (const c of this.connections) subscriptions += c.subscriptionCount;
    return {
      root: this.options.root,
      pid: process.pid,
      version: this.options.version,
      sockets: this.sockets,
      maxLineBytes: this.maxLineBytes,
      maxBufferedBytes: this.maxBufferedBytes,
      bufferedBytes: this.bufferedBytes,
      autoCreate: this.autoCreate,
      startedAt: this.startedAt,
      connections: this.connections.size,
      subscriptions,
      hello: true,
      envelopes: { ...this.envelopes },
    };
  }

  /**
   * Stops accepting, removes our socket files, lets every request already received finish (in
   * particular posts), ends waits and subscriptions, then closes the connections.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // server.close() only calls back once every connection has ended, hence no await here.
      const stopped = this.servers.map(
        ({ server }) => new Promise<void>((resolve) => server.close(() => resolve())),
      );
      for (const { bound } of this.servers) await unlinkOwnSocket(bound);
      await Promise.all([...this.connections].map((c) => c.shutdown()));
      await Promise.all(stopped);
    })();
    return this.closing;
  }

  private accept(socket: Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    const connection = new Connection(socket, this);
    this.connections.add(connection);
    socket.once("close", () => this.connections.delete(connection));
  }

  /**
   * Counts `bytes` more (or fewer) of unfinished lines. Past the global limit, the connections
   * holding the largest unfinished lines are closed until the rest fit: the one flooding the
   * daemon goes, clients with short lines (every ordinary client) are not touched.
   */
  holdBuffered(bytes: number): void {
    this.bufferedBytes += bytes;
    while (this.bufferedBytes > this.maxBufferedBytes) {
      let largest: Connection | undefined;
      for (const c of this.connections) {
        if (c.pendingBytes > (largest?.pendingBytes ?? 0)) largest = c;
      }
      if (!largest) break;
      largest.refuseOverBudget(this.bufferedBytes, this.maxBufferedBytes);
    }
  }

  /**
   * An envelope is an ordinary post; its channel is created (open) when missing. Whatever
   * becomes of it is counted and logged: posted, or refused with the reason.
   */
  async postEnvelope(value: unknown): Promise<PostResult> {
    let envelope: B00tEnvelope;
    let post: EnvelopePost;
    let result: PostResult;
    try {
      envelope = validateEnvelope(value);
      post = envelopeToPost(envelope, "b00t-socket");
      result = await this.postOrCreate(post);
    } catch (err) {
      this.noteRefused(err, envelopeNames(value));
      throw err;
    }
    this.envelopes.posted++;
    this.options.log?.({
      event: "envelope",
      at: new Date().toISOString(),
      seq: result.seq,
      channel: result.channel,
      from: post.from,
      sender: envelope.sender,
      sentChannel: envelope.channel,
      bytes: Buffer.byteLength(envelope.body),
    });
    return result;
  }

  private async postOrCreate({ channel, ...post }: EnvelopePost): Promise<PostResult> {
    try {
      return await this.store.post(channel, post);
    } catch (err) {
      if (!(this.autoCreate && isAgentChatError(err, "CHANNEL_NOT_FOUND"))) throw err;
      try {
        await this.store.init(channel, { members: [] });
      } catch (initErr) {
        if (!isAgentChatError(initErr, "CHANNEL_EXISTS")) throw initErr;
      }
      return this.store.post(channel, post);
    }
  }

  /** A line refused without an answer anyone is known to read: counted, and logged. */
  noteRefused(err: unknown, names: { channel?: string; sender?: string } = {}): void {
    const { code, message } = toWireError(err);
    const at = new Date().toISOString();
    this.envelopes.refused++;
    this.envelopes.lastRefusal = { at, code, message };
    this.options.log?.({ event: "refused", at, code, message, ...names });
  }
}

/** The `channel` and `sender` of a would-be envelope, when they are strings, for the log. */
function envelopeNames(value: unknown): { channel?: string; sender?: string } {
  const names: { channel?: string; sender?: string } = {};
  if (typeof value !== "object" || value === null) return names;
  const { channel, sender } = value as Record<string, unknown>;
  if (typeof channel === "string") names.channel = channel;
  if (typeof sender === "string") names.sender = sender;
  return names;
}

/** The store operations answered by one line, by op (src/store/operations.ts). */
const REQUEST_ROWS = new Map(
  [...REQUEST_OPERATIONS, ...OPTIONAL_OPERATIONS].map((row) => [row.op, row]),
);

/** How often a presence stream looks for a change (presence changes at human pace). */
const PRESENCE_PUSH_MS = 1_000;

/** One client connection: splits lines, runs requests, streams subscriptions. */
class Connection {
  private readonly lines: LineSplitter;
  /** Bytes of the unfinished line held by `lines`, as counted in the daemon's total. */
  pendingBytes = 0;
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  /** `wait` and `subscribe` in progress, by request id, so `cancel` and shutdown can end them. */
  private readonly running = new Map<RequestId, { abort: AbortController; kind: string }>();
  /** Aborted once the client has sent everything: its parked waits then renew no lease. */
  private readonly active = new AbortController();
  /** The same, as promises that settle when each one has sent its last line. */
  private readonly longRunning = new Set<Promise<void>>();
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private closed = false;
  private readingPaused = false;
  /** At shutdown the queue no longer waits for a client to read (see `writable`). */
  private shuttingDown = false;
  private unblock: (() => void) | undefined;
  /** Who the client said it is (`hello`): its requests' presence names it, not the daemon. */
  private actor: Actor | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly daemon: DaemonServer,
  ) {
    this.lines = new LineSplitter({
      maxLineBytes: daemon.maxLineBytes,
      onLine: (line) => this.onLine(line),
      onTooLong: ({ bytes }) => this.tooLong(bytes),
    });
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    // A client that vanishes mid-line or mid-wait: drop the partial line, end its long requests.
    socket.on("error", () => {});
    socket.on("end", () => {
      // Its waits still answer, but no longer count as its activity (leases follow liveness).
      this.active.abort();
      void this.finish();
    });
    socket.on("close", () => {
      this.closed = true;
      this.dropPending();
      for (const { abort } of this.running.values()) abort.abort();
    });
  }

  get subscriptionCount(): number {
    let n = 0;
    for (const r of this.running.values()) if (r.kind === "subscribe") n++;
    return n;
  }

  /** The client has sent everything: answer it all, let its waits finish, then end our side. */
  private async finish(): Promise<void> {
    this.dropPending();
    await this.queue;
    await Promise.allSettled([...this.longRunning]);
    if (!this.closed) this.socket.end();
  }

  async shutdown(): Promise<void> {
    this.socket.pause();
    this.shuttingDown = true;
    this.unblock?.();
    for (const { abort } of this.running.values()) abort.abort();
    await this.queue;
    // Let the last responses and stream ends flush before the socket goes.
    await new Promise<void>((resolve) => {
      if (this.closed) return resolve();
      this.socket.end(() => resolve());
      setTimeout(() => {
        this.socket.destroy();
        resolve();
      }, 1000).unref();
    });
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    this.lines.push(chunk);
    if (this.closed) return;
    // Counted in the daemon's total after each chunk: past its limit, the largest holder goes.
    const delta = this.lines.pendingBytes - this.pendingBytes;
    this.pendingBytes = this.lines.pendingBytes;
    if (delta !== 0) this.daemon.holdBuffered(delta);
  }

  private dropPending(): void {
    this.lines.reset();
    if (this.pendingBytes > 0) this.daemon.holdBuffered(-this.pendingBytes);
    this.pendingBytes = 0;
  }

  private tooLong(size: number): void {
    const limit = this.daemon.maxLineBytes;
    this.closeWith(
      new AgentChatError(
        "TOO_LARGE",
        `line is longer than ${limit} bytes (${size} bytes before the newline); closing the connection`,
      ),
    );
  }

  /** Called by the daemon when unfinished lines pass its global limit and ours is the largest. */
  refuseOverBudget(total: number, limit: number): void {
    const mine = this.pendingBytes;
    this.closeWith(
      new AgentChatError(
        "TOO_LARGE",
        `the daemon holds ${total} bytes of unfinished lines across its connections (limit ` +
          `${limit}); this connection's (${mine} bytes, no newline yet) is the largest; closing it`,
      ),
    );
  }

  /** Sends one last error line, drops what we hold and closes (for good after a second). */
  private closeWith(error: AgentChatError): void {
    this.daemon.noteRefused(error);
    this.socket.pause();
    this.dropPending();
    this.lines.close();
    this.respondError(null, error);
    this.closed = true;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  private onLine(raw: Buffer): void {
    if (this.closed) return;
    let text: string;
    try {
      text = this.decoder.decode(raw);
    } catch {
      this.refuse(null, new AgentChatError("PROTOCOL_ERROR", "line is not valid UTF-8"));
      return;
    }
    if (text.trim() === "") return;
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      this.refuse(
        null,
        new AgentChatError("PROTOCOL_ERROR", `JSON nests deeper than ${MAX_JSON_DEPTH} levels`),
      );
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      this.refuse(
        null,
        new AgentChatError("PROTOCOL_ERROR", `malformed JSON: ${(err as Error).message}`),
      );
      return;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      this.refuse(null, new AgentChatError("PROTOCOL_ERROR", "each line must be one JSON object"));
      return;
    }
    const obj = value as Record<string, unknown>;
    if (!("op" in obj) && !("id" in obj)) {
      this.enqueue(async () => {
        try {
          await this.daemon.postEnvelope(obj);
        } catch (err) {
          this.respondError(null, err);
        }
      });
      return;
    }
    const id = typeof obj.id === "string" || typeof obj.id === "number" ? obj.id : null;
    let request: Request;
    try {
      request = parseRequest(obj);
    } catch (err) {
      this.refuse(id, err);
      return;
    }
    if (request.op === "cancel") {
      // Queued like the rest, so a cancel always finds the wait or subscribe sent before it.
      const cancel = request;
      this.enqueue(async () => {
        const target = this.running.get(cancel.target);
        target?.abort.abort();
        this.respond(cancel.id, { cancelled: target !== undefined });
      });
      return;
    }
    if (request.op === "hello") {
      const { harness, host, pid } = request;
      this.enqueue(async () => {
        this.actor = { harness, host, pid };
        this.respond(request.id, {});
      });
      return;
    }
    const queued = request;
    this.enqueue(() => {
      const actor = this.actor;
      // A parked wait started here keeps the actor for its whole life (heartbeats included).
      return actor ? actingFor(actor, () => this.run(queued)) : this.run(queued);
    });
  }

  /**
   * Answers a line that cannot be run, in its turn, so answers keep the order of the lines. One
   * without an id (perhaps an envelope, whose sender reads no answer) is also counted and logged.
   */
  private refuse(id: RequestId | null, err: unknown): void {
    this.enqueue(async () => {
      if (id === null) this.daemon.noteRefused(err);
      this.respondError(id, err);
    });
  }

  /**
   * Runs `task` after every request received before it; stops reading while too many wait. A
   * task starts only once the client has taken the answers before it: pausing the socket stops
   * new lines, but the lines already read (up to a whole chunk of them) would otherwise each
   * leave an answer in our memory, however large, for a client that does not read.
   */
  private enqueue(task: () => Promise<void>): void {
    this.queued++;
    if (this.queued >= PAUSE_AT) this.socket.pause();
    this.queue = this.queue
      .then(() => this.writable())
      .then(task)
      .finally(() => {
        this.queued--;
        if (this.queued === RESUME_AT && !this.closed && !this.readingPaused) this.socket.resume();
      });
  }

  /** Resolves once our output buffer for this client is below its high-water mark. */
  private writable(): Promise<void> {
    if (this.closed || this.shuttingDown || !this.socket.writableNeedDrain)
      return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        this.unblock = undefined;
        resolve();
      };
      this.unblock = done;
      this.socket.once("drain", done);
      this.socket.once("close", done);
    });
  }

  private async run(request: Exclude<Request, { op: "cancel" | "hello" }>): Promise<void> {
    if (request.op === "presence") return this.startPresence(request);
    if (request.op === "wait" || request.op === "subscribe") {
      if (this.running.has(request.id)) {
        this.respondError(
          request.id,
          new AgentChatError("INVALID_ARGUMENT", `request id ${request.id} is already in use`),
        );
        return;
      }
      const abort = new AbortController();
      this.running.set(request.id, { abort, kind: request.op });
      if (request.op === "wait") {
        // Not awaited: the connection keeps serving while the wait is parked.
        this.track(request.id, this.runWait(request, abort));
        return;
      }
      // The subscription's starting point is fixed before the answer is sent, so a message
      // posted right after the client sees `ok` is always delivered.
      let after: Record<string, number>;
      try {
        after = await this.startPositions(request.channels, request.after);
      } catch (err) {
        this.running.delete(request.id);
        this.respondError(request.id, err);
        return;
      }
      this.respond(request.id, { channels: request.channels, after });
      this.track(request.id, this.runSubscription(request.id, request.channels, after, abort));
      return;
    }
    try {
      this.respond(request.id, await this.execute(request));
    } catch (err) {
      this.respondError(request.id, err);
    }
  }

  private track(id: RequestId, task: Promise<void>): void {
    const done = task.finally(() => {
      this.running.delete(id);
      this.longRunning.delete(done);
    });
    this.longRunning.add(done);
  }

  /**
   * A presence stream: answers with the presence now, then pushes it again each time it changed
   * (looked at every {@link PRESENCE_PUSH_MS}), until cancelled.
   */
  private async startPresence(request: Extract<Request, { op: "presence" }>): Promise<void> {
    if (this.running.has(request.id)) {
      const inUse = `request id ${request.id} is already in use`;
      return this.respondError(request.id, new AgentChatError("INVALID_ARGUMENT", inUse));
    }
    let agents: unknown;
    try {
      agents = await this.daemon.store.who(request.channel);
    } catch (err) {
      return this.respondError(request.id, err);
    }
    const abort = new AbortController();
    this.running.set(request.id, { abort, kind: "presence" });
    this.respond(request.id, { agents });
    this.track(
      request.id,
      this.runPresence(request.id, request.channel, JSON.stringify(agents), abort),
    );
  }

  private async runPresence(
    id: RequestId,
    channel: string | undefined,
    last: string,
    abort: AbortController,
  ): Promise<void> {
    let error: WireError | undefined;
    try {
      while (!abort.signal.aborted && !this.closed) {
        await new Promise<void>((resolve) => {
          // One listener at a time: a stream that lives for hours adds none per second.
          const stop = () => {
            clearTimeout(timer);
            abort.signal.removeEventListener("abort", stop);
            resolve();
          };
          const timer = setTimeout(stop, PRESENCE_PUSH_MS);
          abort.signal.addEventListener("abort", stop, { once: true });
        });
        if (abort.signal.aborted || this.closed) break;
        const agents = await this.daemon.store.who(channel);
        const json = JSON.stringify(agents);
        if (json === last) continue;
        last = json;
        this.write({ id, event: "presence", agents });
      }
    } catch (err) {
      error = toWireError(err);
    }
    this.write(error ? { id, event: "end", error } : { id, event: "end" });
  }

  /** A request answered by one line: the daemon's own, or a store operation's row. */
  private async execute(
    request: Exclude<Request, { op: "wait" | "subscribe" | "cancel" | "presence" | "hello" }>,
  ): Promise<unknown> {
    if (request.op === "info") return this.daemon.info();
    if (request.op === "envelope") return this.daemon.postEnvelope(request.envelope);
    const { id: _id, op, ...params } = request;
    const row = REQUEST_ROWS.get(op);
    if (!row) throw new AgentChatError("INVALID_ARGUMENT", `unknown op ${op}`);
    // An operation that returns nothing (notify) answers an empty object.
    return (await row.run(this.daemon.store, params)) ?? {};
  }

  private async runWait(
    request: Extract<Request, { op: "wait" }>,
    abort: AbortController,
  ): Promise<void> {
    try {
      const options: Parameters<Store["wait"]>[1] = {
        as: request.as,
        signal: abort.signal,
        activity: this.active.signal,
        onWarning: (warning) => this.write({ id: request.id, event: "warning", warning }),
      };
      if (request.timeoutMs !== undefined) options.timeoutMs = request.timeoutMs;
      if (request.intervalMs !== undefined) options.intervalMs = request.intervalMs;
      if (request.limit !== undefined) options.limit = request.limit;
      this.respond(request.id, await this.daemon.store.wait(request.channels, options));
    } catch (err) {
      this.respondError(request.id, err);
    }
  }

  private async startPositions(
    channels: readonly string[],
    after: number | Record<string, number> | undefined,
  ): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const channel of channels) {
      const given = typeof after === "number" ? after : after?.[channel];
      if (given !== undefined) {
        await this.daemon.store.roster(channel);
        out[channel] = given;
      } else {
        out[channel] = (await this.daemon.store.peek(channel, 1))[0]?.seq ?? 0;
      }
    }
    return out;
  }

  private async runSubscription(
    id: RequestId,
    channels: readonly string[],
    after: Record<string, number>,
    abort: AbortController,
  ): Promise<void> {
    let error: WireError | undefined;
    try {
      for await (const message of this.daemon.store.watch(channels, {
        after,
        signal: abort.signal,
      })) {
        if (this.closed) break;
        // A slow reader holds its own stream back, not the daemon's memory.
        if (!this.socket.write(`${JSON.stringify({ id, event: "message", message })}\n`)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              this.socket.off("drain", done);
              this.socket.off("close", done);
              resolve();
            };
            this.socket.once("drain", done);
            this.socket.once("close", done);
          });
        }
      }
    } catch (err) {
      error = toWireError(err);
    }
    this.write(error ? { id, event: "end", error } : { id, event: "end" });
  }

  private respond(id: RequestId, result: unknown): void {
    this.write({ id, ok: true, result });
  }

  private respondError(id: RequestId | null, err: unknown): void {
    this.write({ id, ok: false, error: toWireError(err) });
  }

  private write(value: unknown): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    if (!this.socket.write(`${JSON.stringify(value)}\n`) && !this.readingPaused) {
      // A client that sends requests but does not read the answers stops being read, so the
      // answers it leaves unread cannot pile up in the daemon's memory.
      this.readingPaused = true;
      this.socket.pause();
      this.socket.once("drain", () => {
        this.readingPaused = false;
        if (!this.closed && this.queued < PAUSE_AT) this.socket.resume();
      });
    }
  }
}

function toWireError(err: unknown): WireError {
  if (err instanceof AgentChatError) {
    const { code, message, reference } = err;
    return reference === undefined ? { code, message } : { code, message, reference };
  }
  if (err instanceof RangeError) {
    return { code: "PROTOCOL_ERROR", message: `request too complex: ${err.message}` };
  }
  return { code: "INTERNAL", message: err instanceof Error ? err.message : String(err) };
}
