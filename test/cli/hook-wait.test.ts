import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openStore } from "../../src/client/open.js";
import { collect, runCli, startCli, watching } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "../mcp/client.js";

/*
 * `agent-chat hook wait`, Claude Code's async rewake Stop hook, run as Claude Code runs it: the
 * Stop input on stdin, parked until news, exit 2 with the notice on stderr (what Claude Code
 * hands the model as a new turn), exit 0 otherwise.
 */

let root: string;
let state: string;
const cleanups: Array<() => void> = [];
const children: ChildProcess[] = [];

beforeEach(async () => {
  const r = tempDir("agent-chat-wake-");
  const s = tempDir("agent-chat-wake-state-");
  root = r.dir;
  state = s.dir;
  cleanups.push(r.cleanup, s.cleanup);
  await initChannels(root, { review: ["alice", "bob"], ops: ["alice", "carol"] });
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function post(channel: string, from: string, body: string, to?: string): Promise<number> {
  const store = await openStore(root, { watch: false });
  const { seq } = await store.post(channel, to ? { from, body, to } : { from, body });
  await store.close();
  return seq;
}

async function cursor(channel: string, agent: string): Promise<number> {
  const store = await openStore(root, { watch: false });
  const at = await store.cursor(channel, agent);
  await store.close();
  return at;
}

const stopInput = (session = "s1", active = false) => ({
  session_id: session,
  hook_event_name: "Stop",
  stop_hook_active: active,
});

const env = (extra: Record<string, string> = {}) => ({ XDG_STATE_HOME: state, ...extra });

/** Starts `hook wait` and resolves once it is parked (it holds its file watch). */
async function parkWait(args: string[], input: unknown, extra: Record<string, string> = {}) {
  const child = startCli(["hook", "wait", "--as", "bob", ...args], {
    root,
    input: JSON.stringify(input),
    env: env(extra),
    timeoutMs: 30_000,
  });
  children.push(child);
  await watching(child);
  return child;
}

function hook(event: string, input: unknown) {
  return runCli(["hook", event, "--as", "bob", "--format", "claude"], {
    root,
    input: JSON.stringify(input),
    env: env(),
  });
}

describe("agent-chat hook wait", () => {
  it("exits 2 with a notice on stderr when a message for the agent arrives, and moves no cursor", async () => {
    const waiter = await parkWait([], stopInput());
    await post("review", "bob", "bob's own message is no news for bob");
    await post("ops", "alice", "bob is not in ops");
    await post("review", "alice", "for carol only", "carol");
    const seq = await post("review", "alice", "# Deploy?\n\nready when you are", "bob");
    const result = await collect(waiter);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      `not an error: a new agent-chat message arrived while you were idle: review #${seq} from alice. ` +
        "1 unread agent-chat message for bob (review: 1). Read it with the chat_read tool (or: agent-chat read review --as bob).\n",
    );
    expect(await cursor("review", "bob")).toBe(0);
    const read = await runCli(["read", "review", "--as", "bob"], { root });
    expect(read.stdout).toContain("ready when you are");
  });

  it("never tells of the same message twice: the woken turn's Stop parks again, silent until something new", async () => {
    const first = await parkWait([], stopInput());
    await post("review", "alice", "one", "bob");
    expect((await collect(first)).code).toBe(2);
    // The model was told but did not read: its next Stop (stop_hook_active, as after a wake)
    // must not wake it again for the same message, and neither may the next prompt's notice.
    const quiet = await runCli(["hook", "wait", "--as", "bob", "--timeout", "1"], {
      root,
      input: JSON.stringify(stopInput("s1", true)),
      env: env(),
    });
    expect(quiet).toMatchObject({ code: 0, stdout: "", stderr: "" });
    const prompt = await hook("prompt", { session_id: "s1", hook_event_name: "UserPromptSubmit" });
    expect(prompt).toMatchObject({ code: 0, stdout: "" });
    // Something new wakes it again, about the new message.
    const second = await parkWait([], stopInput("s1", true));
    const seq = await post("review", "alice", "two", "bob");
    const woke = await collect(second);
    expect(woke.code).toBe(2);
    expect(woke.stderr).toContain(`review #${seq} from alice`);
    expect(woke.stderr).toContain("2 unread agent-chat messages for bob (review: 2)");
    expect(await cursor("review", "bob")).toBe(0);
  });

  it("wakes at once for a message that came during the turn and nobody told of; not for one already told", async () => {
    await post("review", "alice", "told at session start", "bob");
    const start = await hook("session-start", {
      session_id: "s1",
      hook_event_name: "SessionStart",
    });
    expect(start.stdout).toContain("1 unread");
    const told = await runCli(["hook", "wait", "--as", "bob", "--timeout", "1"], {
      root,
      input: JSON.stringify(stopInput()),
      env: env(),
    });
    expect(told).toMatchObject({ code: 0, stderr: "" });
    const seq = await post("review", "alice", "came mid-turn", "bob");
    const untold = await runCli(["hook", "wait", "--as", "bob"], {
      root,
      input: JSON.stringify(stopInput()),
      env: env(),
    });
    expect(untold.code).toBe(2);
    expect(untold.stderr).toContain(`review #${seq} from alice`);
  });

  it("exits 0, silent, on its own timeout", async () => {
    const started = Date.now();
    const result = await runCli(["hook", "wait", "--as", "bob", "--timeout", "1"], {
      root,
      input: JSON.stringify(stopInput()),
      env: env(),
    });
    expect(result).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("stays silent when the agent started a turn of its own (a prompt after this Stop)", async () => {
    const waiter = await parkWait([], stopInput());
    const prompt = await hook("prompt", { session_id: "s1", hook_event_name: "UserPromptSubmit" });
    expect(prompt).toMatchObject({ code: 0, stdout: "" });
    await post("review", "alice", "during the user's turn", "bob");
    expect(await collect(waiter)).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });

  it("a newer wait of the session takes over: exactly one of two parked waits wakes it", async () => {
    const older = await parkWait([], stopInput());
    const newer = await parkWait([], stopInput());
    await post("review", "alice", "one wake only", "bob");
    const [a, b] = await Promise.all([collect(older), collect(newer)]);
    expect(a).toMatchObject({ code: 0, stderr: "" });
    expect(b.code).toBe(2);
    expect(b.stderr).toContain("review #1 from alice");
  });

  it("ends, silent, when the Claude Code that started it (CLAUDE_PID) is gone", async () => {
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    const waiter = await parkWait([], stopInput(), { CLAUDE_PID: String(gone) });
    expect(await collect(waiter)).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });

  it("ends, silent, when the host our pi extension or OpenCode plugin named (AGENT_CHAT_HOST_PID) is gone", async () => {
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    const waiter = await parkWait([], stopInput(), { AGENT_CHAT_HOST_PID: String(gone) });
    expect(await collect(waiter)).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });

  it("under a one-shot claude -p it exits at once; under -p --input-format stream-json it parks", async () => {
    // Stand-ins for Claude Code whose command lines are what hook wait reads (/proc/PID/cmdline).
    const host = (...args: string[]) => {
      const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", "--", ...args], {
        stdio: "ignore",
      });
      children.push(child);
      return String(child.pid);
    };
    await post("review", "alice", "unread, untold", "bob");
    const oneShot = await runCli(["hook", "wait", "--as", "bob"], {
      root,
      input: JSON.stringify(stopInput()),
      env: env({ CLAUDE_PID: host("-p", "do the thing") }),
    });
    expect(oneShot).toMatchObject({ code: 0, stdout: "", stderr: "" });
    const streaming = await runCli(["hook", "wait", "--as", "bob"], {
      root,
      input: JSON.stringify(stopInput()),
      env: env({ CLAUDE_PID: host("-p", "--input-format", "stream-json") }),
    });
    expect(streaming.code).toBe(2);
    expect(streaming.stderr).toContain("review #1 from alice");
  });

  it("without a session id, only what arrives after it started is news", async () => {
    await post("review", "alice", "old", "bob");
    const waiter = await parkWait([], {});
    const exited = collect(waiter);
    // It takes the channels' last seqs just after its watch is up: a message posted in that
    // instant may count as old, so post until one wakes it; "old" must never be the news.
    let result: Awaited<typeof exited> | undefined;
    for (let i = 0; i < 5 && !result; i++) {
      await post("review", "alice", `new ${i}`, "bob");
      result = await Promise.race([exited, delay(2000).then(() => undefined)]);
    }
    expect(result?.code).toBe(2);
    expect(result?.stderr).toMatch(/review #[2-6] from alice\. /);
  });

  it("a bad --timeout or no identity is said on stderr and exits 0 (a hook never fails its host)", async () => {
    const bad = await runCli(["hook", "wait", "--as", "bob", "--timeout", "soon"], {
      root,
      input: "{}",
      env: env(),
    });
    expect(bad).toMatchObject({ code: 0, stdout: "" });
    expect(bad.stderr).toContain("--timeout must be whole seconds");
    const nobody = await runCli(["hook", "wait"], { root, input: "{}", env: env() });
    expect(nobody.code).toBe(0);
    expect(nobody.stderr).toContain("--as NAME is required");
    // init makes .cursors/ (as chat.py 0.7 does); no cursor may be in it.
    expect(readdirSync(join(root, "review", ".cursors"))).toEqual([]);
  });

  it("Codex and Gemini CLI (no supported wake): the next prompt's notice carries what arrived while idle, once", async () => {
    const cases = [
      { format: "codex", event: "UserPromptSubmit", session: "codex-1" },
      { format: "gemini", event: "BeforeAgent", session: "gemini-1" },
    ];
    for (const { format, event, session } of cases) {
      const prompt = (text: string) =>
        runCli(["hook", "prompt", "--as", "bob", "--format", format], {
          root,
          input: JSON.stringify({ session_id: session, hook_event_name: event, prompt: text }),
          env: env(),
        });
      const first = await prompt("start");
      const before = first.stdout === "" ? 0 : Number(/(\d+) unread/.exec(first.stdout)![1]);
      // Idle: two messages arrive; the next prompt tells of them, the one after says nothing.
      await post("review", "alice", `while ${format} was idle`, "bob");
      await post("review", "alice", `and again for ${format}`);
      const next = await prompt("anything new?");
      expect(JSON.parse(next.stdout).hookSpecificOutput, format).toEqual({
        hookEventName: event,
        additionalContext: expect.stringContaining(
          `${before + 2} unread agent-chat messages for bob (review: ${before + 2})`,
        ),
      });
      expect((await prompt("and now?")).stdout, format).toBe("");
    }
    expect(await cursor("review", "bob")).toBe(0);
  });
});

/*
 * Claude Code's inbox socket (src/hosts/claude-inbox.ts), played by a Unix socket server of the
 * test's that keeps what it is sent and, like Claude Code, answers nothing and ends its side
 * after ours. What Claude Code then does is played by running our prompt hook (it runs for the
 * turn an accepted message starts) or by running nothing (held or refused).
 */
describe("agent-chat hook wait, through Claude Code's inbox socket", () => {
  const TOKEN = "0123456789abcdef0123456789abcdef";

  interface FakeInbox {
    socket: string;
    dir: string;
    /** Each connection's lines, as JSON. */
    received: unknown[][];
    close(): Promise<void>;
  }

  async function fakeInbox(): Promise<FakeInbox> {
    const d = tempDir("agent-chat-inbox-");
    cleanups.push(d.cleanup);
    const dir = join(d.dir, "cc-socks");
    mkdirSync(dir, { mode: 0o700 });
    const socket = join(dir, "4242.sock");
    const received: unknown[][] = [];
    const server = createServer({ allowHalfOpen: true }, (conn) => {
      let text = "";
      conn.setEncoding("utf8").on("data", (d: string) => {
        text += d;
      });
      conn.on("end", () => {
        received.push(
          text
            .split("\n")
            .filter((l) => l !== "")
            .map((l) => JSON.parse(l)),
        );
        conn.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
    cleanups.push(() => void server.close());
    return { socket, dir, received, close };
  }

  /** The session-start hook, run by Claude Code with the inbox in its environment. */
  const sessionStart = (socket: string, token = TOKEN) =>
    runCli(["hook", "session-start", "--as", "bob", "--format", "claude"], {
      root,
      input: JSON.stringify({
        session_id: "s1",
        hook_event_name: "SessionStart",
        source: "startup",
      }),
      env: env({ CLAUDE_CODE_MESSAGING_SOCKET: socket, CLAUDE_CODE_MESSAGING_TOKEN: token }),
    });

  const records = () =>
    readdirSync(join(state, "agent-chat", "hook-sessions")).filter((n) => n.endsWith(".inbox"));
  const recordPath = () => join(state, "agent-chat", "hook-sessions", records()[0]!);

  const notice = (seq: number) =>
    `agent-chat (not another Claude session: the agent-chat hook of this session): a new message arrived while you were idle: review #${seq} from alice. 1 unread agent-chat message for bob (review: 1). Read it with the chat_read tool (or: agent-chat read review --as bob).`;

  it("the session's hooks keep its socket and token in the user's private state (0600), never in the root", async () => {
    const inbox = await fakeInbox();
    expect((await sessionStart(inbox.socket)).code).toBe(0);
    expect(records()).toHaveLength(1);
    expect(statSync(recordPath()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(recordPath(), "utf8"))).toEqual({
      socket: inbox.socket,
      token: TOKEN,
    });
    const inRoot = readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(join(e.parentPath, e.name), "utf8"));
    expect(inRoot.some((text) => text.includes(TOKEN))).toBe(false);
    // A token of any other shape is not kept.
    const other = tempDir("agent-chat-wake-state-");
    cleanups.push(other.cleanup);
    await runCli(["hook", "session-start", "--as", "bob", "--format", "claude"], {
      root,
      input: JSON.stringify({ session_id: "s2", hook_event_name: "SessionStart" }),
      env: {
        XDG_STATE_HOME: other.dir,
        CLAUDE_CODE_MESSAGING_SOCKET: inbox.socket,
        CLAUDE_CODE_MESSAGING_TOKEN: "not a token",
      },
    });
    // Nor by another tool's hooks, which inherit the variables when started from Claude Code.
    await runCli(["hook", "prompt", "--as", "bob", "--format", "codex"], {
      root,
      input: JSON.stringify({ session_id: "s3", hook_event_name: "UserPromptSubmit" }),
      env: {
        XDG_STATE_HOME: other.dir,
        CLAUDE_CODE_MESSAGING_SOCKET: inbox.socket,
        CLAUDE_CODE_MESSAGING_TOKEN: TOKEN,
      },
    });
    const kept = join(other.dir, "agent-chat", "hook-sessions");
    expect(existsSync(kept) ? readdirSync(kept).filter((n) => n.endsWith(".inbox")) : []).toEqual(
      [],
    );
  });

  it("writes our fixed notice into the inbox (auth line, then a user frame) and exits 0 once the woken turn's prompt hook runs", async () => {
    const inbox = await fakeInbox();
    await sessionStart(inbox.socket);
    const waiter = await parkWait([], stopInput());
    const seq = await post("review", "alice", "# Deploy?\n\nrm -rf ~ first", "bob");
    await vi.waitFor(() => expect(inbox.received).toHaveLength(1), { timeout: 10_000 });
    expect(inbox.received[0]).toEqual([
      { type: "auth", token: TOKEN },
      { type: "user", message: { role: "user", content: notice(seq) } },
    ]);
    // Claude Code accepted it: the turn it starts runs our prompt hook.
    await hook("prompt", { session_id: "s1", hook_event_name: "UserPromptSubmit" });
    expect(await collect(waiter)).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect(await cursor("review", "bob")).toBe(0);
  });

  it("falls back to the rewake exit when no turn starts (the notice held or refused)", async () => {
    const inbox = await fakeInbox();
    await sessionStart(inbox.socket);
    const waiter = await parkWait([], stopInput());
    const seq = await post("review", "alice", "held", "bob");
    const result = await collect(waiter);
    expect(inbox.received).toHaveLength(1);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `not an error: a new agent-chat message arrived while you were idle: review #${seq} from alice.`,
    );
  }, 20_000);

  /** A Claude Code settings file with `crossSessionInbound`; the hook's environment naming it. */
  const settingsSay = (value: string, where: "user" | "project"): Record<string, string> => {
    const d = tempDir("agent-chat-claude-settings-");
    cleanups.push(d.cleanup);
    const dir = where === "user" ? d.dir : join(d.dir, ".claude");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, where === "user" ? "settings.json" : "settings.local.json");
    writeFileSync(file, JSON.stringify({ crossSessionInbound: value }));
    return where === "user" ? { CLAUDE_CONFIG_DIR: d.dir } : { CLAUDE_PROJECT_DIR: d.dir };
  };

  const untouched: {
    why: string;
    input: unknown;
    env?: () => Record<string, string>;
    spoil: (inbox: FakeInbox) => Promise<void>;
  }[] = [
    {
      why: "the session bypasses permissions (it would hold the notice)",
      input: { ...stopInput(), permission_mode: "bypassPermissions" },
      spoil: async () => {},
    },
    {
      why: "the user's settings refuse other sessions' messages (crossSessionInbound \"refuse\")",
      input: stopInput(),
      env: () => settingsSay("refuse", "user"),
      spoil: async () => {},
    },
    {
      why: 'the project\'s local settings hold them for review (crossSessionInbound "hold")',
      input: stopInput(),
      env: () => settingsSay("hold", "project"),
      spoil: async () => {},
    },
    {
      why: "the project's settings file is a FIFO (a plain read would block the wake for ever)",
      input: stopInput(),
      env: () => {
        const d = tempDir("agent-chat-claude-settings-");
        cleanups.push(d.cleanup);
        mkdirSync(join(d.dir, ".claude"));
        spawnSync("mkfifo", [join(d.dir, ".claude", "settings.json")]);
        return { CLAUDE_PROJECT_DIR: d.dir };
      },
      spoil: async () => {},
    },
    {
      why: "the project's settings file is a link, even to one that accepts (a link is not followed)",
      input: stopInput(),
      env: () => {
        const accepting = settingsSay("accept", "user").CLAUDE_CONFIG_DIR!;
        const d = tempDir("agent-chat-claude-settings-");
        cleanups.push(d.cleanup);
        mkdirSync(join(d.dir, ".claude"));
        symlinkSync(join(accepting, "settings.json"), join(d.dir, ".claude", "settings.json"));
        return { CLAUDE_PROJECT_DIR: d.dir };
      },
      spoil: async () => {},
    },
    {
      why: "the wait is our pi extension's or OpenCode plugin's (AGENT_CHAT_HOST_PID), started from a Claude Code shell",
      input: stopInput(),
      env: () => ({ AGENT_CHAT_HOST_PID: String(process.pid) }),
      spoil: async () => {},
    },
    {
      why: "the socket is gone",
      input: stopInput(),
      spoil: (inbox: FakeInbox) => inbox.close(),
    },
    {
      why: "the recorded file is readable by others",
      input: stopInput(),
      spoil: async () => chmodSync(recordPath(), 0o644),
    },
    {
      why: "the socket's folder is writable by others",
      input: stopInput(),
      spoil: async (inbox: FakeInbox) => chmodSync(inbox.dir, 0o777),
    },
    {
      why: "the recorded socket is a link",
      input: stopInput(),
      spoil: async (inbox: FakeInbox) => {
        const link = join(inbox.dir, "link.sock");
        symlinkSync(inbox.socket, link);
        await sessionStart(link);
      },
    },
    {
      why: "the recorded file is a link to another file",
      input: stopInput(),
      spoil: async (inbox: FakeInbox) => {
        const elsewhere = join(inbox.dir, "elsewhere.json");
        const record = recordPath();
        writeFileSync(elsewhere, readFileSync(record), { mode: 0o600 });
        rmSync(record);
        symlinkSync(elsewhere, record);
      },
    },
  ];
  it.each(untouched)(
    "does not write into the inbox, and wakes by the rewake exit, when $why",
    async ({ input, env: extra, spoil }) => {
      const inbox = await fakeInbox();
      await sessionStart(inbox.socket);
      await spoil(inbox);
      const waiter = await parkWait([], input, extra?.() ?? {});
      await post("review", "alice", "news", "bob");
      const result = await collect(waiter);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("not an error: a new agent-chat message arrived");
      expect(inbox.received).toEqual([]);
    },
  );

  it.skipIf(process.getuid?.() !== 0)(
    "does not write into a socket whose folder is another user's (run as root: chown)",
    async () => {
      const inbox = await fakeInbox();
      await sessionStart(inbox.socket);
      chownSync(inbox.dir, 4321, 4321);
      const waiter = await parkWait([], stopInput());
      await post("review", "alice", "news", "bob");
      expect((await collect(waiter)).code).toBe(2);
      expect(inbox.received).toEqual([]);
    },
  );
});
