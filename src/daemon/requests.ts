import { z } from "zod";
import { AgentChatError } from "../core/errors.js";
import { WIRE_OPERATIONS, type WireRow, wireFields } from "../store/operations.js";
import { HARNESSES, type Harness } from "../store/types.js";
import { type DaemonOp, OPS, type RequestId } from "./protocol.js";

/**
 * Request shapes, checked field by field so that a client learns exactly which field is wrong:
 * the store operations' from the operation table (src/store/operations.ts), the daemon's own
 * below. Names are only type-checked here: the store validates them (INVALID_NAME) as it does
 * for every caller. Unknown fields are refused, so a typo (`chanel`) is an error, not a no-op.
 */
const f = wireFields(z);

/** The operations of the daemon itself rather than of its store. */
const DAEMON_PARAMS = {
  info: z.strictObject({}),
  hello: z.strictObject({
    harness: z.enum(HARNESSES as [Harness, ...Harness[]]),
    // What a presence record accepts: no control characters (docs/delivery.md).
    host: z.string().regex(/^[^\0-\x1f]{1,200}$/),
    pid: z
      .number()
      .int()
      .nonnegative()
      .max(2 ** 50 - 1),
  }),
  cancel: z.strictObject({ target: f.id }),
  envelope: z.strictObject({ envelope: z.record(z.string(), z.unknown()) }),
  /** A presence stream: `who`, then again each time it changed. */
  presence: z.strictObject({ channel: f.channel.optional() }),
} satisfies { [O in DaemonOp]: z.ZodObject };

type Shaped<O, S extends z.ZodType> = { id: RequestId; op: O } & z.output<S>;

type RowRequest<R> = R extends { op: infer O; params(...a: never[]): infer S extends z.ZodType }
  ? Shaped<O, S>
  : never;

/** A request as the daemon parsed it: `id`, `op` and that op's fields. */
export type Request =
  | { [O in DaemonOp]: Shaped<O, (typeof DAEMON_PARAMS)[O]> }[DaemonOp]
  | RowRequest<WireRow>;

/**
 * What a client sends for the operation `O` besides `id` and `op`: inferred from the schema the
 * daemon parses with, so a client call with a misspelt op or field does not compile.
 */
export type RequestParams<O extends Request["op"]> = Omit<Extract<Request, { op: O }>, "id" | "op">;

/** Each op's whole request schema: its fields, with `id` and `op`. */
const schemas = new Map<string, z.ZodObject>();
for (const [op, params] of Object.entries(DAEMON_PARAMS)) {
  schemas.set(op, params.extend({ id: f.id, op: z.literal(op) }));
}
for (const row of WIRE_OPERATIONS) {
  schemas.set(row.op, row.params(z, f).extend({ id: f.id, op: z.literal(row.op) }));
}

/** Parses a request object, or throws INVALID_ARGUMENT naming the first bad field. */
export function parseRequest(value: Record<string, unknown>): Request {
  const schema = typeof value.op === "string" ? schemas.get(value.op) : undefined;
  if (!schema) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      value.op === undefined
        ? `request has no "op" (one of ${OPS.join(", ")})`
        : `unknown op ${JSON.stringify(value.op).slice(0, 60)} (one of ${OPS.join(", ")})`,
    );
  }
  const parsed = schema.safeParse(value);
  // The schema of this op: its output is that op's member of the union.
  if (parsed.success) return parsed.data as Request;
  throw new AgentChatError(
    "INVALID_ARGUMENT",
    `${value.op}: ${describeIssue(parsed.error, value)}`,
  );
}

/** The first issue zod found, as one short phrase naming the field. */
function describeIssue(error: z.ZodError, value: Record<string, unknown>): string {
  const issue = error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const s = issue.keys.length > 1 ? "s" : "";
    return `unknown field${s} ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
  }
  const where = issue.path.length > 0 ? `"${issue.path.join(".")}"` : "request";
  const missing =
    issue.code === "invalid_type" &&
    issue.path.length === 1 &&
    value[issue.path[0] as string] === undefined;
  return `${where} ${missing ? "is missing" : issue.message.replace(/^Invalid input: /, "")}`;
}
