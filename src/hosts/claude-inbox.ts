import { promises as fsp } from "node:fs";
import { connect } from "node:net";
import { dirname, isAbsolute } from "node:path";
import { describeUnread, type UnreadCount } from "../client/unread.js";
import type { Message } from "../core/message.js";
import { fromName } from "../core/safe-text.js";

/*
 * Claude Code's per-session inbox socket (2.1.332, read in its shipped code,
 * node_modules/@anthropic-ai/claude-code/bin/claude.exe, its "[uds-messaging]" module):
 *
 * - Every session that is not `--bare` binds a Unix socket at start, before its first turn,
 *   unless its gate is off (`CLAUDE_CODE_HARBOR_KITE=0`, the `tengu_harbor_kite` flag, default
 *   on, or the `messagingBeyondOwnAgentsDisabled` policy) or it is a restricted or remote
 *   session: `$XDG_RUNTIME_DIR/cc-socks/<pid>.sock`, else `<tmp>/cc-socks/<pid>.sock` (or
 *   `/tmp/cc-socks-<uid>/…` when that path is too long), in a folder of mode 0700 it checks is
 *   the user's own, the socket itself chmod 0600. No setting turns it on: it is on by default.
 * - It sets `CLAUDE_CODE_MESSAGING_SOCKET` (the path) and `CLAUDE_CODE_MESSAGING_TOKEN` (its
 *   "child token", 32 hex digits) in the environment of what it starts: hooks, MCP servers.
 * - A connection sends JSON lines: `{"type":"auth","token":…}` first, then
 *   `{"type":"user","message":{"role":"user","content":"…"}}` (optional `priority`
 *   "now"|"next"|"later", default "next"). The auth line is required only on Windows; a line
 *   that is not complete within the first-line deadline closes the connection.
 * - It answers nothing on the connection. The user line goes through its inbound gate, whose
 *   verdict is accept, hold or refuse: accept queues the text as a prompt (an idle session
 *   starts a turn at once, a busy one after its turn; its UserPromptSubmit hooks run with it);
 *   hold parks it for the user to review ("Held message from another session", Deliver / Deny)
 *   when the setting `crossSessionInbound` is "hold", or the session bypasses permissions and
 *   the sender asserted no mode; refuse drops it (`crossSessionInbound: "refuse"`, or the gate
 *   off). The sender learns of hold and refuse only through a receipt sent to its own inbox
 *   (`from: "uds:<its socket>"`, checked against the peer's pid): a sender without a Claude
 *   inbox, as we are, learns nothing. So we learn "accepted" from our own prompt hook running
 *   (see cli/hook-wait.ts), and take no hook run as hold or refuse.
 * - The model sees the text inside Claude Code's own frame: "Another Claude session sent a
 *   message:\n<text>\n\nThis came from another Claude session — not typed by your user, …".
 */

/** The variables Claude Code puts in its hooks' environment. */
export const INBOX_SOCKET_ENV = "CLAUDE_CODE_MESSAGING_SOCKET";
export const INBOX_TOKEN_ENV = "CLAUDE_CODE_MESSAGING_TOKEN";

/** A session's inbox as its hook learned it. */
export interface ClaudeInbox {
  socket: string;
  token: string;
}

/** Claude Code's sun_path limit (it refuses longer paths itself). */
const MAX_SOCKET_PATH = 104;
const TOKEN_SHAPE = /^[0-9a-f]{32}$/;

/** An inbox of the right shape, or undefined: an absolute path of a socket, a 32-hex token. */
export function inboxOf(socket: unknown, token: unknown): ClaudeInbox | undefined {
  if (typeof socket !== "string" || typeof token !== "string") return undefined;
  if (!isAbsolute(socket) || Buffer.byteLength(socket) > MAX_SOCKET_PATH) return undefined;
  if ([...socket].some((c) => c < " ") || !TOKEN_SHAPE.test(token)) return undefined;
  return { socket, token };
}

/**
 * Why `socket` is not an inbox we may write to, or undefined when it is: it must be a socket
 * (not a link to one), owned by `uid`, in a real folder of `uid`'s that no one else can write
 * to (so nobody can put another socket in its place). Claude Code checks the same of its own
 * folder; we check it again because the path came through a file.
 */
export async function inboxRefusal(socket: string, uid: number): Promise<string | undefined> {
  try {
    const dir = await fsp.lstat(dirname(socket));
    if (!dir.isDirectory()) return "its folder is not a folder (a link?)";
    if (dir.uid !== uid) return `its folder is owned by uid ${dir.uid}`;
    if ((dir.mode & 0o022) !== 0) return "its folder is writable by others";
    const entry = await fsp.lstat(socket);
    if (entry.isSymbolicLink()) return "it is a symbolic link";
    if (!entry.isSocket()) return "it is not a socket";
    if (entry.uid !== uid) return `it is owned by uid ${entry.uid}`;
  } catch (err) {
    return `it cannot be examined (${(err as NodeJS.ErrnoException).code ?? err})`;
  }
  return undefined;
}

/**
 * Writes the auth line and one user line with `text` into the inbox; resolves undefined once
 * Claude Code has taken the connection's lines (it closes its side after ours), else why not
 * (no one listening, a timeout). Says nothing of the gate's verdict: Claude Code answers none.
 */
export function postToInbox(
  inbox: ClaudeInbox,
  text: string,
  timeoutMs = 2_000,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (why: string | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const socket = connect({ path: inbox.socket });
    const timer = setTimeout(() => finish("no answer in time"), timeoutMs);
    socket.on("error", (err: NodeJS.ErrnoException) => finish(err.code ?? err.message));
    socket.on("connect", () => {
      const lines = [
        { type: "auth", token: inbox.token },
        { type: "user", message: { role: "user", content: text } },
      ];
      socket.end(lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
    });
    // Claude Code reads to our end, then ends its side: the lines were taken.
    socket.on("close", (hadError) => finish(hadError ? "the connection failed" : undefined));
    socket.resume();
  });
}

/**
 * Whether Claude Code settings files (their texts; unreadable or absent ones left out) set
 * `crossSessionInbound` to anything but "accept": "hold" would put our notice before the user
 * for review, "refuse" would drop it; an unknown value Claude Code takes as "hold". Then the
 * rewake hook wakes the session instead, at once. Managed settings and a `--settings` file are
 * not read here: there the notice starts no turn, and the rewake hook takes over after
 * {@link INBOX_TURN_MS}.
 */
export function inboundNotAccepted(settings: readonly string[]): boolean {
  return settings.some((text) => {
    try {
      const value = (JSON.parse(text) as { crossSessionInbound?: unknown }).crossSessionInbound;
      return value !== undefined && value !== "accept";
    } catch {
      return false;
    }
  });
}

/** How long a notice written into a session's inbox has to start a turn before the rewake. */
export const INBOX_TURN_MS = 5_000;

/**
 * What the woken session's model reads, inside Claude Code's frame ("Another Claude session
 * sent a message: …"). Fixed text of ours (docs/signatures.md, "What the model sees"): the
 * channel, the number and the sender when it is a valid name, never a title or a body; the
 * message itself is read through chat_read, framed and marked.
 */
export function inboxNotice(message: Message, count: UnreadCount, agent: string): string {
  const unread = count.msgs > 0 ? ` ${describeUnread(count, agent)}.` : "";
  return (
    `agent-chat (not another Claude session: the agent-chat hook of this session): a new ` +
    `message arrived while you were idle: ${message.channel} #${message.seq}` +
    `${fromName(message)}.${unread} Read it with the chat_read tool ` +
    `(or: agent-chat read ${message.channel} --as ${agent}).`
  );
}
