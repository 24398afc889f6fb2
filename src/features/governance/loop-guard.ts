import { AgentChatError } from "../../core/errors.js";
import { formatTimestamp, type Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { identity, sameAgent } from "../../core/names.js";
import type { Store } from "../../store/types.js";
import { policyOf } from "./policy-rules.js";

/**
 * Loop guards (docs/signatures.md, "Loop guards"): two agents answering each other without
 * pause can burn a budget in minutes. Before a post, the channel's last messages are looked at:
 *
 * - rate: `post_rate_limit` posts (default 30) by the poster within the last minute;
 * - ping-pong: the last `ping_pong_limit` messages (default 20), all within ten minutes, alternate
 *   between the poster and one other agent, with no one else in between.
 *
 * Either pauses the poster in that channel: `_meta.json` records it under `paused`, a notice is
 * posted for people, and every later post by it is refused (PAUSED) until a person runs
 * `agent-chat unpause`. One agent answering many tasks in a burst alternates with no one, so
 * only the rate limit can stop it, never the ping-pong detector.
 */
const META_PAUSED = "paused";
const GUARD_NAME = "loop-guard";
const RATE_WINDOW_MS = 60_000;
const PING_PONG_WINDOW_MS = 10 * 60_000;

export interface Pause {
  since: string;
  reason: string;
  /** Where signatures are required: the paused poster's signature over `pauseText`. */
  sig?: string;
}

/** Who is paused in a channel, by identity. */
export function pausesOf(meta: ChannelMeta): Record<string, Pause> {
  const raw = meta[META_PAUSED];
  return typeof raw === "object" && raw !== null && !Array.isArray(raw)
    ? (raw as Record<string, Pause>)
    : {};
}

/** What the guards take from the channel's signature policy (the signed store gives it). */
export interface GuardTrust {
  /**
   * The channel's last `count` messages that count for the guards: those the channel's policy
   * delivers (under `signatures: require`, verified ones only), so that look-alike files
   * written under someone's name never pause the real poster.
   */
  recent(count: number): Promise<Message[]>;
  /** Whether a recorded pause binds the poster (under `require`: signed by the poster). */
  binds(pause: Pause): Promise<boolean>;
  /** The poster's signature of a new pause, where the channel requires one. */
  sign(pause: Pause): string | undefined;
}

/** Refuses a paused poster; pauses one that trips a guard (and refuses this post). */
export async function guardPost(
  store: Store,
  channel: string,
  meta: ChannelMeta,
  from: string,
  trust: GuardTrust,
  now = Date.now(),
): Promise<void> {
  if (sameAgent(from, GUARD_NAME)) return;
  const paused = pausesOf(meta)[identity(from)];
  if (paused && (await trust.binds(paused))) throw pausedError(channel, from, paused);
  const policy = policyOf(meta);
  const window = Math.max(policy.rateLimit, policy.pingPong);
  if (window === 0) return;
  const recent = await trust.recent(window + 1);
  const reason =
    rateTripped(recent, from, policy.rateLimit, now) ??
    pingPongTripped(recent, from, policy.pingPong, now);
  if (reason === undefined) return;
  const pause: Pause = { since: formatTimestamp(new Date(now)), reason };
  const sig = trust.sign(pause);
  if (sig !== undefined) pause.sig = sig;
  if (store.updateMeta) {
    await store.updateMeta(channel, (m) => ({
      ...m,
      [META_PAUSED]: { ...pausesOf(m), [identity(from)]: pause },
    }));
  }
  await store.post(channel, {
    from: GUARD_NAME,
    title: `${from} is paused: ${reason}`,
    body:
      `${from} is paused in ${channel}: ${reason}. Its posts are refused until a person ` +
      `lifts the pause with: agent-chat unpause ${channel} --agent ${from}`,
    status: "blocked",
  });
  throw pausedError(channel, from, pause);
}

function pausedError(channel: string, from: string, pause: Pause): AgentChatError {
  return new AgentChatError(
    "PAUSED",
    `${from} is paused in ${channel} since ${pause.since} (${pause.reason}); stop posting and ` +
      `tell a person, who lifts it with: agent-chat unpause ${channel} --agent ${from}`,
  );
}

function rateTripped(
  recent: Message[],
  from: string,
  limit: number,
  now: number,
): string | undefined {
  if (limit === 0) return undefined;
  const mine = recent.filter(
    (m) => sameAgent(m.from, from) && now - Date.parse(m.ts) < RATE_WINDOW_MS,
  );
  return mine.length >= limit ? `${limit} posts within a minute (post_rate_limit)` : undefined;
}

function pingPongTripped(
  recent: Message[],
  from: string,
  limit: number,
  now: number,
): string | undefined {
  if (limit === 0 || recent.length < limit) return undefined;
  const run = recent.slice(-limit);
  if (run.some((m) => now - Date.parse(m.ts) >= PING_PONG_WINDOW_MS)) return undefined;
  // The next post would continue the alternation: the last one is the other agent's.
  const other = run[run.length - 1]!.from;
  if (sameAgent(other, from)) return undefined;
  const alternating = run.every((m, i) => {
    const expected = (run.length - 1 - i) % 2 === 0 ? other : from;
    return sameAgent(m.from, expected);
  });
  return alternating
    ? `${limit} messages alternating with ${other} and no one else (ping_pong_limit)`
    : undefined;
}

/** Lifts a pause; returns whether there was one. */
export async function unpause(store: Store, channel: string, agent: string): Promise<boolean> {
  if (!store.updateMeta) {
    throw new AgentChatError("UNSUPPORTED", `this store cannot change ${channel}'s meta`);
  }
  let had = false;
  await store.updateMeta(channel, (m) => {
    const { [identity(agent)]: gone, ...rest } = pausesOf(m);
    had = gone !== undefined;
    const { [META_PAUSED]: _p, ...meta } = m;
    return (Object.keys(rest).length > 0 ? { ...meta, [META_PAUSED]: rest } : meta) as ChannelMeta;
  });
  return had;
}
