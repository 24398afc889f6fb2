import { setTimeout as sleep } from "node:timers/promises";
import { CHANNEL_POLL_MS, listChanges, memberChannels } from "../client/wait-all.js";
import { isRelevant, type Message } from "../core/message.js";
import { fromName, shownSender } from "../core/safe-text.js";
import type { Store } from "../store/types.js";

/**
 * Claude Code channels (research preview). What Claude Code 2.1.332 does, read in its shipped
 * code: a server that declares `capabilities.experimental["claude/channel"]` gets a handler for
 * `notifications/claude/channel`, whose params are `{ content: string, meta?: Record<string,
 * string> }`; each meta key that is an identifier (`^[a-zA-Z_][a-zA-Z0-9_]*$`, others are
 * dropped) becomes an attribute of a `<channel source="SERVER" key="value">content</channel>`
 * block, queued with priority "next" as a prompt (an idle session takes a turn with it). It
 * registers only when the session names the server in `--channels server:NAME` (or, for a
 * server not on Anthropic's allowlist, `--dangerously-load-development-channels server:NAME`),
 * on the Anthropic API (not Bedrock, Vertex or Foundry), with channels available to the account
 * and, in Team and Enterprise organisations, `channelsEnabled: true` in managed settings.
 */
export const CHANNEL_CAPABILITY = "claude/channel";
export const CHANNEL_METHOD = "notifications/claude/channel";

// A type, not an interface: notification params must be assignable to an index signature.
export type ChannelNotice = {
  content: string;
  meta: { channel: string; seq: string; from?: string };
};

export interface ChannelPushOptions {
  /** Each channel's last seq when the server started: later messages are new (unlisted: 0). */
  start: Record<string, number>;
  signal: AbortSignal;
  /** Sends one notification; the next message waits for it (no queue builds up). */
  send(notice: ChannelNotice): Promise<void>;
  pollMs?: number;
}

/** Each channel's last seq now: where pushing starts. */
export async function pushStart(store: Store): Promise<Record<string, number>> {
  const start: Record<string, number> = {};
  for (const info of await store.channels()) start[info.name] = info.lastSeq;
  return start;
}

/**
 * Sends one notification per new message for `agent` (relevant to it, in a channel it belongs
 * to, those created later included, not read by it already), in order, until `signal` aborts.
 * What it keeps is one position per channel; a send waits for the one before it.
 */
export async function pushChannelMessages(
  store: Store,
  agent: string,
  options: ChannelPushOptions,
): Promise<void> {
  const positions = new Map(Object.entries(options.start));
  const pollMs = options.pollMs ?? CHANNEL_POLL_MS;
  while (!options.signal.aborted) {
    const names = await memberChannels(store, agent);
    const round = new AbortController();
    const onAbort = () => round.abort();
    options.signal.addEventListener("abort", onAbort, { once: true });
    // A change of the agent's channels ends this round's watch; after an abort it never settles.
    void listChanges(store, agent, names, pollMs, round.signal).then(() => round.abort());
    try {
      const after = Object.fromEntries(names.map((name) => [name, positions.get(name) ?? 0]));
      for await (const message of store.watch(names, { after, signal: round.signal })) {
        positions.set(message.channel, Math.max(positions.get(message.channel) ?? 0, message.seq));
        if (!isRelevant(message, agent)) continue;
        if (message.seq <= (await store.cursor(message.channel, agent))) continue;
        await options.send(channelNotice(message));
      }
    } catch {
      // A channel removed under the watch, a store that failed for a moment: the next round
      // starts from the positions kept, so nothing is pushed twice or skipped.
      await sleep(pollMs, undefined, { signal: options.signal }).catch(() => {});
    } finally {
      round.abort();
      options.signal.removeEventListener("abort", onAbort);
    }
  }
}

/**
 * One short line for the model, and what it is about as the block's attributes: fixed text of
 * ours with the channel, the number and a sender that is a valid name, never the title (the
 * host renders `meta` as attributes, where a title could close the tag and write its own).
 */
export function channelNotice(message: Message): ChannelNotice {
  const meta: ChannelNotice["meta"] = { channel: message.channel, seq: String(message.seq) };
  const sender = shownSender(message.from);
  if (sender !== undefined) meta.from = sender;
  return {
    content: `New agent-chat message${fromName(message)} in ${message.channel} (#${message.seq}). Read it with chat_read.`,
    meta,
  };
}
