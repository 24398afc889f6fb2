import { setTimeout as sleep } from "node:timers/promises";
import { AgentChatError, isAgentChatError } from "../core/errors.js";
import { isMember } from "../core/meta.js";
import type { ReadLimit, Store, WaitResult } from "../store/types.js";

/** How often a wait over every channel looks for channels created (or joined) since it began. */
export const CHANNEL_POLL_MS = 1_000;

/** The channels `agent` belongs to: listed as a member, or open to everyone. */
export async function memberChannels(store: Store, agent: string): Promise<string[]> {
  return (await store.channels())
    .filter((c) => isMember({ ...c, channel: c.name }, agent))
    .map((c) => c.name);
}

export interface WaitEverywhereOptions {
  timeoutMs: number;
  signal: AbortSignal;
  pollMs?: number;
  /** The store's sleep-poll behind its wake-up (WaitOptions.intervalMs). */
  intervalMs?: number;
  /** The most it returns (WaitOptions.limit). */
  limit?: ReadLimit;
}

/**
 * `Store.wait` over every channel `agent` belongs to, those that appear while it waits included.
 * The store waits on a list fixed when the wait starts (src/store/types.ts), and no backend
 * tells of new channels, so this waits on today's list while it compares `store.channels()`
 * with it every `pollMs`; when the list changes it stops that wait and starts one over the new
 * list. With no channel at all it waits for the first one. Built on the contract alone, so it
 * works the same over every backend. Rejects with `TIMEOUT` or `ABORTED` as `Store.wait` does.
 */
export async function waitEverywhere(
  store: Store,
  agent: string,
  options: WaitEverywhereOptions,
): Promise<WaitResult> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (options.signal.aborted) throw new AgentChatError("ABORTED", "wait was cancelled");
    const names = await memberChannels(store, agent);
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new AgentChatError(
        "TIMEOUT",
        `no relevant message within ${options.timeoutMs / 1000} s`,
      );
    }
    const round = { store, agent, names, remaining, options };
    const result = await inRound(options.signal, (controller) => waitRound(round, controller));
    if (result !== undefined) return result;
  }
}

/** One round of {@link waitEverywhere}: a wait over the channel list of the moment. */
interface Round {
  store: Store;
  agent: string;
  names: string[];
  remaining: number;
  options: WaitEverywhereOptions;
}

/**
 * Runs a round under its own controller, which ends this round's wait and poll: on a change of
 * the list, on return, on the caller's abort.
 */
async function inRound<T>(
  outer: AbortSignal,
  run: (round: AbortController) => Promise<T>,
): Promise<T> {
  const round = new AbortController();
  const onAbort = () => round.abort();
  outer.addEventListener("abort", onAbort, { once: true });
  try {
    return await run(round);
  } catch (err) {
    // The sleep of a round with no channel, stopped by the caller's abort.
    if ((err as Error).name === "AbortError") {
      throw new AgentChatError("ABORTED", "wait was cancelled", { cause: err });
    }
    throw err;
  } finally {
    round.abort();
    outer.removeEventListener("abort", onAbort);
  }
}

/** The round's result; undefined when the list changed and the next round should begin. */
async function waitRound(
  { store, agent, names, remaining, options }: Round,
  round: AbortController,
): Promise<WaitResult | undefined> {
  const changed = listChanges(store, agent, names, options.pollMs ?? CHANNEL_POLL_MS, round.signal);
  if (names.length === 0) {
    // Nothing to wait on yet: wait for the first channel, or for the deadline (checked above).
    await Promise.race([changed, sleep(remaining, undefined, { signal: round.signal })]);
    return undefined;
  }
  const waiting = store.wait(names, {
    as: agent,
    timeoutMs: remaining,
    signal: round.signal,
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
  });
  const first = await Promise.race([
    waiting.then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    ),
    changed.then(() => ({ changed: true as const })),
  ]);
  if ("result" in first) return first.result;
  if ("error" in first) {
    // A channel deleted under the wait: wait again over the channels that are left.
    if (isAgentChatError(first.error, "CHANNEL_NOT_FOUND")) return undefined;
    throw first.error;
  }
  round.abort();
  return stoppedWait(waiting, options.signal);
}

/**
 * The wait may have read messages (and moved cursors) just before it was stopped: those are
 * delivered, never dropped. Undefined when it stopped with nothing.
 */
async function stoppedWait(
  waiting: Promise<WaitResult>,
  caller: AbortSignal,
): Promise<WaitResult | undefined> {
  try {
    return await waiting;
  } catch (err) {
    if (caller.aborted || !isAgentChatError(err, "ABORTED")) throw err;
    return undefined;
  }
}

/**
 * Resolves with why a round over the channels `names` must end: the agent's channel list now
 * differs from it ("changed"), or `stillWanted`, asked every poll, says its caller no longer
 * wants the round ("unwanted"). Never rejects; resolves with nothing once `signal` aborts.
 */
export async function listChanges(
  store: Store,
  agent: string,
  names: readonly string[],
  pollMs: number,
  signal: AbortSignal,
  stillWanted?: () => Promise<boolean>,
): Promise<"changed" | "unwanted" | undefined> {
  const before = [...names].sort().join("\n");
  for (;;) {
    try {
      await sleep(pollMs, undefined, { signal });
    } catch {
      return undefined;
    }
    try {
      if (stillWanted && !(await stillWanted())) return "unwanted";
      const now = (await memberChannels(store, agent)).sort().join("\n");
      if (now !== before && !signal.aborted) return "changed";
    } catch {
      // A failed look changes nothing: the round in progress goes on, the next poll retries.
    }
  }
}
