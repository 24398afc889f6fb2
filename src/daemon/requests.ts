import { z } from "zod";
import { AgentChatError } from "../core/errors.js";
import { HARNESSES, type Harness } from "../store/types.js";
import { OPS } from "./protocol.js";

/**
 * Request shapes, checked field by field so that a client learns exactly which field is wrong.
 * Names are only type-checked here: the store validates them (INVALID_NAME) as it does for
 * every caller. Unknown fields are refused, so a typo (`chanel`) is an error, not a no-op.
 */
const id = z.union([z.string().max(200), z.number().refine(Number.isSafeInteger)]);
const channel = z.string();
const channels = z.array(z.string()).min(1).max(100);
const count = z.number().int().positive().max(100_000);
const ms = z.number().int().nonnegative().max(2_147_483_647);
/** A fencing token: the store refuses one that is not a positive safe integer. */
const token = z.number().int();

const base = { id };
/** Who acts on which task. */
const holder = { channel, task: z.string(), as: z.string() };
/** Who acts on which path lease (its token or pattern), with the token they hold. */
const pathHolder = { channel, lease: z.string(), as: z.string(), token: token.optional() };

export const requestSchema = z.discriminatedUnion("op", [
  z.strictObject({ ...base, op: z.literal("info") }),
  z.strictObject({
    ...base,
    op: z.literal("hello"),
    harness: z.enum(HARNESSES as [Harness, ...Harness[]]),
    // What a presence record accepts: no control characters (docs/delivery.md).
    host: z.string().regex(/^[^\0-\x1f]{1,200}$/),
    pid: z
      .number()
      .int()
      .nonnegative()
      .max(2 ** 50 - 1),
  }),
  z.strictObject({ ...base, op: z.literal("cancel"), target: id }),
  z.strictObject({
    ...base,
    op: z.literal("init"),
    channel,
    members: z.array(z.string()).max(1000).optional(),
    topic: z.string().optional(),
    extra: z.record(z.string(), z.unknown()).optional(),
  }),
  z.strictObject({ ...base, op: z.literal("channels") }),
  z.strictObject({ ...base, op: z.literal("roster"), channel }),
  z.strictObject({
    ...base,
    op: z.literal("post"),
    channel,
    from: z.string(),
    body: z.string(),
    title: z.string().optional(),
    to: z.union([z.string(), z.array(z.string()).max(1000)]).optional(),
    replyTo: z.number().int().positive().optional(),
    status: z.string().optional(),
    extra: z.record(z.string(), z.string()).optional(),
  }),
  z.strictObject({
    ...base,
    op: z.literal("read"),
    channel,
    as: z.string(),
    all: z.boolean().optional(),
    everyone: z.boolean().optional(),
    peek: z.boolean().optional(),
  }),
  z.strictObject({
    ...base,
    op: z.literal("peek"),
    channel,
    count: count.optional(),
    archived: z.boolean().optional(),
  }),
  z.strictObject({ ...base, op: z.literal("cursor"), channel, as: z.string() }),
  z.strictObject({
    ...base,
    op: z.literal("wait"),
    channels,
    as: z.string(),
    timeoutMs: ms.optional(),
    intervalMs: ms.min(10).optional(),
  }),
  z.strictObject({
    ...base,
    op: z.literal("subscribe"),
    channels,
    after: z.union([z.number().int().nonnegative(), z.record(z.string(), z.number())]).optional(),
  }),
  z.strictObject({
    ...base,
    op: z.literal("envelope"),
    envelope: z.record(z.string(), z.unknown()),
  }),
  z.strictObject({
    ...base,
    op: z.literal("add_task"),
    channel,
    from: z.string(),
    title: z.string(),
    taskId: z.string().optional(),
    body: z.string().optional(),
  }),
  z.strictObject({ ...base, op: z.literal("tasks"), channel }),
  z.strictObject({ ...base, op: z.literal("claim"), ...holder, ttlMs: ms.optional() }),
  z.strictObject({
    ...base,
    op: z.literal("renew"),
    ...holder,
    token: token.optional(),
    ttlMs: ms.optional(),
  }),
  z.strictObject({
    ...base,
    op: z.literal("done"),
    ...holder,
    token: token.optional(),
    note: z.string().max(4096).optional(),
  }),
  z.strictObject({ ...base, op: z.literal("release"), ...holder, token: token.optional() }),
  z.strictObject({ ...base, op: z.literal("fence"), channel, task: z.string(), token }),
  z.strictObject({
    ...base,
    op: z.literal("task_create"),
    channel,
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
  z.strictObject({
    ...base,
    op: z.literal("task_change"),
    channel,
    task: z.string(),
    change: z.discriminatedUnion("op", [
      z.strictObject({ op: z.literal("block"), agent: z.string() }),
      z.strictObject({
        op: z.literal("recover"),
        agent: z.string(),
        reason: z.string(),
        ttlMs: ms.optional(),
      }),
    ]),
  }),
  z.strictObject({
    ...base,
    op: z.literal("lease_add"),
    channel,
    pattern: z.string(),
    as: z.string(),
    ttlMs: ms.optional(),
    shared: z.boolean().optional(),
    reason: z.string().max(4096).optional(),
    force: z.boolean().optional(),
  }),
  z.strictObject({ ...base, op: z.literal("leases"), channel }),
  z.strictObject({ ...base, op: z.literal("lease_renew"), ...pathHolder, ttlMs: ms.optional() }),
  z.strictObject({ ...base, op: z.literal("lease_release"), ...pathHolder }),
  z.strictObject({ ...base, op: z.literal("receipts"), channel, seq: z.number().int() }),
  z.strictObject({ ...base, op: z.literal("explain"), channel, seq: z.number().int() }),
  z.strictObject({
    ...base,
    op: z.literal("notify"),
    channel,
    as: z.string(),
    seq: z.number().int(),
  }),
  z.strictObject({ ...base, op: z.literal("who"), channel: channel.optional() }),
  z.strictObject({ ...base, op: z.literal("presence"), channel: channel.optional() }),
  z.strictObject({
    ...base,
    op: z.literal("search"),
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
  z.strictObject({
    ...base,
    op: z.literal("thread"),
    channel,
    seq: z.number().int(),
    archived: z.boolean().optional(),
  }),
]);

export type Request = z.infer<typeof requestSchema>;

/**
 * What a client sends for the operation `O` besides `id` and `op`: inferred from the schema the
 * daemon parses with, so a client call with a misspelt op or field does not compile.
 */
export type RequestParams<O extends Request["op"]> = Omit<Extract<Request, { op: O }>, "id" | "op">;

/** Parses a request object, or throws INVALID_ARGUMENT naming the first bad field. */
export function parseRequest(value: Record<string, unknown>): Request {
  if (typeof value.op !== "string" || !(OPS as readonly string[]).includes(value.op)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      value.op === undefined
        ? `request has no "op" (one of ${OPS.join(", ")})`
        : `unknown op ${JSON.stringify(value.op).slice(0, 60)} (one of ${OPS.join(", ")})`,
    );
  }
  const parsed = requestSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length > 0 ? `"${issue.path.join(".")}"` : "request";
  const detail =
    issue.code === "unrecognized_keys"
      ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`
      : issue.code === "invalid_type" &&
          issue.path.length === 1 &&
          value[issue.path[0] as string] === undefined
        ? "is missing"
        : issue.message.replace(/^Invalid input: /, "");
  throw new AgentChatError(
    "INVALID_ARGUMENT",
    `${value.op}: ${issue.code === "unrecognized_keys" ? detail : `${where} ${detail}`}`,
  );
}
