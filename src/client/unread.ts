import { isRelevant } from "../core/message.js";
import { isMember } from "../core/meta.js";
import { wholeChannel } from "../store/paging.js";
import type { Store } from "../store/types.js";

/** Relevant unread messages of one agent, across the channels it belongs to. */
export interface UnreadCount {
  msgs: number;
  /** Only the channels with something unread, by name. */
  channels: Record<string, number>;
  /** Messages addressed to the agent that ask for an answer it has not given (MCP footer). */
  owes?: number;
}

export type FooterStyle = "agent-chat" | "b00t";

export const FOOTER_STYLES: readonly FooterStyle[] = ["agent-chat", "b00t"];

interface ChannelMemo {
  /** The cursor the count was made from. */
  cursor: number;
  /** The largest seq counted. */
  upTo: number;
  /** Relevant messages in (cursor, upTo]. */
  relevant: number;
}

/**
 * Counts what `read` would deliver to `agent` in every channel it belongs to (listed as a member,
 * or the channel is open), without moving any cursor, for the hook and for a long-lived caller
 * (the MCP server counts after every tool call): a channel whose last seq is not past the
 * cursor costs one small file read; the others are scanned with `peek`.
 * An agent that only posts never moves its cursor, so a fresh count would re-parse every message
 * after it, on every call; this one remembers what it counted and, while the cursor stays put,
 * parses only the messages that arrived since. Message files are never rewritten, so a count,
 * once made, stays true until the cursor moves. (A file still being written in place by the
 * reference chat.py is not counted until the agent next reads; the count is advice, the read
 * is what delivers.)
 */
export class UnreadCounter {
  private readonly memo = new Map<string, ChannelMemo>();
  /** The last seq of each channel with something unread, as of the last count. */
  readonly upTo = new Map<string, number>();

  /** `only`: the channels to count (chat.py's AGENT_CHAT_CHANNELS for its hooks); all if absent. */
  constructor(
    private readonly store: Store,
    private readonly agent: string,
    private readonly only?: ReadonlySet<string>,
  ) {}

  async count(): Promise<UnreadCount> {
    const count: UnreadCount = { msgs: 0, channels: {} };
    this.upTo.clear();
    for (const info of await this.store.channels()) {
      if (this.only && !this.only.has(info.name)) continue;
      if (!isMember({ ...info, channel: info.name }, this.agent)) continue;
      const n = await this.channel(info.name, info.lastSeq);
      if (n === 0) continue;
      this.upTo.set(info.name, info.lastSeq);
      count.channels[info.name] = n;
      count.msgs += n;
    }
    return count;
  }

  private async channel(name: string, lastSeq: number): Promise<number> {
    const cursor = await this.store.cursor(name, this.agent);
    if (lastSeq <= cursor) {
      this.memo.delete(name);
      return 0;
    }
    const memo = this.memo.get(name);
    if (memo && memo.cursor === cursor && memo.upTo <= lastSeq) {
      if (memo.upTo < lastSeq) {
        const newer = await wholeChannel(this.store, name, { after: memo.upTo, upTo: lastSeq });
        for (const m of newer) {
          if (isRelevant(m, this.agent)) memo.relevant += 1;
        }
        memo.upTo = lastSeq;
      }
      return memo.relevant;
    }
    const { messages } = await this.store.read(name, { as: this.agent, peek: true });
    this.memo.set(name, { cursor, upTo: lastSeq, relevant: messages.length });
    return messages.length;
  }
}

/**
 * The line appended to every MCP tool result. The b00t form is the one b00t-mcp emits
 * (seed 002), byte for byte, so that tooling written for b00t parses ours.
 */
export function formatFooter(count: UnreadCount, style: FooterStyle): string {
  if (style === "b00t") return `<🥾>{ "chat": { "msgs": ${count.msgs} } }</🥾>`;
  return `<agent-chat>${JSON.stringify({ chat: count })}</agent-chat>`;
}

/**
 * How many characters of channel counts a notice lists before it ends the list with "…": a
 * notice goes into a model's context on every prompt, so many channels must not make it long
 * (chat.py's hooks bound theirs to 300 characters of stdout).
 */
export const UNREAD_LIST_BUDGET = 60;

/**
 * One line for people and models: "3 unread messages for bob (review: 2, deploy: 1)". Past
 * {@link UNREAD_LIST_BUDGET} characters of the list (always at least one channel), the rest are
 * counted: "(c-00: 1, c-01: 1, … 18 more channels)".
 */
export function describeUnread(count: UnreadCount, agent: string): string {
  const entries = Object.entries(count.channels).map(([name, n]) => `${name}: ${n}`);
  let shown = 0;
  let length = 0;
  for (const entry of entries) {
    length += (shown > 0 ? 2 : 0) + entry.length;
    if (shown > 0 && length > UNREAD_LIST_BUDGET) break;
    shown += 1;
  }
  const rest = entries.length - shown;
  const more = rest > 0 ? `, … ${rest} more channel${rest === 1 ? "" : "s"}` : "";
  const where = entries.slice(0, shown).join(", ") + more;
  const noun = count.msgs === 1 ? "message" : "messages";
  return `${count.msgs} unread agent-chat ${noun} for ${agent} (${where})`;
}
