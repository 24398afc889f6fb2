import { z } from "zod";
import { AgentChatError } from "../core/errors.js";
import type { PostInput } from "../store/types.js";

/**
 * The shapes of the viewer API's request bodies, checked before anything is written. Unknown
 * fields are refused (a `reply_to` for `replyTo` is an error, not a message posted without its
 * reply). Names and sizes are the store's to check, as for every caller; numbers are checked
 * here, and only plain decimal digits count as a number: `1e3`, `0x10`, `+1` or `1.0` are refused,
 * never read as something else.
 */

const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/** An optional text field: absent, null and "" all mean "not given" (the page sends ""). */
const optionalText = (name: string) =>
  z
    .string({ error: `${name} must be text` })
    .nullish()
    .transform((v) => (v === null || v === "" ? undefined : v));

const requiredText = (name: string, label: string) =>
  z
    .string({
      error: (issue) =>
        issue.input === undefined || issue.input === null
          ? `${label} is required`
          : `${name} must be text`,
    })
    .min(1, { error: `${label} is required` });

const notSeq = (issue: { input?: unknown }) =>
  `replyTo must be a message number (decimal digits, 1 to ${MAX_SEQ}), not ${String(JSON.stringify(issue.input)).slice(0, 40)}`;

const seqNumber = z
  .number({ error: notSeq })
  .int({ error: notSeq })
  .positive({ error: notSeq })
  .max(MAX_SEQ, { error: notSeq });

/** A message number: a whole number, or its decimal digits as text (what a form field holds). */
const replyTo = z
  .union(
    [
      seqNumber,
      z
        .string()
        .regex(/^[0-9]{1,16}$/)
        .transform(Number)
        .pipe(seqNumber),
      z.literal("").transform(() => undefined),
    ],
    { error: notSeq },
  )
  .nullish()
  .transform((v) => v ?? undefined);

const postSchema = z.strictObject({
  from: requiredText("from", "your name (from)"),
  body: requiredText("body", "a message body"),
  title: optionalText("title"),
  to: optionalText("to"),
  status: optionalText("status"),
  replyTo,
});

const panelActionSchema = z.strictObject({
  as: requiredText("as", "your name (the From box)"),
  note: optionalText("note"),
});

/** The message a `POST /api/channels/<ch>/messages` body asks for. */
export function parsePostRequest(body: unknown): PostInput {
  const r = parse(postSchema, body);
  const input: PostInput = { from: r.from, body: r.body };
  if (r.title !== undefined) input.title = r.title;
  if (r.to !== undefined) input.to = r.to;
  if (r.status !== undefined) input.status = r.status;
  if (r.replyTo !== undefined) input.replyTo = r.replyTo;
  return input;
}

const notifiedSchema = z.strictObject({
  as: requiredText("as", "your name (the From box)"),
  seq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
});

/** Who was shown a channel up to which message (`POST /api/channels/<ch>/notified`). */
export function parseNotifiedRequest(body: unknown): { as: string; seq: number } {
  return parse(notifiedSchema, body);
}

/** Who acts on a panel item, and their note. */
export function parsePanelActionRequest(body: unknown): { as: string; note?: string } {
  const r = parse(panelActionSchema, body);
  const input: { as: string; note?: string } = { as: r.as };
  if (r.note !== undefined) input.note = r.note;
  return input;
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const message =
    issue.code === "unrecognized_keys"
      ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k.slice(0, 40))).join(", ")}`
      : issue.message;
  throw new AgentChatError("INVALID_ARGUMENT", message);
}
