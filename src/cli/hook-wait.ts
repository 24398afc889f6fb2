import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { UnreadCounter } from "../client/unread.js";
import { memberChannels } from "../client/wait-all.js";
import { NotifiedRecorder } from "../features/delivery/mcp.js";
import { readRootTextSync } from "../fsutil/root-files.js";
import {
  type ClaudeInbox,
  INBOX_TURN_MS,
  inboundNotAccepted,
  inboxNotice,
  inboxRefusal,
  postToInbox,
} from "../hosts/claude-inbox.js";
import { DEFAULT_WAKE_TIMEOUT_S, waitForNews, wakeNotice } from "../hosts/wake.js";
import type { Store } from "../store/types.js";
import {
  clearWaiter,
  currentWaiter,
  type HookIo,
  loadInbox,
  loadSeen,
  saveSeen,
  setWaiter,
} from "./hook-state.js";
import { UsageError } from "./usage.js";

/** How often a parked wait asks whether it is still wanted (and looks for new channels). */
const WAKE_POLL_MS = 1000;

/** Exit code that makes Claude Code wake the session with the hook's stderr (see below). */
const EXIT_WAKE = 2;

/** How often the wait looks for the turn a notice written into the inbox started. */
const INBOX_POLL_MS = 20;

export interface HookWaitRequest {
  agent: string;
  sessionId: string | undefined;
  /** Seconds, as given on the command line. */
  timeout: string | undefined;
  /** The session's permission mode, from the hook's input. */
  permissionMode?: string | undefined;
}

/**
 * `agent-chat hook wait`, Claude Code's Stop hook with `"async": true, "asyncRewake": true`.
 * What Claude Code 2.1.332 does with it (read in its shipped code, node_modules/@anthropic-ai/
 * claude-code/bin/claude.exe): the hook schema says asyncRewake "runs in background and wakes
 * the model on exit code 2 (blocking error). Implies async."; `async: true` keeps it in the
 * background in every mode (asyncRewake alone is backgrounded only when interactive or with
 * `--input-format stream-json`, else it would hold up `claude -p` like a plain Stop hook). When
 * it exits 2, Claude Code queues a task notification ("Stop hook feedback") whose text is
 * `Stop hook blocking error from command "Stop": ` + the hook's stderr (stdout if stderr is
 * empty), priority "next", so an idle session takes a new turn with it; that turn's Stop input
 * has `stop_hook_active: true`. Any other exit code wakes nothing. The hook's environment
 * carries `CLAUDE_PID`. At the end of a headless session Claude Code waits up to 30 s for
 * pending asyncRewake hooks, so under a one-shot `claude -p` this exits at once.
 *
 * Since Claude Code 2.1.332 a session has an inbox socket (hosts/claude-inbox.ts): when the
 * session's hooks recorded one, news is written into it first (a turn starts with our notice,
 * and a session that had no turn yet, whose wait a SessionStart hook parked, is woken too); the
 * exit 2 is the fallback when there is no usable inbox, the session's settings hold or refuse
 * other sessions' messages (`crossSessionInbound`), the session bypasses permissions (it
 * would hold the notice for review) or no turn started.
 *
 * Returns the exit code: 0 when the inbox woke the session; 2 with a notice on stderr when a
 * message arrived that the agent has neither read nor been told of; 0 otherwise (its own timeout, a newer wait or a prompt took
 * over, Claude Code is gone, or a problem, said on stderr). Never moves a cursor, and never
 * tells of the same message twice: what it tells is recorded as told for the session.
 */
export async function runHookWait(
  store: Store,
  request: HookWaitRequest,
  io: HookIo,
): Promise<number> {
  const timeoutMs = parseWakeTimeout(request.timeout);
  const { agent, sessionId: session } = request;
  // A one-shot `claude -p "…"` ends after this turn: a parked wait would only hold its exit.
  if (await oneShotHost(io.env)) return 0;
  const id = `${process.pid}-${Date.now()}`;
  let told: Record<string, number>;
  if (session === undefined) {
    // No session to remember what was told: only what arrives from now on is news.
    told = await lastSeqs(store, await memberChannels(store, agent));
  } else {
    told = (await loadSeen(io.stateDir, agent, session, io.root)).context;
    await setWaiter(io.stateDir, agent, session, id);
  }
  const mine = async () =>
    session === undefined || (await currentWaiter(io.stateDir, agent, session)) === id;
  const hostAlive = hostChecker(io.env);
  const release = async () => {
    if (session !== undefined) await clearWaiter(io.stateDir, agent, session, id);
  };
  let result: Awaited<ReturnType<typeof waitForNews>>;
  try {
    result = await waitForNews(store, agent, {
      told,
      timeoutMs,
      pollMs: WAKE_POLL_MS,
      stillWanted: async () => hostAlive() && (await mine()),
    });
  } catch (err) {
    await release();
    throw err;
  }
  if (result.kind !== "news") {
    await release();
    return 0;
  }
  const counter = new UnreadCounter(store, agent);
  const count = await counter.count();
  // The wake told the session what waits: the messages' "notified" step (docs/delivery.md).
  const recordTold = () => new NotifiedRecorder(store, agent).told(counter.upTo);
  const markSeen = async () => {
    if (session !== undefined) await markTold(store, io, { agent, session, count, news: result });
  };
  const inbox =
    session !== undefined && request.permissionMode !== "bypassPermissions"
      ? await inboxOfSession(io, agent, session)
      : undefined;
  if (inbox && session !== undefined) {
    // Told first here: the turn the notice starts runs our prompt hook, which then leaves these
    // messages to the notice instead of telling them twice.
    await markSeen();
    const notice = inboxNotice(result.message, count, agent);
    const woke = await wokeThroughInbox(io, { agent, session, id, inbox, notice });
    if (woke) {
      await release();
      await recordTold();
      return 0;
    }
  }
  // The notice first, the records after it: a crash in between tells the session of these
  // messages again at its next prompt or wait (at least once, docs/guarantees.md), never not.
  io.err(`${wakeNotice(result.message, count, agent)}\n`);
  await release();
  await markSeen();
  await recordTold();
  return EXIT_WAKE;
}

/**
 * Records the news and the unread messages of `count` as told to the session: the next prompt's
 * notice and the next wait leave them alone.
 */
async function markTold(
  store: Store,
  io: HookIo,
  told: {
    agent: string;
    session: string;
    count: { channels: Record<string, unknown> };
    news: { message: { channel: string; seq: number } };
  },
): Promise<void> {
  const { agent, session } = told;
  const seen = await loadSeen(io.stateDir, agent, session, io.root);
  const last = await lastSeqs(store, Object.keys(told.count.channels));
  const { channel, seq } = told.news.message;
  last[channel] = Math.max(last[channel] ?? 0, seq);
  await saveSeen(io.stateDir, agent, session, { ...seen, context: { ...seen.context, ...last } });
}

/**
 * The session's inbox (recorded by its hooks, hosts/claude-inbox.ts) when it may be written
 * to: the record is the user's own private file, and the socket is the user's own socket in
 * the user's own folder. Not on a system without user ids (Windows: no Unix socket there).
 */
async function inboxOfSession(
  io: HookIo,
  agent: string,
  session: string,
): Promise<ClaudeInbox | undefined> {
  const uid = process.getuid?.();
  // A wait of our pi extension or OpenCode plugin (they name their host) wakes its own host.
  if (uid === undefined || io.env.AGENT_CHAT_HOST_PID !== undefined) return undefined;
  const inbox = loadInbox(io.stateDir, agent, session);
  if (!inbox) return undefined;
  if (inboundNotAccepted(await claudeSettings(io.env))) return undefined;
  return (await inboxRefusal(inbox.socket, uid)) === undefined ? inbox : undefined;
}

/**
 * The texts of the Claude Code settings files that may set `crossSessionInbound`: the user's
 * (`$CLAUDE_CONFIG_DIR`, default `~/.claude`), and the project's shared and local ones
 * (`$CLAUDE_PROJECT_DIR`, which Claude Code gives its hooks).
 */
async function claudeSettings(env: NodeJS.ProcessEnv): Promise<string[]> {
  const texts: string[] = [];
  const user = env.CLAUDE_CONFIG_DIR || (env.HOME ? join(env.HOME, ".claude") : undefined);
  // The user's own file, which may well be a link into their dotfiles.
  if (user) texts.push(await readFile(join(user, "settings.json"), "utf8").catch(() => ""));
  if (env.CLAUDE_PROJECT_DIR) {
    const dir = join(env.CLAUDE_PROJECT_DIR, ".claude");
    texts.push(projectSettings(join(dir, "settings.json")));
    texts.push(projectSettings(join(dir, "settings.local.json")));
  }
  return texts.filter((t) => t !== "");
}

/** Larger than any settings file a user writes. */
const MAX_SETTINGS_BYTES = 1 << 20;
/** What a project settings file that is there but cannot be read safely counts as. */
const UNREADABLE_SETTINGS = JSON.stringify({ crossSessionInbound: "hold" });

/**
 * A project's settings file, which anyone of the team may write: read without following a link,
 * never waiting on a FIFO, capped. One that is there but is no such file counts as holding
 * other sessions' messages, which sends the wake to the rewake hook (the safe side).
 */
function projectSettings(path: string): string {
  try {
    return readRootTextSync(path, MAX_SETTINGS_BYTES);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? "" : UNREADABLE_SETTINGS;
  }
}

/**
 * Writes the notice into the idle session's inbox and waits for the turn it starts: Claude Code
 * answers nothing on the socket (hosts/claude-inbox.ts), but a prompt it accepts runs the
 * session's UserPromptSubmit hooks, ours among them, which remove this wait's mark (as any
 * prompt does). The mark gone within {@link INBOX_TURN_MS}: woken. Else the notice was held for
 * the user's review, refused, or the session is gone: false, and the rewake hook's exit takes
 * over (a held notice the user delivers later is one more turn that finds nothing new).
 */
async function wokeThroughInbox(
  io: HookIo,
  wake: { agent: string; session: string; id: string; inbox: ClaudeInbox; notice: string },
): Promise<boolean> {
  const { agent, session, id } = wake;
  if ((await postToInbox(wake.inbox, wake.notice)) !== undefined) return false;
  const deadline = Date.now() + INBOX_TURN_MS;
  while (Date.now() < deadline) {
    if ((await currentWaiter(io.stateDir, agent, session)) !== id) return true;
    await new Promise((resolve) => setTimeout(resolve, INBOX_POLL_MS));
  }
  return false;
}

/** Per channel among `names`, its last message number: what a session knows of at this moment. */
export async function lastSeqs(
  store: Store,
  names: readonly string[],
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const info of await store.channels()) {
    if (names.includes(info.name)) out[info.name] = info.lastSeq;
  }
  return out;
}

function parseWakeTimeout(value: string | undefined): number {
  if (value === undefined) return DEFAULT_WAKE_TIMEOUT_S * 1000;
  const seconds = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(seconds > 0 && seconds <= 7 * 86_400)) {
    throw new UsageError(`--timeout must be whole seconds, 1 to 604800 (got ${value})`);
  }
  return seconds * 1000;
}

/**
 * Whether the Claude Code that started this hook is a one-shot headless run: `-p`/`--print`
 * without `--input-format stream-json` takes no further input, so nothing can wake it, and it
 * waits up to 30 s at its end for a parked wait. Read from `/proc/CLAUDE_PID/cmdline` (Linux);
 * elsewhere, or when it cannot be read, the wait parks as usual.
 */
async function oneShotHost(env: NodeJS.ProcessEnv): Promise<boolean> {
  const pid = Number(env.CLAUDE_PID);
  if (!Number.isSafeInteger(pid) || pid <= 1) return false;
  let args: string[];
  try {
    args = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
  } catch {
    return false;
  }
  const print = args.some((a) => a === "-p" || a === "--print");
  const streaming = args.some(
    (a, i) =>
      a === "--input-format=stream-json" ||
      (a === "--input-format" && args[i + 1] === "stream-json"),
  );
  return print && !streaming;
}

/**
 * Whether the host that started this hook still runs (Claude Code's `CLAUDE_PID`, or
 * `AGENT_CHAT_HOST_PID` that our pi extension and OpenCode plugin give it): a wait left behind by a session that
 * ended must not stay parked until its timeout.
 */
function hostChecker(env: NodeJS.ProcessEnv): () => boolean {
  const pid = Number(env.CLAUDE_PID ?? env.AGENT_CHAT_HOST_PID);
  if (!Number.isSafeInteger(pid) || pid <= 1) return () => true;
  return () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === "EPERM";
    }
  };
}
