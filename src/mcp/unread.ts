import { isMember } from "../core/meta.js";
import type { Store } from "../store/types.js";

/** Relevant unread messages of one agent, across the channels it belongs to. */
export interface UnreadCount {
  msgs: number;
  /** Only the channels with something unread, by name. */
  channels: Record<string, number>;
}

export type FooterStyle = "agent-chat" | "b00t";

export const FOOTER_STYLES: readonly FooterStyle[] = ["agent-chat", "b00t"];

/**
 * Counts what `read` would deliver to `agent` in every channel it belongs to (listed as a member,
 * or the channel is open), without moving any cursor: a channel whose last seq is not past the
 * cursor costs one small file read; the others are scanned with `peek`.
 */
export async function countUnread(store: Store, agent: string): Promise<UnreadCount> {
  const count: UnreadCount = { msgs: 0, channels: {} };
  for (const info of await store.channels()) {
    if (!isMember({ ...info, channel: info.name }, agent)) continue;
    if (info.lastSeq <= (await store.cursor(info.name, agent))) continue;
    const { messages } = await store.read(info.name, { as: agent, peek: true });
    if (messages.length === 0) continue;
    count.channels[info.name] = messages.length;
    count.msgs += messages.length;
  }
  return count;
}

/**
 * The line appended to every MCP tool result. The b00t form is the one b00t-mcp emits
 * (seed 002), byte for byte, so that tooling written for b00t parses ours.
 */
export function formatFooter(count: UnreadCount, style: FooterStyle): string {
  if (style === "b00t") return `<🥾>{ "chat": { "msgs": ${count.msgs} } }</🥾>`;
  return `<agent-chat>${JSON.stringify({ chat: count })}</agent-chat>`;
}

/** One line for people and models: "3 unread messages for bob (review: 2, deploy: 1)". */
export function describeUnread(count: UnreadCount, agent: string): string {
  const where = Object.entries(count.channels)
    .map(([name, n]) => `${name}: ${n}`)
    .join(", ");
  const noun = count.msgs === 1 ? "message" : "messages";
  return `${count.msgs} unread agent-chat ${noun} for ${agent} (${where})`;
}
