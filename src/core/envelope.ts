import { AgentChatError } from "./errors.js";
import { titleFromBody } from "./message.js";

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

/**
 * sender → from; `metadata.to/title/status/reply_to` when present (else broadcast and the first
 * line of the body as title); any other metadata kept as one line of JSON.
 */
export function envelopeToPost(envelope: B00tEnvelope): EnvelopePost {
  const { to, title, status, reply_to, ...rest } = envelope.metadata ?? {};
  const post: EnvelopePost = {
    channel: envelope.channel,
    from: envelope.sender,
    body: envelope.body,
    title: typeof title === "string" && title.trim() !== "" ? title : titleFromBody(envelope.body),
  };
  if (typeof to === "string" || Array.isArray(to)) post.to = [to].flat().join(",");
  if (typeof status === "string") post.status = status;
  const reply = Number(reply_to);
  if (reply_to !== undefined && Number.isSafeInteger(reply) && reply > 0) post.replyTo = reply;
  if (Object.keys(rest).length > 0) post.extra = { metadata: JSON.stringify(rest) };
  return post;
}
