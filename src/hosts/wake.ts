import { describeUnread, type UnreadCount } from "../client/unread.js";
import { CHANNEL_POLL_MS, listChanges, memberChannels } from "../client/wait-all.js";
import { isRelevant, type Message } from "../core/message.js";
import { fromName } from "../core/safe-text.js";
import type { Store } from "../store/types.js";

/** The hook command's event that parks for news: `agent-chat hook wait`. */
export const WAKE_EVENT = "wait";

/**
 * How long `hook wait` stays parked when not told (`--timeout`): an idle session can be woken
 * for an hour after its last turn; the next turn's Stop parks a new wait.
 */
export const DEFAULT_WAKE_TIMEOUT_S = 3600;

export interface WakeWaitOptions {
  /**
   * Per channel, the last seq the session was already told of: a message at or below it is no
   * news, even when still unread (the agent knows, and chose not to read it yet).
   */
  told: Record<string, number>;
  timeoutMs: number;
  /**
   * Asked every `pollMs`, and once more before news is given: false ends the wait with nothing
   * (the session started a turn of its own, a newer wait took over, the host is gone).
   */
  stillWanted(): Promise<boolean>;
  pollMs?: number;
  /** The store's sleep-poll behind its wake-up (WatchOptions.intervalMs). */
  intervalMs?: number;
}

export type WakeWaitResult =
  | { kind: "news"; message: Message }
  | { kind: "timeout" }
  | { kind: "unwanted" };

/**
 * Parks until a message for `agent` arrives that it has neither read nor been told of, in any
 * channel it belongs to (those that appear while it waits included), without moving a cursor:
 * unlike `Store.wait`, which returns the messages as read, this only watches (`Store.watch`), so
 * the agent still reads them itself. Built on the contract alone, so it works on every backend.
 */
export async function waitForNews(
  store: Store,
  agent: string,
  options: WakeWaitOptions,
): Promise<WakeWaitResult> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const result = await waitRound(store, agent, options, deadline);
    if (result !== "changed") return result;
  }
}

/** One watch over the agent's channels of the moment, until news, the end, or a new list. */
async function waitRound(
  store: Store,
  agent: string,
  options: WakeWaitOptions,
  deadline: number,
): Promise<WakeWaitResult | "changed"> {
  const names = await memberChannels(store, agent);
  const after: Record<string, number> = {};
  for (const name of names) {
    after[name] = Math.max(await store.cursor(name, agent), options.told[name] ?? 0);
  }
  const round = new AbortController();
  let ended: "timeout" | "unwanted" | "changed" | undefined;
  const end = (why: typeof ended) => {
    ended ??= why;
    round.abort();
  };
  const timer = setTimeout(() => end("timeout"), Math.max(0, deadline - Date.now()));
  const pollMs = options.pollMs ?? CHANNEL_POLL_MS;
  // Ends the round when the session no longer wants the news or the agent's channels change.
  const poll = listChanges(store, agent, names, pollMs, round.signal, options.stillWanted);
  const polled = poll.then(end);
  try {
    const news = await firstNews(store, agent, names, after, options, round.signal);
    if (news) {
      round.abort();
      return (await options.stillWanted()) ? { kind: "news", message: news } : { kind: "unwanted" };
    }
  } finally {
    clearTimeout(timer);
    round.abort();
    await polled;
  }
  return ended === "changed" ? "changed" : { kind: ended ?? "timeout" };
}

/** The first message for `agent` after `after` that it has not read; none once `signal` aborts. */
async function firstNews(
  store: Store,
  agent: string,
  names: readonly string[],
  after: Record<string, number>,
  options: WakeWaitOptions,
  signal: AbortSignal,
): Promise<Message | undefined> {
  const watch = store.watch(names, {
    after,
    signal,
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
  });
  for await (const message of watch) {
    if (!isRelevant(message, agent)) continue;
    // Read since the wait began (the agent in a turn): delivered already, no news.
    if (message.seq > (await store.cursor(message.channel, agent))) return message;
  }
  return undefined;
}

/**
 * What the woken session reads (Claude Code puts it in the model's context, after its own
 * "Stop hook blocking error from command" prefix, which is why it says it is no error). Fixed
 * text of ours (docs/signatures.md, "What the model sees"): the channel, the number and the
 * sender when it is a valid name, never a title or a body, which anyone who can write a file in
 * the root wrote; the message itself is read through chat_read, framed and marked.
 */
export function wakeNotice(message: Message, count: UnreadCount, agent: string): string {
  const unread = count.msgs > 0 ? ` ${describeUnread(count, agent)}.` : "";
  return (
    `not an error: a new agent-chat message arrived while you were idle: ${message.channel} ` +
    `#${message.seq}${fromName(message)}.${unread} Read it with the chat_read tool ` +
    `(or: agent-chat read ${message.channel} --as ${agent}).`
  );
}
