import type { Msg } from "@nats-io/transport-node";
import {
  type B00tEnvelope,
  envelopeChannel,
  envelopeToPost,
  validateEnvelope,
} from "../../core/envelope.js";
import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import { isUrlRoot, type NatsConnectionOptions, parseNatsUrl } from "../roots.js";
import type { PostResult } from "../types.js";
import { connectNats } from "./connect.js";
import type { NatsStore } from "./nats-store.js";

/** b00t's subject for a channel's envelopes. */
export function envelopeSubject(channel: string): string {
  return `chat.${channel}`;
}

/**
 * Publishes a b00t envelope as JSON on `chat.<channel>`, fire-and-forget as b00t does, and
 * returns once the server has it: the subject and the server(s) it went to (no credentials),
 * for the caller to say. `natsUrl` is a NATS root or b00t's `NATS_URL` (`nats://host:4222`, a
 * bare `host:port`, credentials in the URL allowed; a namespace path is ignored: the bridge of
 * every namespace on that server hears it). A channel b00t names freely ("Mission Delta") goes
 * on the subject of the channel it maps to (`chat.mission-delta`), which the bridge expects.
 */
export async function publishEnvelope(
  natsUrl: string,
  envelope: B00tEnvelope,
  options: NatsConnectionOptions = {},
): Promise<{ server: string; subject: string }> {
  const { valid, target, subject } = addressed(natsUrl, envelope);
  const nc = await connectNats(target, options);
  try {
    nc.publish(subject, JSON.stringify(valid));
    await nc.flush();
  } catch (err) {
    throw new AgentChatError(
      "BACKEND_UNAVAILABLE",
      `cannot publish to ${target.server}: ${(err as Error).message}`,
      { cause: err },
    );
  } finally {
    await nc.close().catch(() => {});
  }
  return { server: target.server, subject };
}

/** The envelope checked, the server it goes to and its channel's subject. */
function addressed(natsUrl: string, envelope: B00tEnvelope) {
  const valid = validateEnvelope(envelope);
  const url = isUrlRoot(natsUrl) ? natsUrl : `nats://${natsUrl}`;
  const target = parseNatsUrl(url, false);
  return { valid, target, subject: envelopeSubject(envelopeChannel(valid.channel)) };
}

/** What a bridge answers an envelope sent with {@link sendEnvelope}. */
export interface BridgeAnswer {
  /** The namespace whose bridge posted it (the first to answer, when several namespaces bridge). */
  namespace: string;
  channel: string;
  seq: number;
}

/** How long {@link sendEnvelope} waits for a bridge to post the envelope and say so. */
const BRIDGE_ANSWER_MS = 10_000;

/**
 * Sends a b00t envelope as {@link publishEnvelope} does, as a request that a bridge answers
 * once it has posted it: what `agent-chat send` uses, so that an envelope no bridge takes is an
 * error, not a "published" that lost it (core NATS keeps nothing for absent subscribers).
 */
export async function sendEnvelope(
  natsUrl: string,
  envelope: B00tEnvelope,
  options: NatsConnectionOptions = {},
): Promise<{ server: string; subject: string; posted: BridgeAnswer }> {
  const { valid, target, subject } = addressed(natsUrl, envelope);
  const nc = await connectNats(target, options);
  let answer: unknown;
  try {
    const reply = await nc.request(subject, JSON.stringify(valid), { timeout: BRIDGE_ANSWER_MS });
    answer = reply.json();
  } catch (err) {
    throw unsent(err, target.server, subject);
  } finally {
    await nc.close().catch(() => {});
  }
  return { server: target.server, subject, posted: bridgeAnswer(answer) };
}

/** Why a sent envelope was not posted, from the request's failure. */
function unsent(err: unknown, server: string, subject: string): AgentChatError {
  const why = (err as Error)?.message ?? String(err);
  if ((err as { isNoResponders?: () => boolean })?.isNoResponders?.()) {
    return new AgentChatError(
      "BACKEND_UNAVAILABLE",
      `no bridge takes ${subject} on ${server}, so nothing was sent (NATS keeps no envelope for ` +
        "later); start one with: agent-chat bridge nats://HOST:PORT/NAMESPACE",
      { cause: err },
    );
  }
  if ((err as Error)?.name === "TimeoutError") {
    return new AgentChatError(
      "TIMEOUT",
      `no bridge answered for ${subject} on ${server} within ${BRIDGE_ANSWER_MS / 1000} s: ` +
        "the envelope may not have been posted (a listener that is not a bridge heard it?)",
      { cause: err },
    );
  }
  return new AgentChatError("BACKEND_UNAVAILABLE", `cannot send to ${server}: ${why}`, {
    cause: err,
  });
}

/** A bridge's answer: where it posted the envelope, or why it refused it. */
function bridgeAnswer(answer: unknown): BridgeAnswer {
  const { posted, error } = (answer ?? {}) as { posted?: BridgeAnswer; error?: unknown };
  if (posted && typeof posted.seq === "number") return posted;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  throw new AgentChatError(
    "INVALID_ARGUMENT",
    `the bridge refused the envelope: ${String(code ?? "PROTOCOL_ERROR")}: ${String(message ?? "no reason given")}`,
  );
}

export interface IngestOptions {
  signal?: AbortSignal;
  /** Create a channel (open to everyone) the first time an envelope names it (default true). */
  createChannels?: boolean;
  onPosted?: (result: PostResult) => void;
  /** An envelope that could not become a message, and why. */
  onRejected?: (subject: string, error: AgentChatError) => void;
}

/** One envelope, checked (JSON, a valid envelope, on its own channel's subject) and posted. */
async function ingestOne(store: NatsStore, msg: Msg, createChannels: boolean): Promise<PostResult> {
  let value: unknown;
  try {
    value = JSON.parse(msg.string());
  } catch {
    throw new AgentChatError("INVALID_ARGUMENT", "envelope is not JSON");
  }
  const envelope = validateEnvelope(value);
  if (envelopeSubject(envelopeChannel(envelope.channel)) !== msg.subject) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `envelope for channel ${JSON.stringify(envelope.channel)} arrived on ${msg.subject}`,
    );
  }
  const { channel, ...post } = envelopeToPost(envelope, "b00t-nats");
  if (createChannels) {
    await store.init(channel).catch((err: unknown) => {
      if (!isAgentChatError(err, "CHANNEL_EXISTS")) throw err;
    });
  }
  return store.post(channel, post);
}

/**
 * Turns envelopes that other clients publish on `chat.>` into ordinary messages of the store's
 * namespace, until the signal aborts. All ingesters of one namespace form one queue group, so
 * each envelope becomes exactly one message however many are running.
 */
export async function ingestEnvelopes(
  store: NatsStore,
  options: IngestOptions = {},
): Promise<void> {
  const createChannels = options.createChannels ?? true;
  const sub = store.nc.subscribe("chat.>", { queue: `agent-chat.${store.namespace}` });
  const stop = () => sub.unsubscribe();
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop();
  // The subscription is registered with the server before envelopes are awaited.
  await store.nc.flush();
  try {
    for await (const msg of sub) {
      try {
        // Posted first: an optional call would skip evaluating its argument without a callback.
        const result = await ingestOne(store, msg, createChannels);
        answer(msg, {
          posted: { namespace: store.namespace, channel: result.channel, seq: result.seq },
        });
        options.onPosted?.(result);
      } catch (err) {
        const error = isAgentChatError(err)
          ? err
          : new AgentChatError("PROTOCOL_ERROR", String((err as Error)?.message ?? err));
        answer(msg, { error: { code: error.code, message: error.message } });
        options.onRejected?.(msg.subject, error);
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
  }
}

/** Tells the sender what became of its envelope, when it asked (`sendEnvelope`; b00t does not). */
function answer(msg: Msg, what: object): void {
  if (msg.reply) msg.respond(JSON.stringify(what));
}
