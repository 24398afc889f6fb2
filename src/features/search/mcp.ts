import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import { formatMessages } from "../../mcp/format.js";
import { flattenThread } from "../../store/shared/index.js";
import type { Store } from "../../store/types.js";
import { parseQuery } from "./index.js";

/** chat_read's `search` and `thread` (docs/search.md): they find messages and move no cursor. */
export async function findText(
  store: Store,
  args: {
    channel?: string | undefined;
    /** Where to search: the given channel, or the agent's own. */
    channels: string[];
    search?: string | undefined;
    thread?: number | undefined;
  },
): Promise<string> {
  if (args.thread !== undefined) {
    if (!args.channel) {
      throw new AgentChatError("INVALID_ARGUMENT", "thread needs the channel of the message");
    }
    // A model has no flag to pass: a thread is looked up whole, its archived part included.
    const tree = await store.thread(args.channel, args.thread, { archived: true });
    const messages: Message[] = flattenThread(tree).map((entry) => entry.message);
    return formatMessages(messages.sort((a, b) => a.seq - b.seq));
  }
  const query = args.search ?? "";
  parseQuery(query); // a bad query is an error even where there is nothing to search
  if (args.channels.length === 0) return "No messages match: you belong to no channel.";
  const result = await store.search(query, { channels: args.channels, limit: 20 });
  if (result.hits.length === 0) return "No messages match.";
  const lines = result.hits.map(
    (h) => `── ${h.channel} #${h.seq} · from ${h.from} · ${h.ts}\n${h.markedTitle}\n${h.snippet}`,
  );
  const more =
    result.total > result.hits.length ? `\n\n(${result.total} matches; newest 20 shown)` : "";
  return lines.join("\n\n") + more;
}
