import { openStore } from "../client/open.js";
import { type UnreadCount, UnreadCounter } from "../client/unread.js";
import { NotifiedRecorder } from "../features/delivery/mcp.js";
import { INBOX_SOCKET_ENV, INBOX_TOKEN_ENV, inboxOf } from "../hosts/claude-inbox.js";
import {
  contextWasReset,
  detectDialect,
  dialectOf,
  HOOK_EVENTS,
  HOOK_FORMATS,
  type HookEvent,
  type HookInput,
  hasNewSince,
  hookOutput,
  parseHookInput,
} from "../hosts/hook.js";
import type { HookDialect } from "../hosts/host.js";
import { WAKE_EVENT } from "../hosts/wake.js";
import type { Store } from "../store/types.js";
import { clearWaiter, type HookIo, loadSeen, saveInbox, saveSeen } from "./hook-state.js";
import { readAllStdin } from "./stdio.js";
import { markTurn, TURN_MARK_ENV } from "./turn-mark.js";
import { oneOf, UsageError } from "./usage.js";

/** How long a hook waits for its host's JSON on stdin, and how much of it it reads. */
const HOOK_STDIN_MS = 250;
const HOOK_STDIN_MAX = 1024 * 1024;

/** The hook command as given on the command line (checked by `runHook`). */
export interface HookArgs {
  event: string;
  as?: string | undefined;
  format?: string | undefined;
  block?: boolean | undefined;
  /** `hook wait`: how long to stay parked, in seconds. */
  timeout?: string | undefined;
}

/** A hook signs nothing; it checks what it counts against the user's pins, as `read` does. */
function pins(io: HookIo): { configDir?: string; sign: false } {
  return io.configDir ? { configDir: io.configDir, sign: false } : { sign: false };
}

/**
 * `agent-chat hook EVENT`: prints the unread notice in the host tool's form, or nothing when
 * nothing is unread. It never throws and never moves a cursor: a hook must not break the tool
 * that runs it, so a problem is said on stderr and the exit code is 0. `hook wait` parks until
 * there is news and returns 2 with it (see hook-wait.ts). Returns the exit code.
 */
export async function runHook(args: HookArgs, io: HookIo): Promise<number> {
  try {
    const input = parseHookInput(await readHookStdin());
    const agent = args.as ?? io.env.AGENT_CHAT_NAME;
    if (!agent) return await withoutIdentity(args.event, io);
    if (args.event === WAKE_EVENT) {
      // Claude Code's wait; ours under pi or OpenCode names its host (AGENT_CHAT_HOST_PID).
      if (io.env.AGENT_CHAT_HOST_PID === undefined) recordInbox(io, agent, input);
      // A long wait: the store watches its folders, so news comes without waiting for a poll.
      const store = await openStore(io.root, {
        harness: "claude-code",
        signatures: pins(io),
        ...(io.nats && { nats: io.nats }),
      });
      try {
        // Its own file in the lean build: the hooks run on every prompt never load it.
        const { runHookWait } = await import("./hook-wait.js");
        return await runHookWait(
          store,
          {
            agent,
            sessionId: input.session_id,
            timeout: args.timeout,
            permissionMode: input.permission_mode,
          },
          io,
        );
      } finally {
        await store.close();
      }
    }
    const dialect = args.format
      ? dialectOf(oneOf(args.format, HOOK_FORMATS, "--format"))
      : detectDialect(input);
    const event = oneOf(args.event, HOOK_EVENTS, "event") as HookEvent;
    if (dialect.harness === "claude-code") recordInbox(io, agent, input);
    markRunTurn(io, event);
    // The session started a turn: a parked `hook wait` must no longer wake it.
    if (event === "prompt" && input.session_id !== undefined) {
      await clearWaiter(io.stateDir, agent, input.session_id);
    }
    // No file watch: a hook lives a few milliseconds, a watch would only cost set-up time.
    const store = await openStore(io.root, {
      watch: false,
      harness: dialect.harness,
      signatures: pins(io),
      ...(io.nats && { nats: io.nats }),
    });
    try {
      await printNotice(store, { agent, event, dialect, input, args }, io);
    } finally {
      await store.close();
    }
  } catch (err) {
    io.err(`agent-chat hook: ${(err as Error).message}\n`);
  }
  return 0;
}

/**
 * Claude Code gives its hooks the session's inbox socket and token (hosts/claude-inbox.ts):
 * kept in the user's private state for the session, so that `hook wait` can wake the session
 * through it. Every hook run records it: a session that was never prompted has it from its
 * session-start hook, and a socket Claude Code bound again is found at the next prompt. Only
 * Claude Code's hooks do: another tool started from a Claude Code shell inherits the variables
 * and must not take that session's socket for its own. Silent when it cannot (the wait's
 * stderr is the notice the model reads): the rewake hook still wakes the session.
 */
function recordInbox(io: HookIo, agent: string, input: HookInput): void {
  const inbox = inboxOf(io.env[INBOX_SOCKET_ENV], io.env[INBOX_TOKEN_ENV]);
  if (!inbox || input.session_id === undefined) return;
  try {
    saveInbox(io.stateDir, agent, input.session_id, inbox);
  } catch {
    // The state folder is not writable: no inbox, the rewake hook wakes the session.
  }
}

/** Under `agent-chat run`: the turn starts at the prompt hook and ends at the stop hook. */
function markRunTurn(io: HookIo, event: HookEvent): void {
  const path = io.env[TURN_MARK_ENV];
  if (!path || event === "session-start") return;
  try {
    markTurn(path, event === "prompt" ? "busy" : "idle");
  } catch (err) {
    // run is gone (its folder with it) or the file is not ours to write: the notice still counts.
    io.err(`agent-chat hook: cannot mark the turn for agent-chat run: ${(err as Error).message}\n`);
  }
}

async function printNotice(
  store: Store,
  {
    agent,
    event,
    dialect,
    input,
    args,
  }: { agent: string; event: HookEvent; dialect: HookDialect; input: HookInput; args: HookArgs },
  io: HookIo,
): Promise<void> {
  const counter = new UnreadCounter(store, agent, channelsOf(io.env.AGENT_CHAT_CHANNELS));
  const count = await counter.count();
  // Every hook run is the agent's activity; counting unread messages records it (a peek), but
  // with nothing after the cursors there was nothing to count, so it is recorded on its own.
  if (count.msgs === 0) return store.touch?.(agent);
  if (input.session_id !== undefined) {
    const fresh = await firstTelling(store, io, { agent, event, input, count });
    if (!fresh) return;
  }
  io.out(hookOutput({ event, dialect, agent, count, input, block: args.block === true }));
  // The notice told the session what waits: the messages' "notified" step (docs/delivery.md).
  await new NotifiedRecorder(store, agent).told(counter.upTo);
}

/**
 * Whether this session has not yet been told of the newest unread messages; if not, records that
 * it now is. The model's context (session start, prompts) and the user (stop) are told apart.
 */
async function firstTelling(
  store: Store,
  io: HookIo,
  {
    agent,
    event,
    input,
    count,
  }: { agent: string; event: HookEvent; input: HookInput; count: UnreadCount },
): Promise<boolean> {
  const sessionId = input.session_id as string;
  const lastSeqs: Record<string, number> = {};
  for (const info of await store.channels()) {
    if (info.name in count.channels) lastSeqs[info.name] = info.lastSeq;
  }
  const seen = await loadSeen(io.stateDir, agent, sessionId, io.root);
  const audience = event === "stop" ? "stop" : "context";
  if (contextWasReset(event, input)) seen.context = {};
  if (!hasNewSince(count, lastSeqs, seen[audience])) return false;
  seen[audience] = { ...seen[audience], ...lastSeqs };
  await saveSeen(io.stateDir, agent, sessionId, seen);
  return true;
}

/**
 * chat.py's AGENT_CHAT_CHANNELS: the comma-separated channels a hook counts; blank, all of them.
 * A name that is no channel (malformed, or absent) counts nothing and hides no other.
 */
function channelsOf(list: string | undefined): ReadonlySet<string> | undefined {
  const names = (list ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  return names.length > 0 ? new Set(names) : undefined;
}

/**
 * A hook run with no identity: as chat.py's hooks, no one to tell, so quiet; but `hook wait`,
 * and a session start on a root with channels, say it on stderr (the context gets nothing).
 */
async function withoutIdentity(event: string, io: HookIo): Promise<number> {
  if (event === WAKE_EVENT || (event === "session-start" && (await hasChannels(io)))) {
    throw new UsageError("--as NAME is required (or set AGENT_CHAT_NAME)");
  }
  return 0;
}

/** Whether the root holds any channel (false when it does not exist). */
async function hasChannels(io: HookIo): Promise<boolean> {
  const store = await openStore(io.root, {
    watch: false,
    signatures: pins(io),
    ...(io.nats && { nats: io.nats }),
  });
  try {
    return (await store.channels()).length > 0;
  } finally {
    await store.close();
  }
}

/** The host's JSON; nothing from a terminal, or when stdin cannot be read. */
async function readHookStdin(): Promise<string> {
  try {
    const read = await readAllStdin(HOOK_STDIN_MAX, { ms: HOOK_STDIN_MS, terminal: false });
    return read && !read.over ? read.bytes.toString("utf8") : "";
  } catch {
    return "";
  }
}
