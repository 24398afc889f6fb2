import { describeUnread, type UnreadCount } from "../client/unread.js";
import type { HookDialect, HookEvent } from "./host.js";
import { HOOK_DIALECTS } from "./index.js";

export { HOOK_EVENTS, type HookEvent } from "./host.js";

/** The `--format` values: one per host's hook dialect. */
export const HOOK_FORMATS: readonly string[] = HOOK_DIALECTS.map((d) => d.format);

/** The part of a tool's hook input we use; everything else is ignored. */
export interface HookInput {
  hook_event_name?: string;
  /** Claude Code and Codex (Stop), Gemini CLI (AfterAgent): already continuing because of a stop hook. */
  stop_hook_active?: boolean;
  /** The host's session (all three tools send one): a notice is said once per session. */
  session_id?: string;
  /** Claude Code's SessionStart: `startup`, `resume`, `clear` or `compact`. */
  source?: string;
  /** Claude Code's permission mode (`default`, `auto`, `bypassPermissions`, …). */
  permission_mode?: string;
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
    if (typeof v.permission_mode === "string") input.permission_mode = v.permission_mode;
    return input;
  } catch {
    return {};
  }
}

/** The dialect of `format` (one of {@link HOOK_FORMATS}). */
export function dialectOf(format: string): HookDialect {
  const dialect = HOOK_DIALECTS.find((d) => d.format === format);
  if (!dialect) throw new Error(`no hook format ${format}`);
  return dialect;
}

/**
 * The dialect a hook run without `--format` answers in: the first host (Claude Code) unless the
 * input's event name is one only another host uses.
 */
export function detectDialect(input: HookInput): HookDialect {
  const name = input.hook_event_name;
  const [first, ...others] = HOOK_DIALECTS;
  const own = (d: HookDialect) => Object.values(d.events).includes(name ?? "");
  return own(first!) ? first! : (others.find(own) ?? first!);
}

export interface HookRequest {
  event: HookEvent;
  dialect: HookDialect;
  agent: string;
  count: UnreadCount;
  input: HookInput;
  /** At stop, keep the agent going to read its messages instead of only telling the user. */
  block?: boolean;
}

/**
 * What the hook prints on stdout: nothing when nothing is unread; otherwise one line in the form
 * the host reads ({@link HookDialect}). A host's stop hook output is JSON in every dialect:
 * `systemMessage` tells the user, or with `block` the dialect's decision makes the agent go on
 * and read (never twice in a row: `stop_hook_active` says the agent is already continuing
 * because of a stop hook).
 */
export function hookOutput(request: HookRequest): string {
  const { event, dialect, agent, count } = request;
  if (count.msgs === 0) return "";
  const first = Object.keys(count.channels)[0] ?? "CHANNEL";
  const notice =
    `${describeUnread(count, agent)}. Read them with the chat_read tool ` +
    `(or: agent-chat read ${first} --as ${agent}).`;
  if (event === "stop") {
    if (request.block && !request.input.stop_hook_active) {
      return `${JSON.stringify({ decision: dialect.keepGoing, reason: notice })}\n`;
    }
    return `${JSON.stringify({ systemMessage: notice })}\n`;
  }
  if (dialect.context === "plain") return `${notice}\n`;
  if (dialect.context === "flat") return `${JSON.stringify({ additionalContext: notice })}\n`;
  const hookEventName = dialect.events[event];
  return `${JSON.stringify({ hookSpecificOutput: { hookEventName, additionalContext: notice } })}\n`;
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
