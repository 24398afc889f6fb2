import { AgentChatError } from "./errors.js";
import { oneLine, titleFromBody } from "./message.js";
import { slug, validateName } from "./names.js";

/**
 * The b00t chat envelope (seed 002): one JSON object per line on the socket, or one NATS
 * message on `chat.<channel>`.
 */
export interface B00tEnvelope {
  channel: string;
  sender: string;
  body: string;
  metadata?: Record<string, unknown>;
  /** RFC 3339, with or without fractions. */
  timestamp: string;
}

const RFC3339 = /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/;

/** Checks an already-parsed JSON value; throws INVALID_ARGUMENT naming the bad field. */
export function validateEnvelope(value: unknown): B00tEnvelope {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("INVALID_ARGUMENT", "envelope must be a JSON object");
  }
  const v = value as Record<string, unknown>;
  for (const key of ["channel", "sender", "body", "timestamp"] as const) {
    if (typeof v[key] !== "string") {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        v[key] === undefined
          ? `envelope is missing "${key}"`
          : `envelope "${key}" must be a string`,
      );
    }
  }
  if (!RFC3339.test(v.timestamp as string)) {
    throw new AgentChatError("INVALID_ARGUMENT", `envelope "timestamp" must be RFC 3339`);
  }
  const metadata = v.metadata;
  if (
    metadata !== undefined &&
    metadata !== null &&
    (typeof metadata !== "object" || Array.isArray(metadata))
  ) {
    throw new AgentChatError("INVALID_ARGUMENT", `envelope "metadata" must be a JSON object`);
  }
  const envelope: B00tEnvelope = {
    channel: v.channel as string,
    sender: v.sender as string,
    body: v.body as string,
    timestamp: v.timestamp as string,
  };
  if (metadata) envelope.metadata = metadata as Record<string, unknown>;
  return envelope;
}

/** What an envelope becomes: the fields of an ordinary post. */
export interface EnvelopePost {
  channel: string;
  from: string;
  body: string;
  title: string;
  to?: string;
  status?: string;
  replyTo?: number;
  /** The rest of the metadata, as one line of JSON under the `metadata` frontmatter key. */
  extra?: Record<string, string>;
}

/** How an envelope arrived, kept in its message (`via`): nothing signed it, whatever it says. */
export type EnvelopeRoute = "b00t-socket" | "b00t-nats";

/**
 * sender → from; `metadata.to/title/status/reply_to` when present (else broadcast and the first
 * line of the body as title); any other metadata kept as one line of JSON. b00t's `sender` is
 * free-form ("Frontend Agent"): one that is not a valid agent name posts as its slug
 * (`frontend-agent`) and keeps its words as `display_name`; a channel likewise (see
 * {@link envelopeChannel}), keeping the name as sent as `b00t_channel`. Every envelope's message says how
 * it came (`via`), and is never signed: the socket proves nothing about who wrote to it.
 */
export function envelopeToPost(envelope: B00tEnvelope, via: EnvelopeRoute): EnvelopePost {
  const { to, title, status, reply_to, ...rest } = envelope.metadata ?? {};
  const from = asAgentName(envelope.sender);
  const channel = envelopeChannel(envelope.channel);
  const post: EnvelopePost = {
    channel,
    from,
    body: envelope.body,
    title: typeof title === "string" && title.trim() !== "" ? title : titleFromBody(envelope.body),
  };
  if (typeof to === "string" || Array.isArray(to)) post.to = [to].flat().join(",");
  if (typeof status === "string") post.status = status;
  const reply = Number(reply_to);
  if (reply_to !== undefined && Number.isSafeInteger(reply) && reply > 0) post.replyTo = reply;
  const extra: Record<string, string> = {};
  if (from !== envelope.sender) extra.display_name = asSent(envelope.sender);
  if (channel !== envelope.channel) extra.b00t_channel = asSent(envelope.channel);
  extra.via = via;
  if (Object.keys(rest).length > 0) extra.metadata = JSON.stringify(rest);
  post.extra = extra;
  return post;
}

/**
 * The channel an envelope's `channel` names. b00t's channels are free-form ("Mission Delta"), and
 * a b00t client never reads an answer, so a refused envelope would be lost: a valid channel name
 * is used as it is; any other becomes its {@link b00tSlug} (`mission-delta`), as a sender does.
 * A name with no letter or digit at all (nothing to recognise it by) is refused with
 * INVALID_NAME.
 */
export function envelopeChannel(name: string): string {
  try {
    return validateName("channel", name);
  } catch (err) {
    if (!/[A-Za-z0-9]/.test(withoutAccents(name))) throw err;
    return validateName("channel", b00tSlug(name));
  }
}

function asAgentName(sender: string): string {
  try {
    return validateName("agent", sender);
  } catch {
    return b00tSlug(sender);
  }
}

/** A name as sent, fit for one frontmatter line: no line break or control character (NUL). */
function asSent(name: string): string {
  return oneLine(name)
    .replace(/\p{Cc}/gu, "")
    .slice(0, 200);
}

/** The reference's slug of a name with its accents dropped first: `Été 2` → `ete-2`, not `t-2`. */
function b00tSlug(name: string): string {
  return slug(withoutAccents(name));
}

function withoutAccents(text: string): string {
  return text.normalize("NFKD").replace(/\p{M}+/gu, "");
}
