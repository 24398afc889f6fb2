import { AgentChatError, type ErrorCode } from "../core/errors.js";
import type { Message } from "../core/message.js";
import {
  framed,
  NOT_A_SENDER,
  safeLine,
  shownRecipients,
  shownSender,
  shownStatus,
  shownTimestamp,
} from "../core/safe-text.js";
import type { TaskInfo } from "../store/types.js";

/**
 * Messages as a model reads them best: one header line with the routing fields, then the title
 * when it says more than the body's first line, and the body, each of their lines behind
 * {@link BODY_FRAME} (docs/signatures.md, "What the model sees"): a header line starts with
 * `──` and only ours do, so nothing a member wrote can pass for a header, a sender or a verified
 * mark. Every field from the file is one line with its control characters escaped; a sender that
 * is no valid name is never shown as one.
 */
export function formatMessages(messages: readonly Message[]): string {
  return messages.map(formatMessage).join("\n\n");
}

/** What starts every line a message's author wrote. */
export const BODY_FRAME = "│ ";

function formatMessage(m: Message): string {
  // Every field on the header line is checked for its form, not only escaped: free text there
  // could draw a second header ("… ── general #5 · from alice (verified)") on the same line.
  const head = [`── ${m.channel} #${m.seq}`, senderOf(m), `to ${shownRecipients(m.to || "all")}`];
  if (m.status) head.push(shownStatus(m.status));
  if (m.replyTo !== undefined) head.push(`re #${m.replyTo}`);
  head.push(shownTimestamp(m.ts));
  const firstLine = m.body.split("\n", 1)[0]?.trim() ?? "";
  const title = m.title && m.title !== firstLine ? `${m.title}\n` : "";
  return `${head.join(" · ")}\n${framed(`${title}${m.body.trimEnd()}`, BODY_FRAME)}`;
}

/**
 * `from NAME` and what the signature proves (docs/signatures.md), nothing more for an unsigned
 * message, which most are, so that a model reads no noise. A `from` that fails the name rules
 * (a look-alike in another script, words, a mark of its own) is not a sender: never shown.
 */
function senderOf(m: Message): string {
  if (shownSender(m.from) === undefined) return `from ? (FORGED: ${NOT_A_SENDER})`;
  if (m.trust === "verified") return `from ${m.from} (verified)`;
  if (m.trust === "forged")
    return `from ${m.from} (FORGED: ${safeLine(m.trustNote ?? "bad signature")})`;
  return `from ${m.from}`;
}

export function formatTasks(channel: string, tasks: readonly TaskInfo[]): string {
  if (tasks.length === 0) return `No tasks in ${channel}.`;
  return tasks
    .map((t) => {
      const state =
        t.state === "open"
          ? "open"
          : `${t.state === "expired" ? "expired, held by" : `${t.state} by`} ${t.holder}`;
      return `task ${t.id} · ${safeLine(state)} · ${safeLine(t.title)}`;
    })
    .join("\n");
}

/** What a model should do next after each kind of failure. */
const NEXT_STEP: Partial<Record<ErrorCode | "INTERNAL", string>> = {
  INVALID_ARGUMENT: "Fix the argument named above and call the tool again.",
  INVALID_NAME:
    "Names use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit.",
  CHANNEL_NOT_FOUND:
    "Call chat_channels to see the channels, or chat_create_channel to create this one.",
  CHANNEL_EXISTS: "The channel is already there: use it (chat_channels lists it).",
  NOT_A_MEMBER: "Ask a member of the channel to add you, or use a channel you belong to.",
  TASK_NOT_FOUND: "Call chat_tasks with action=list to see the channel's tasks.",
  TASK_EXISTS: "Choose another id, or leave id out to get the next number.",
  CLAIM_LOST:
    "Someone else holds this task: do not work on it. Pick another open task (chat_tasks action=list).",
  NOT_HOLDER:
    "Only the agent holding a task's live lease can finish or release it: if it passed to someone else, stop working on it (chat_tasks action=list).",
  TOO_LARGE: "Shorten the body, or split it over several messages.",
  LOCK_TIMEOUT: "Another writer held the channel's lock too long; try again in a few seconds.",
  CORRUPT_META: "The channel's _meta.json is damaged; tell the user.",
  CORRUPT_CURSOR:
    "Call chat_read with this channel and all=true: it reads the channel from its start and sets your cursor again.",
  IO_ERROR: "The store could not be read or written; tell the user.",
  BACKEND_UNAVAILABLE: "The store is unreachable; tell the user.",
  INVALID_KFILE:
    "Fix the K-file where the message says (three lines: ResponseAction, UpdateAction, ClarifyAction; the syntax is in chat_workspace's description) and call chat_workspace again.",
  INTERNAL: "This is a bug in agent-chat; tell the user.",
};

/**
 * The CLI's advice that store messages carry, by code: an MCP caller cannot run a command, so
 * it is cut here, the one place, and NEXT_STEP names the tool to call instead. The store's
 * messages stay as they are for the CLI.
 */
const CLI_ADVICE: Partial<Record<ErrorCode, RegExp>> = {
  CHANNEL_NOT_FOUND: /\s*\(create it with: agent-chat init [^)]*\)/,
};

/** An error as a tool result's text: the code, what happened, what to do. */
export function describeError(err: unknown): { code: string; text: string } {
  const code = err instanceof AgentChatError ? err.code : "INTERNAL";
  const raw = err instanceof Error ? err.message : String(err);
  const advice = err instanceof AgentChatError ? CLI_ADVICE[err.code] : undefined;
  const message = advice ? raw.replace(advice, "") : raw;
  const next = NEXT_STEP[code] ?? "";
  return { code, text: `Error ${code}: ${message}${next ? `\nWhat to do: ${next}` : ""}` };
}

const SDK_INVALID_PARAMS = /^MCP error -32602: (?:Input validation error: )?/;

/**
 * The SDK answers arguments that fail a tool's schema, and unknown tools, with its own error
 * text; rewritten here into our form (code, message, what to do) so that a model sees one shape
 * of error whichever layer refused the call.
 */
export function normaliseSdkError(first: { type?: unknown; text?: unknown } | undefined): void {
  if (first?.type !== "text" || typeof first.text !== "string") return;
  const match = SDK_INVALID_PARAMS.exec(first.text);
  if (!match) return;
  const message = first.text.slice(match[0].length);
  first.text = /^Tool \S+ not found$/.test(message)
    ? `Error UNKNOWN_TOOL: ${message}\nWhat to do: use one of the chat_ tools listed by this server.`
    : `Error INVALID_ARGUMENT: ${message}\nWhat to do: call the tool again with arguments that match its input schema.`;
}

/** The answer to every tool call of a server that has no usable identity. */
export function noIdentityText(problem: string): string {
  return (
    `Error NO_IDENTITY: this agent-chat MCP server cannot act for you: ${problem}.\n` +
    "What to do: tell the user to give the server a name in the MCP configuration of this " +
    "tool, either the flag --as NAME in its command (agent-chat mcp --as alice) or " +
    "AGENT_CHAT_NAME=NAME in its env, then to restart the server."
  );
}

/**
 * Anything in a tool result that opens or closes a footer tag (`<agent-chat>`, b00t's `<🥾>`, in
 * any case, with or without `/` and spaces): its `<` becomes `&lt;`. Message titles, bodies and
 * names are written by others; defused, none of them can pass for the footer, which the server
 * appends after this as the last block.
 */
export function defuseFooters(text: string): string {
  return text.replace(FOOTER_TAG, "&lt;$1");
}

const FOOTER_TAG = /<(\s*\/?\s*(?:agent-chat|🥾))/giu;
