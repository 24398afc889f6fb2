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
  const valid = validateEnvelope(envelope);
  const url = isUrlRoot(natsUrl) ? natsUrl : `nats://${natsUrl}`;
  const target = parseNatsUrl(url, false);
  const subject = envelopeSubject(envelopeChannel(valid.channel));
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

export interface IngestOptions {
  signal?: AbortSignal;
  /** Create a channel (open to everyone) the first time an envelope names it (default true). */
  createChannels?: boolean;
  onPosted?: (result: PostResult) => void;
  /** An envelope that could not become a message, and why. */
  onRejected?: (subject: string, error: AgentChatError) => void;
}

/** One envelope, checked (JSON, a valid envelope, on its own channel's subject) and posted. */
async function ingestOne(
  store: NatsStore,
  msg: { string(): string; subject: string },
  createChannels: boolean,
): Promise<PostResult> {
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
        options.onPosted?.(result);
      } catch (err) {
        const error = isAgentChatError(err)
          ? err
          : new AgentChatError("PROTOCOL_ERROR", String((err as Error)?.message ?? err));
        options.onRejected?.(msg.subject, error);
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
  }
}
