import { describeUnread, type UnreadCount } from "../client/unread.js";

export type HookEvent = "session-start" | "prompt" | "stop";
export const HOOK_EVENTS: readonly HookEvent[] = ["session-start", "prompt", "stop"];
export type HookFormat = "claude" | "codex" | "gemini";
export const HOOK_FORMATS: readonly HookFormat[] = ["claude", "codex", "gemini"];

/** The part of a tool's hook input we use; everything else is ignored. */
export interface HookInput {
  hook_event_name?: string;
  /** Claude Code and Codex (Stop), Gemini CLI (AfterAgent): already continuing because of a stop hook. */
  stop_hook_active?: boolean;
  /** The host's session (all three tools send one): a notice is said once per session. */
  session_id?: string;
  /** Claude Code's SessionStart: `startup`, `resume`, `clear` or `compact`. */
  source?: string;
}

/** Tolerates no input, invalid JSON and non-objects: a hook must never fail its host. */
export function parseHookInput(text: string): HookInput {
  if (text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
    const v = value as Record<string, unknown>;
    const input: HookInput = {};
    if (typeof v.hook_event_name === "string") input.hook_event_name = v.hook_event_name;
    if (v.stop_hook_active === true) input.stop_hook_active = true;
    if (typeof v.session_id === "string" && v.session_id !== "") input.session_id = v.session_id;
    if (typeof v.source === "string") input.source = v.source;
    return input;
  } catch {
    return {};
  }
}

/** Gemini CLI names its events differently; the others default to Claude Code's forms. */
export function detectFormat(input: HookInput): HookFormat {
  const name = input.hook_event_name;
  return name === "BeforeAgent" || name === "AfterAgent" ? "gemini" : "claude";
}

const EVENT_NAMES: Record<HookFormat, Record<HookEvent, string>> = {
  claude: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  codex: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  gemini: { "session-start": "SessionStart", prompt: "BeforeAgent", stop: "AfterAgent" },
};

/** The host tool's name for one of our events (for the configuration `setup` writes). */
export function hostEventName(format: HookFormat, event: HookEvent): string {
  return EVENT_NAMES[format][event];
}

export interface HookRequest {
  event: HookEvent;
  format: HookFormat;
  agent: string;
  count: UnreadCount;
  input: HookInput;
  /** At stop, keep the agent going to read its messages instead of only telling the user. */
  block?: boolean;
}

/**
 * What the hook prints on stdout: nothing when nothing is unread; otherwise one line in the form
 * the host tool reads.
 * - Claude Code: SessionStart/UserPromptSubmit add plain stdout to the model's context. Its Stop
 *   hook's plain stdout reaches nobody, so stop answers JSON: `systemMessage` tells the user, or
 *   with `block` a `decision: block` makes the agent go on and read (never twice in a row:
 *   `stop_hook_active` says the agent is already continuing because of a stop hook).
 * - Codex: the same events and JSON as Claude Code; context goes in
 *   `hookSpecificOutput.additionalContext`.
 * - Gemini CLI: stdout must be JSON; SessionStart/BeforeAgent take
 *   `hookSpecificOutput.additionalContext`, AfterAgent `systemMessage` or `decision: deny`.
 */
export function hookOutput(request: HookRequest): string {
  const { event, format, agent, count } = request;
  if (count.msgs === 0) return "";
  const first = Object.keys(count.channels)[0] ?? "CHANNEL";
  const notice =
    `${describeUnread(count, agent)}. Read them with the chat_read tool ` +
    `(or: agent-chat read ${first} --as ${agent}).`;
  const hostEvent = hostEventName(format, event);
  if (event === "stop") {
    if (request.block && !request.input.stop_hook_active) {
      const decision = format === "gemini" ? "deny" : "block";
      return `${JSON.stringify({ decision, reason: notice })}\n`;
    }
    return `${JSON.stringify({ systemMessage: notice })}\n`;
  }
  if (format === "claude") return `${notice}\n`;
  return `${JSON.stringify({ hookSpecificOutput: { hookEventName: hostEvent, additionalContext: notice } })}\n`;
}

/**
 * Whether any channel with unread messages has one newer than what this session was last told
 * (`told`: each channel's last seq at the previous notice). A count that only went down (the
 * agent read some) is nothing new.
 */
export function hasNewSince(
  unread: UnreadCount,
  lastSeqs: Record<string, number>,
  told: Record<string, number>,
): boolean {
  return Object.keys(unread.channels).some((ch) => (lastSeqs[ch] ?? 0) > (told[ch] ?? 0));
}

/**
 * The session's context was emptied (Claude Code's /clear, or a compaction), so what the model
 * was told is gone and the next notice must be said again.
 */
export function contextWasReset(event: HookEvent, input: HookInput): boolean {
  return event === "session-start" && (input.source === "clear" || input.source === "compact");
}
