import type { Message } from "../core/message.js";
import type { ReadLimit } from "../store/types.js";

/**
 * The most one chat_read or chat_wait returns (docs/mcp.md, "Bounded results"): a tool result
 * lands whole in the model's context, so one 1 MiB post must not become a 1 MiB result. What is
 * left waits behind the cursor, which moves only past what was returned.
 */
export const MCP_READ_LIMIT = { messages: 50, bytes: 64 * 1024 } as const;

/** What every message keeps of its body, however little of the bound is left. */
const MIN_SHOWN_BYTES = 1024;

/** What a chat_read has left of {@link MCP_READ_LIMIT}, spent channel by channel. */
export class ReadBudget {
  private messages = 0;
  private bytes = 0;

  /** The bound of the next channel's read; undefined when nothing is left for one. */
  left(): ReadLimit | undefined {
    const messages = MCP_READ_LIMIT.messages - this.messages;
    const bytes = MCP_READ_LIMIT.bytes - this.bytes;
    return messages > 0 && bytes >= MIN_SHOWN_BYTES ? { messages, bytes } : undefined;
  }

  spend(messages: readonly Message[]): void {
    this.messages += messages.length;
    for (const m of messages) this.bytes += size(m);
  }
}

/**
 * The messages as a result shows them: a body past what the bound has left (the first message
 * of a read is returned whatever its size) is cut, saying how much is left out and where the
 * whole message is. Its cursor has moved past it: it was delivered, if not in full.
 */
export function shownWithin(messages: readonly Message[]): Message[] {
  let left = MCP_READ_LIMIT.bytes;
  return messages.map((m) => {
    const shown = cut(m, Math.max(left, MIN_SHOWN_BYTES));
    left -= size(shown);
    return shown;
  });
}

/** The line that says what a bounded result left out, and how to get it; "" when nothing. */
export function moreText(more: number, unreadIn: readonly string[], peek: boolean): string {
  if (more === 0 && unreadIn.length === 0) return "";
  const counted = more > 0 ? `${more} more message${more === 1 ? "" : "s"} for you` : "";
  const channels =
    unreadIn.length > 0 ? `${counted ? ", and any" : "Any"} in ${unreadIn.join(", ")},` : "";
  const next = peek
    ? "call chat_read without peek to move past these and get the next ones"
    : "call chat_read again for the next ones";
  return (
    `\n\n${counted}${channels} not returned: a result holds at most ` +
    `${MCP_READ_LIMIT.messages} messages and ${MCP_READ_LIMIT.bytes / 1024} KiB; ${next}.`
  );
}

function cut(m: Message, bytes: number): Message {
  const whole = Buffer.from(m.body);
  if (whole.length <= bytes) return m;
  // A character cut in two is dropped whole.
  const kept = whole
    .subarray(0, bytes)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  const rest = whole.length - Buffer.byteLength(kept);
  const note =
    `[${rest} more bytes of #${m.seq} not shown: a tool result is bounded; the whole ` +
    `message: agent-chat read ${m.channel} --thread ${m.seq}]`;
  return { ...m, body: `${kept}\n\n${note}` };
}

function size(m: Message): number {
  return Buffer.byteLength(m.title) + Buffer.byteLength(m.body);
}
