import type { z as Z } from "zod";
import { AgentChatError } from "../core/errors.js";
import { type ChannelMeta, parseMeta, sameMeta } from "../core/meta.js";
import type { Store, TaskInfo } from "./types.js";

/**
 * The operation table: each store operation described once, by the `Store` method it is (its
 * contract, in types.ts), its name and parameters on the daemon's wire (one zod schema), how the
 * daemon runs it on a store, and which agent it acts as. From it come the daemon's op list,
 * request validation, dispatch and client (src/daemon/), the forwarding base of every store
 * decorator and the identity guard's admission (docs/daemon.md, "Adding an operation").
 *
 * The schemas are functions of the zod namespace, which only the daemon hands in: this file is
 * on the CLI's hot path (the decorators and the daemon's socket client import it), and zod is
 * not (test/cli/startup.test.ts).
 */
export type Zod = typeof Z;

/** Fields many operations share, built with the daemon's zod. */
export function wireFields(z: Zod) {
  const channel = z.string();
  /** A fencing token: the store refuses one that is not a positive safe integer. */
  const token = z.number().int();
  return {
    id: z.union([z.string().max(200), z.number().refine(Number.isSafeInteger)]),
    channel,
    channels: z.array(z.string()).min(1).max(100),
    count: z.number().int().positive().max(100_000),
    /** A read's or wait's bound (ReadLimit). */
    limit: z
      .strictObject({
        messages: z.number().int().positive().optional(),
        bytes: z.number().int().positive().optional(),
      })
      .optional(),
    ms: z.number().int().nonnegative().max(2_147_483_647),
    seq: z.number().int(),
    token,
    /** Who acts on which task. */
    holder: { channel, task: z.string(), as: z.string() },
    /** Who acts on which path lease (its token or pattern), with the token they hold. */
    pathHolder: { channel, lease: z.string(), as: z.string(), token: token.optional() },
  };
}

export type WireFields = ReturnType<typeof wireFields>;

/** The methods every store has, `close` aside: each is one row of the table. */
export type StoreOperation = Exclude<
  {
    [K in keyof Store]-?: undefined extends Store[K]
      ? never
      : Store[K] extends (...args: never[]) => unknown
        ? K
        : never;
  }[keyof Store],
  "close"
>;

/**
 * The optional methods of a store that the daemon serves too (refused there with a clear error
 * when its own store has none). Not in {@link OPERATIONS}: a decorator forwards them only when
 * the store it wraps has them.
 */
export type OptionalOperation = "updateMeta";

type Method = StoreOperation | OptionalOperation;
type Fn<M extends Method> = NonNullable<Store[M]>;
type Args<M extends Method> = Parameters<Fn<M>>;
type ParamsSchema = Z.ZodObject;

/** The channels an operation acts in and the agent it acts as there. */
export type Acting = [channels: string | readonly string[], agent: string];

interface Row<M extends Method> {
  method: M;
  /** Who the call acts as: the identity guard admits that name in those channels first. */
  actsAs?(...args: Args<M>): Acting;
}

/** On the daemon's wire: the op's name and the schema of its fields. */
interface OnWire<M extends Method, O extends string, S extends ParamsSchema> extends Row<M> {
  op: O;
  /** The request's fields besides `id` and `op` (unknown fields are refused). */
  params(z: Zod, f: WireFields): S;
}

/** Answered by one response line: the daemon runs it, the client sends it, both from the row. */
export interface RequestRow<
  M extends StoreOperation,
  O extends string = string,
  S extends ParamsSchema = ParamsSchema,
> extends OnWire<M, O, S> {
  kind: "request";
  /** The client: the method's arguments as the request's fields. */
  send(...args: Args<M>): Z.input<S>;
  /** The daemon: the request's fields as a call of the method. */
  run(store: Store, params: Z.output<S>): ReturnType<Fn<M>>;
  /** The client: the answer as the method returns it, given its arguments (default: as it came). */
  receive?(result: unknown, ...args: Args<M>): Awaited<ReturnType<Fn<M>>>;
}

/**
 * Answered by one response line, but the client's method is written by hand, as it takes more
 * than one request (`updateMeta`: a compare-and-set, tried again while the meta changes under
 * it: a function does not cross the socket).
 */
export interface ExchangeRow<
  M extends Method,
  O extends string = string,
  S extends ParamsSchema = ParamsSchema,
> extends OnWire<M, O, S> {
  kind: "exchange";
  /** The daemon: the request's fields run on its store. */
  run(store: Store, params: Z.output<S>): Promise<unknown>;
}

/**
 * Answered over several lines (a parked `wait`'s warnings, `subscribe`'s messages): the daemon's
 * connection and the client handle it by hand; the row gives its name and its schema.
 */
export interface StreamRow<
  M extends StoreOperation,
  O extends string = string,
  S extends ParamsSchema = ParamsSchema,
> extends OnWire<M, O, S> {
  kind: "stream";
}

/** Not on the wire: the daemon's client runs it itself (from operations that are). */
export interface LocalRow<M extends StoreOperation> extends Row<M> {
  kind: "local";
}

export type Operation<M extends StoreOperation = StoreOperation> =
  | RequestRow<M>
  | StreamRow<M>
  | LocalRow<M>;

function request<M extends StoreOperation, const O extends string, S extends ParamsSchema>(
  method: M,
  op: O,
  row: Omit<RequestRow<M, O, S>, "kind" | "method" | "op">,
): RequestRow<M, O, S> {
  return { kind: "request", method, op, ...row };
}

function stream<M extends StoreOperation, const O extends string, S extends ParamsSchema>(
  method: M,
  op: O,
  row: Omit<StreamRow<M, O, S>, "kind" | "method" | "op">,
): StreamRow<M, O, S> {
  return { kind: "stream", method, op, ...row };
}

function exchange<M extends Method, const O extends string, S extends ParamsSchema>(
  method: M,
  op: O,
  row: Omit<ExchangeRow<M, O, S>, "kind" | "method" | "op">,
): ExchangeRow<M, O, S> {
  return { kind: "exchange", method, op, ...row };
}

/** Acts as its third argument, the agent (the task and path lease operations). */
const asThird = (channel: string, _what: unknown, agent: string): Acting => [channel, agent];

const tableRows = {
  init: request("init", "init", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        members: z.array(z.string()).max(1000).optional(),
        topic: z.string().optional(),
        extra: z.record(z.string(), z.unknown()).optional(),
      }),
    send: (channel, { members, ...rest } = {}) =>
      members === undefined ? { channel, ...rest } : { channel, members: [...members], ...rest },
    run: (store, { channel, ...options }) => store.init(channel, options),
  }),
  channels: request("channels", "channels", {
    params: (z) => z.strictObject({}),
    // `onWarning` stays here: the daemon's own store hears its warnings.
    send: () => ({}),
    run: (store) => store.channels(),
  }),
  roster: request("roster", "roster", {
    params: (z, f) => z.strictObject({ channel: f.channel }),
    send: (channel) => ({ channel }),
    run: (store, { channel }) => store.roster(channel),
  }),
  post: request("post", "post", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        from: z.string(),
        body: z.string(),
        title: z.string().optional(),
        to: z.union([z.string(), z.array(z.string()).max(1000)]).optional(),
        replyTo: z.number().int().positive().optional(),
        status: z.string().optional(),
        extra: z.record(z.string(), z.string()).optional(),
      }),
    send: (channel, { to, signer, ...rest }) => {
      // A function does not cross the socket, and a post must not lose its signature silently.
      if (signer !== undefined) {
        throw new AgentChatError(
          "INVALID_ARGUMENT",
          "a signed post cannot go through the daemon; post to the folder store itself",
        );
      }
      return to === undefined
        ? { channel, ...rest }
        : { channel, to: typeof to === "string" ? to : [...to], ...rest };
    },
    run: (store, { channel, ...input }) => store.post(channel, input),
    actsAs: (channel, input) => [channel, input.from],
  }),
  read: request("read", "read", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        as: z.string(),
        all: z.boolean().optional(),
        everyone: z.boolean().optional(),
        peek: z.boolean().optional(),
        limit: f.limit,
      }),
    send: (channel, options) => ({ channel, ...options }),
    run: (store, p) =>
      store.read(p.channel, {
        as: p.as,
        all: p.all === true,
        everyone: p.everyone === true,
        peek: p.peek === true,
        ...(p.limit === undefined ? {} : { limit: p.limit }),
      }),
    actsAs: (channel, options) => [channel, options.as],
  }),
  peek: request("peek", "peek", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        count: f.count.optional(),
        archived: z.boolean().optional(),
        before: f.seq.positive().optional(),
      }),
    send: (channel, count, options = {}) => ({
      channel,
      ...(count === undefined ? {} : { count }),
      ...(options.archived ? { archived: true } : {}),
      ...(options.before === undefined ? {} : { before: options.before }),
    }),
    run: (store, p) =>
      store.peek(p.channel, p.count, {
        archived: p.archived === true,
        ...(p.before === undefined ? {} : { before: p.before }),
      }),
  }),
  cursor: request("cursor", "cursor", {
    params: (z, f) => z.strictObject({ channel: f.channel, as: z.string() }),
    send: (channel, agent) => ({ channel, as: agent }),
    run: (store, p) => store.cursor(p.channel, p.as),
  }),
  wait: stream("wait", "wait", {
    params: (z, f) =>
      z.strictObject({
        channels: f.channels,
        as: z.string(),
        timeoutMs: f.ms.optional(),
        intervalMs: f.ms.min(10).optional(),
        limit: f.limit,
      }),
    actsAs: (channels, options) => [channels, options.as],
  }),
  watch: stream("watch", "subscribe", {
    params: (z, f) =>
      z.strictObject({
        channels: f.channels,
        after: z
          .union([z.number().int().nonnegative(), z.record(z.string(), z.number())])
          .optional(),
      }),
  }),
  addTask: request("addTask", "add_task", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        from: z.string(),
        title: z.string(),
        // `id` names the request on the wire.
        taskId: z.string().optional(),
        body: z.string().optional(),
      }),
    send: (channel, { id, ...rest }) =>
      id === undefined ? { channel, ...rest } : { channel, taskId: id, ...rest },
    run: (store, { channel, taskId, title, from, body }) =>
      store.addTask(channel, {
        title,
        from,
        ...(taskId === undefined ? {} : { id: taskId }),
        ...(body === undefined ? {} : { body }),
      }),
    actsAs: (channel, task) => [channel, task.from],
  }),
  tasks: request("tasks", "tasks", {
    params: (z, f) => z.strictObject({ channel: f.channel }),
    send: (channel) => ({ channel }),
    // On the wire `{tasks, warnings}`: the records that could not be read reach the caller's
    // `onWarning` as they do without a daemon (a daemon before this answered the bare list).
    run: async (store, { channel }) => {
      const warnings: string[] = [];
      const tasks = await store.tasks(channel, { onWarning: (w) => warnings.push(w) });
      return { tasks, warnings } as unknown as TaskInfo[];
    },
    receive: (result, _channel, options) => {
      if (Array.isArray(result)) return result as TaskInfo[];
      const answer = result as { tasks: TaskInfo[]; warnings: string[] };
      for (const w of answer.warnings) options?.onWarning?.(w);
      return answer.tasks;
    },
  }),
  task: request("task", "task", {
    params: (z, f) => z.strictObject({ channel: f.channel, task: z.string() }),
    send: (channel, task) => ({ channel, task }),
    run: (store, p) => store.task(p.channel, p.task),
  }),
  claim: request("claim", "claim", {
    params: (z, f) => z.strictObject({ ...f.holder, ttlMs: f.ms.optional() }),
    send: (channel, task, agent, options = {}) => ({ channel, task, as: agent, ...options }),
    run: (store, p) => store.claim(p.channel, p.task, p.as, { ttlMs: p.ttlMs }),
    actsAs: asThird,
  }),
  renew: request("renew", "renew", {
    params: (z, f) =>
      z.strictObject({ ...f.holder, token: f.token.optional(), ttlMs: f.ms.optional() }),
    send: (channel, task, agent, options = {}) => ({ channel, task, as: agent, ...options }),
    run: (store, p) => store.renew(p.channel, p.task, p.as, { token: p.token, ttlMs: p.ttlMs }),
    actsAs: asThird,
  }),
  done: request("done", "done", {
    params: (z, f) =>
      z.strictObject({
        ...f.holder,
        token: f.token.optional(),
        note: z.string().max(4096).optional(),
      }),
    send: (channel, task, agent, options = {}) => ({ channel, task, as: agent, ...options }),
    run: (store, p) => store.done(p.channel, p.task, p.as, { token: p.token, note: p.note }),
    actsAs: asThird,
  }),
  release: request("release", "release", {
    params: (z, f) => z.strictObject({ ...f.holder, token: f.token.optional() }),
    send: (channel, task, agent, options = {}) => ({ channel, task, as: agent, ...options }),
    run: (store, p) => store.release(p.channel, p.task, p.as, { token: p.token }),
    actsAs: asThird,
  }),
  fence: request("fence", "fence", {
    params: (z, f) => z.strictObject({ channel: f.channel, task: z.string(), token: f.token }),
    send: (channel, task, token) => ({ channel, task, token }),
    run: (store, p) => store.fence(p.channel, p.task, p.token),
  }),
  createStructuredTask: request("createStructuredTask", "task_create", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        task: z.strictObject({
          id: z.string(),
          title: z.string(),
          from: z.string(),
          owner: z.string().optional(),
          dependsOn: z.array(z.string()).optional(),
          filesHint: z.array(z.string()).optional(),
          acceptance: z.array(z.string()).optional(),
          branch: z.string().optional(),
        }),
      }),
    send: (channel, task) => ({ channel, task }),
    run: (store, p) => store.createStructuredTask(p.channel, p.task),
    actsAs: (channel, task) => [channel, task.from],
  }),
  changeStructuredTask: request("changeStructuredTask", "task_change", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        task: z.string(),
        change: z.discriminatedUnion("op", [
          z.strictObject({ op: z.literal("block"), agent: z.string() }),
          z.strictObject({
            op: z.literal("recover"),
            agent: z.string(),
            reason: z.string(),
            ttlMs: f.ms.optional(),
          }),
          z.strictObject({
            op: z.literal("update"),
            agent: z.string(),
            fields: z.strictObject({
              title: z.string().optional(),
              owner: z.string().nullable().optional(),
              dependsOn: z.array(z.string()).optional(),
              filesHint: z.array(z.string()).optional(),
              acceptance: z.array(z.string()).optional(),
              branch: z.string().nullable().optional(),
              status: z.string().optional(),
            }),
          }),
        ]),
      }),
    send: (channel, task, change) => ({ channel, task, change }),
    run: (store, p) => store.changeStructuredTask(p.channel, p.task, p.change),
    actsAs: (channel, _task, change) => [channel, change.agent],
  }),
  addPathLease: request("addPathLease", "lease_add", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        pattern: z.string(),
        as: z.string(),
        ttlMs: f.ms.optional(),
        shared: z.boolean().optional(),
        reason: z.string().max(4096).optional(),
        force: z.boolean().optional(),
        also: z.array(z.string().max(4096)).max(100).optional(),
        alone: z.boolean().optional(),
      }),
    send: (channel, pattern, agent, options = {}) => ({ channel, pattern, as: agent, ...options }),
    run: (store, { channel, pattern, as, ...options }) =>
      store.addPathLease(channel, pattern, as, options),
    actsAs: asThird,
  }),
  pathLeases: request("pathLeases", "leases", {
    params: (z, f) => z.strictObject({ channel: f.channel }),
    send: (channel) => ({ channel }),
    run: (store, { channel }) => store.pathLeases(channel),
  }),
  renewPathLease: request("renewPathLease", "lease_renew", {
    params: (z, f) => z.strictObject({ ...f.pathHolder, ttlMs: f.ms.optional() }),
    send: (channel, lease, agent, options = {}) => ({ channel, lease, as: agent, ...options }),
    run: (store, p) =>
      store.renewPathLease(p.channel, p.lease, p.as, { token: p.token, ttlMs: p.ttlMs }),
    actsAs: asThird,
  }),
  releasePathLease: request("releasePathLease", "lease_release", {
    params: (z, f) => z.strictObject(f.pathHolder),
    send: (channel, lease, agent, options = {}) => ({ channel, lease, as: agent, ...options }),
    run: (store, p) => store.releasePathLease(p.channel, p.lease, p.as, { token: p.token }),
    actsAs: asThird,
  }),
  changePathLock: request("changePathLock", "lock_change", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        lock: z.string(),
        change: z.discriminatedUnion("op", [
          z.strictObject({ op: z.literal("unlock"), agent: z.string() }),
          z.strictObject({
            op: z.literal("recover"),
            agent: z.string(),
            reason: z.string().max(4096),
            ttlMs: f.ms.optional(),
          }),
        ]),
      }),
    send: (channel, lock, change) => ({ channel, lock, change }),
    run: (store, p) => store.changePathLock(p.channel, p.lock, p.change),
    actsAs: (channel, _lock, change) => [channel, change.agent],
  }),
  receipts: request("receipts", "receipts", {
    params: (z, f) => z.strictObject({ channel: f.channel, seq: f.seq }),
    // The options stay here: warnings and proofs are the daemon's store's own.
    send: (channel, seq) => ({ channel, seq }),
    run: (store, p) => store.receipts(p.channel, p.seq),
  }),
  explain: request("explain", "explain", {
    params: (z, f) => z.strictObject({ channel: f.channel, seq: f.seq }),
    send: (channel, seq) => ({ channel, seq }),
    run: (store, p) => store.explain(p.channel, p.seq),
  }),
  // The daemon parks no receipt waits: its client looks at the receipts every `intervalMs`.
  waitFor: { kind: "local", method: "waitFor" },
  notify: request("notify", "notify", {
    params: (z, f) => z.strictObject({ channel: f.channel, as: z.string(), seq: f.seq }),
    send: (channel, agent, seq) => ({ channel, as: agent, seq }),
    run: (store, p) => store.notify(p.channel, p.as, p.seq),
    receive: () => undefined,
    actsAs: (channel, agent) => [channel, agent],
  }),
  who: request("who", "who", {
    params: (z, f) => z.strictObject({ channel: f.channel.optional() }),
    send: (channel) => (channel === undefined ? {} : { channel }),
    run: (store, p) => store.who(p.channel),
  }),
  search: request("search", "search", {
    params: (z) =>
      z.strictObject({
        query: z.string(),
        channels: z.array(z.string()).max(1000).optional(),
        from: z.string().optional(),
        to: z.string().optional(),
        status: z.string().optional(),
        since: z.string().optional(),
        until: z.string().optional(),
        limit: z.number().int().optional(),
        archived: z.boolean().optional(),
      }),
    send: (query, { channels, ...rest } = {}) => ({
      query,
      ...rest,
      ...(channels ? { channels: [...channels] } : {}),
    }),
    run: (store, { query, ...options }) => store.search(query, options),
  }),
  thread: request("thread", "thread", {
    params: (z, f) =>
      z.strictObject({ channel: f.channel, seq: f.seq, archived: z.boolean().optional() }),
    send: (channel, seq, options = {}) => ({ channel, seq, ...options }),
    run: (store, p) => store.thread(p.channel, p.seq, { archived: p.archived === true }),
  }),
} satisfies { [M in StoreOperation]: Operation<M> & { method: M } };

/** What `update_meta` answers: the meta now, and whether it is the one asked for. */
export interface MetaExchange {
  changed: boolean;
  meta: ChannelMeta;
}

/** The meta changed under a compare-and-set: what it is now. */
class MetaMoved {
  constructor(readonly meta: ChannelMeta) {}
}

const optionalRows = {
  updateMeta: exchange("updateMeta", "update_meta", {
    params: (z, f) =>
      z.strictObject({
        channel: f.channel,
        /** The meta the change was made from: it is written only if the channel's still is. */
        expected: z.record(z.string(), z.unknown()),
        next: z.record(z.string(), z.unknown()),
      }),
    run: async (store, { channel, expected, next }): Promise<MetaExchange> => {
      if (!store.updateMeta) throw cannotUpdateMeta(store.location);
      const wanted = parseMeta(JSON.stringify(next), channel);
      try {
        const meta = await store.updateMeta(channel, (current) => {
          if (!sameMeta(current, expected as ChannelMeta)) throw new MetaMoved(current);
          return wanted;
        });
        return { changed: true, meta };
      } catch (err) {
        if (err instanceof MetaMoved) return { changed: false, meta: err.meta };
        throw err;
      }
    },
  }),
} satisfies { [M in OptionalOperation]: ExchangeRow<M> & { method: M } };

/** The refusal of a store that keeps a channel's meta as `init` made it. */
export function cannotUpdateMeta(location: string): AgentChatError {
  return new AgentChatError(
    "UNSUPPORTED",
    `this store (${location}) cannot change a channel after init; give the profile to init instead`,
  );
}

/** Every row, each typed by its own parameters (what the daemon's schemas are built from). */
export const OPERATION_ROWS = tableRows;

/** The same rows, each as an `Operation` of its method (what generic code iterates over). */
export const OPERATIONS: readonly Operation[] = Object.values(tableRows);

/** The rows of the optional methods the daemon serves (see {@link OptionalOperation}). */
export const OPTIONAL_OPERATIONS: readonly ExchangeRow<OptionalOperation>[] =
  Object.values(optionalRows);

/** The rows answered by one response line: what the daemon dispatches and its client sends. */
export const REQUEST_OPERATIONS = OPERATIONS.filter(
  (row): row is RequestRow<StoreOperation> => row.kind === "request",
);

/** Every row on the wire: the store's operations and the optional ones. */
export const WIRE_OPERATIONS: readonly (
  | RequestRow<StoreOperation>
  | StreamRow<StoreOperation>
  | ExchangeRow<OptionalOperation>
)[] = [...OPERATIONS.filter((row) => row.kind !== "local"), ...OPTIONAL_OPERATIONS];

/** The rows that are on the wire, by op. */
export type WireRow =
  | Extract<(typeof tableRows)[StoreOperation], { op: string }>
  | (typeof optionalRows)[OptionalOperation];

/** Each operation's wire name. */
export type WireOp = WireRow["op"];

/**
 * Puts one method per operation on `proto`, each running `body` with the method's name and
 * arguments: how the forwarding base, the identity guard and the daemon's client get their
 * methods from the table (their types come from the `Store` contract).
 */
export function defineOperations<T extends object, R extends Operation>(
  proto: T,
  rows: readonly R[],
  body: (this: T, row: R, args: unknown[]) => unknown,
): void {
  for (const row of rows) {
    // A method the class writes itself wins.
    if (Object.hasOwn(proto, row.method)) continue;
    Object.defineProperty(proto, row.method, {
      value(this: T, ...args: unknown[]) {
        return body.call(this, row, args);
      },
      writable: true,
      configurable: true,
    });
  }
}

/** Who a call of `row` with `args` acts as, where (undefined: it acts as nobody). */
export function actingOf(row: Operation, args: unknown[]): Acting | undefined {
  return row.actsAs && Reflect.apply(row.actsAs, row, args);
}

/** Calls `store`'s `method` with arguments taken from the table's generic code. */
export function callOperation(store: Store, method: StoreOperation, args: unknown[]): unknown {
  return Reflect.apply(store[method], store, args);
}
