import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "./client.js";

let root: string;
let cleanup: () => void;
let state: string;
let cleanupState: () => void;

beforeEach(async () => {
  ({ dir: root, cleanup } = tempDir("agent-chat-hook-"));
  ({ dir: state, cleanup: cleanupState } = tempDir("agent-chat-hook-state-"));
  await initChannels(root, { review: ["alice", "bob"], ops: ["alice"] });
});
afterEach(() => {
  cleanup();
  cleanupState();
});

async function post(channel: string, from: string, body: string, to?: string): Promise<void> {
  const store = await openStore(root, { watch: false });
  await store.post(channel, to ? { from, body, to } : { from, body });
  await store.close();
}

/** Runs the hook as the host tools do: the event JSON on stdin, stdout read back. */
function hook(args: string[], stdin?: unknown) {
  const input =
    stdin === undefined ? "" : typeof stdin === "string" ? stdin : JSON.stringify(stdin);
  return runCli(["hook", ...args], { root, input, env: { XDG_STATE_HOME: state } });
}

const claudeSession = {
  session_id: "abc",
  transcript_path: "/tmp/t.jsonl",
  cwd: "/tmp",
  hook_event_name: "SessionStart",
  source: "startup",
};

describe("agent-chat hook", () => {
  it("is silent and exits 0 when nothing is unread, for every event and format", async () => {
    await post("review", "bob", "bob's own message does not count for bob");
    await post("ops", "alice", "bob is not a member of ops");
    const runs = ["session-start", "prompt", "stop"].flatMap((event) =>
      ["claude", "codex", "gemini", "qwen", "pi", "copilot", "opencode"].map(async (format) => {
        const r = await hook([event, "--as", "bob", "--format", format], claudeSession);
        expect(r, `${event} ${format}`).toMatchObject({ code: 0, stdout: "", stderr: "" });
      }),
    );
    await Promise.all(runs);
  });

  it("Claude Code: SessionStart and UserPromptSubmit print one plain line of context", async () => {
    await post("review", "alice", "first");
    await post("review", "alice", "second", "bob");
    const start = await hook(["session-start", "--as", "bob", "--format", "claude"], claudeSession);
    expect(start.code).toBe(0);
    expect(start.stdout).toBe(
      "2 unread agent-chat messages for bob (review: 2). Read them with the chat_read tool (or: agent-chat read review --as bob).\n",
    );
    const prompt = await hook(["prompt", "--as", "bob"], {
      ...claudeSession,
      session_id: "another session",
      hook_event_name: "UserPromptSubmit",
      prompt: "carry on",
    });
    expect(prompt.stdout).toBe(start.stdout);
  });

  it("says a thing once per session: not again on the first prompt, again only for a new message", async () => {
    await post("review", "alice", "first");
    const prompt = { ...claudeSession, hook_event_name: "UserPromptSubmit", prompt: "go" };
    const start = await hook(["session-start", "--as", "bob", "--format", "claude"], claudeSession);
    expect(start.stdout).toContain("1 unread agent-chat message for bob (review: 1)");
    for (let i = 0; i < 2; i++) {
      const again = await hook(["prompt", "--as", "bob", "--format", "claude"], prompt);
      expect(again).toMatchObject({ code: 0, stdout: "", stderr: "" });
    }
    // The user at stop has not been told yet; then not again either.
    const stop = { ...claudeSession, hook_event_name: "Stop" };
    expect((await hook(["stop", "--as", "bob"], stop)).stdout).toContain("1 unread");
    expect((await hook(["stop", "--as", "bob"], stop)).stdout).toBe("");
    // Another session of the same agent is told on its own.
    const other = await hook(["prompt", "--as", "bob"], { ...prompt, session_id: "xyz" });
    expect(other.stdout).toContain("1 unread");

    await post("review", "alice", "second");
    const told = await hook(["prompt", "--as", "bob", "--format", "claude"], prompt);
    expect(told.stdout).toContain("2 unread agent-chat messages for bob (review: 2)");
    expect((await hook(["prompt", "--as", "bob"], prompt)).stdout).toBe("");
    // Reading some is no news.
    await runCli(["read", "review", "--as", "bob", "--limit", "1"], { root });
    expect((await hook(["prompt", "--as", "bob"], prompt)).stdout).toBe("");
    // /clear empties the model's context: the next session start says it again.
    const cleared = await hook(["session-start", "--as", "bob"], {
      ...claudeSession,
      source: "clear",
    });
    expect(cleared.stdout).toContain("unread agent-chat message");
    // The session state is kept outside the root (inside: only presence, shared by design).
    expect(readdirSync(join(state, "agent-chat", "hook-sessions")).length).toBe(2);
    expect(readdirSync(root).sort()).toEqual([".presence", "ops", "review"]);
  });

  it("Claude Code: Stop tells the user, or with --block makes the agent read (never twice)", async () => {
    await post("review", "alice", "are you done?");
    const stopInput = { ...claudeSession, hook_event_name: "Stop", stop_hook_active: false };
    const told = await hook(["stop", "--as", "bob", "--format", "claude"], stopInput);
    expect(JSON.parse(told.stdout)).toEqual({
      systemMessage: expect.stringContaining("1 unread agent-chat message for bob (review: 1)"),
    });
    const blockInput = { ...stopInput, session_id: "blocking session" };
    const blocked = await hook(["stop", "--as", "bob", "--block"], blockInput);
    expect(JSON.parse(blocked.stdout)).toEqual({
      decision: "block",
      reason: expect.stringContaining("chat_read"),
    });
    // Already continuing because of a stop hook: told, never blocked again.
    const again = await hook(["stop", "--as", "bob", "--block"], {
      ...stopInput,
      session_id: "a third session",
      stop_hook_active: true,
    });
    expect(JSON.parse(again.stdout)).toHaveProperty("systemMessage");
    expect(again.code).toBe(0);
    // In the session that was blocked, nothing new: nothing said.
    const same = await hook(["stop", "--as", "bob", "--block"], {
      ...blockInput,
      stop_hook_active: true,
    });
    expect(same).toMatchObject({ code: 0, stdout: "" });
  });

  it("Codex and Gemini CLI get JSON with hookSpecificOutput.additionalContext", async () => {
    await post("review", "alice", "hello");
    const codex = await hook(["prompt", "--as", "bob", "--format", "codex"], {
      hook_event_name: "UserPromptSubmit",
    });
    expect(JSON.parse(codex.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "UserPromptSubmit",
        additionalContext: expect.stringContaining("review: 1"),
      },
    });
    // Without --format the form follows the event name Gemini CLI sends.
    const gemini = await hook(["prompt", "--as", "bob"], {
      hook_event_name: "BeforeAgent",
      prompt: "x",
    });
    expect(JSON.parse(gemini.stdout).hookSpecificOutput.hookEventName).toBe("BeforeAgent");
    const geminiStop = await hook(["stop", "--as", "bob", "--block"], {
      hook_event_name: "AfterAgent",
    });
    expect(JSON.parse(geminiStop.stdout)).toMatchObject({ decision: "deny" });
  });

  it("Qwen Code gets plain context at the prompt (as Claude Code does) and JSON at stop", async () => {
    await post("review", "alice", "hello");
    const prompt = await hook(["prompt", "--as", "bob", "--format", "qwen"], {
      hook_event_name: "UserPromptSubmit",
    });
    expect(prompt.stdout).toMatch(/^1 unread agent-chat message for bob \(review: 1\)\. Read them/);
    const stop = await hook(["stop", "--as", "bob", "--format", "qwen", "--block"], {
      hook_event_name: "Stop",
    });
    expect(JSON.parse(stop.stdout)).toMatchObject({ decision: "block" });
  });

  it("pi (through the extension setup writes) gets plain context at the prompt and JSON at stop", async () => {
    await post("review", "alice", "hello");
    const prompt = await hook(["prompt", "--as", "bob", "--format", "pi"], {
      hook_event_name: "UserPromptSubmit",
    });
    expect(prompt.stdout).toMatch(/^1 unread agent-chat message for bob \(review: 1\)\. Read them/);
    const stop = await hook(["stop", "--as", "bob", "--format", "pi"], { hook_event_name: "Stop" });
    expect(JSON.parse(stop.stdout)).toMatchObject({
      systemMessage: expect.stringContaining("1 unread"),
    });
  });

  it("OpenCode (our plugin) gets plain text at the prompt and JSON at stop", async () => {
    await post("review", "alice", "hello");
    const prompt = await hook(["prompt", "--as", "bob", "--format", "opencode"], {
      hook_event_name: "chat.message",
      session_id: "ses_1",
    });
    expect(prompt.stdout).toMatch(/^1 unread agent-chat message for bob \(review: 1\)\. Read them/);
    const stop = await hook(["stop", "--as", "bob", "--format", "opencode"], {
      hook_event_name: "session.idle",
      session_id: "ses_1",
    });
    expect(JSON.parse(stop.stdout)).toMatchObject({
      systemMessage: expect.stringContaining("1 unread"),
    });
  });

  it("Copilot CLI gets JSON with a top-level additionalContext at the prompt, and a decision at stop", async () => {
    await post("review", "alice", "hello");
    const prompt = await hook(["prompt", "--as", "bob", "--format", "copilot"], {
      hook_event_name: "UserPromptSubmit",
    });
    expect(Object.keys(JSON.parse(prompt.stdout))).toEqual(["additionalContext"]);
    expect(JSON.parse(prompt.stdout).additionalContext).toMatch(
      /^1 unread agent-chat message for bob \(review: 1\)\. Read them/,
    );
    const stop = await hook(["stop", "--as", "bob", "--format", "copilot", "--block"], {
      hook_event_name: "Stop",
    });
    expect(JSON.parse(stop.stdout)).toMatchObject({ decision: "block" });
  });

  it("tolerates missing or invalid stdin and a missing root; exits 0 even when misconfigured", async () => {
    await post("review", "alice", "hello");
    const none = await hook(["session-start", "--as", "bob"]);
    expect(none).toMatchObject({ code: 0 });
    expect(none.stdout).toContain("1 unread");
    const garbage = await hook(["session-start", "--as", "bob"], "{not json");
    expect(garbage.stdout).toBe(none.stdout);
    const array = await hook(["session-start", "--as", "bob"], "[1,2]");
    expect(array.stdout).toBe(none.stdout);

    const noRoot = await runCli(["hook", "prompt", "--as", "bob"], {
      root: join(root, "does-not-exist"),
      input: "{}",
    });
    expect(noRoot).toMatchObject({ code: 0, stdout: "" });
    const nameless = await hook(["session-start"], "{}");
    expect(nameless).toMatchObject({ code: 0, stdout: "" });
    expect(nameless.stderr).toContain("--as NAME is required");
    const badEvent = await hook(["finish", "--as", "bob"], "{}");
    expect(badEvent).toMatchObject({ code: 0, stdout: "" });
    expect(badEvent.stderr).toContain("session-start, prompt, stop");
  });

  it("without an identity, as chat.py's hooks: quiet, but for a session start on a root with channels", async () => {
    await post("review", "alice", "hello", "bob");
    for (const event of ["prompt", "stop"]) {
      const r = await hook([event], claudeSession);
      expect(r, event).toMatchObject({ code: 0, stdout: "", stderr: "" });
    }
    const start = await hook(["session-start"], claudeSession);
    expect(start).toMatchObject({ code: 0, stdout: "" });
    expect(start.stderr).toContain("--as NAME is required");
    const noRoot = await runCli(["hook", "session-start"], {
      root: join(root, "does-not-exist"),
      input: "{}",
      env: { XDG_STATE_HOME: state },
    });
    expect(noRoot).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });

  it("counts only the channels in AGENT_CHAT_CHANNELS; a name that is no channel hides none", async () => {
    await post("review", "alice", "hello", "bob");
    const run = (channels: string) =>
      runCli(["hook", "prompt", "--as", "bob"], {
        root,
        input: "{}",
        env: { XDG_STATE_HOME: state, AGENT_CHAT_CHANNELS: channels },
      });
    expect(await run("ops")).toMatchObject({ code: 0, stdout: "", stderr: "" });
    const listed = await run(`../invalid,${"a".repeat(256)}, review`);
    expect(listed).toMatchObject({ code: 0, stderr: "" });
    expect(listed.stdout).toContain("(review: 1)");
    expect((await run("")).stdout).toBe(listed.stdout);
  });

  it("lists a few channels and counts the rest, so that many channels keep a notice short", async () => {
    const names = Array.from({ length: 20 }, (_, i) => `channel-${String(i).padStart(2, "0")}`);
    await initChannels(root, Object.fromEntries(names.map((name) => [name, []])));
    for (const name of names) await post(name, "alice", "hello", "bob");
    const r = await hook(["stop", "--as", "bob", "--format", "claude"], "{}");
    const { systemMessage } = JSON.parse(r.stdout) as { systemMessage: string };
    expect(systemMessage).toContain(
      "20 unread agent-chat messages for bob (channel-00: 1, channel-01: 1, channel-02: 1, channel-03: 1, … 16 more channels)",
    );
    expect(r.stdout.length).toBeLessThanOrEqual(300);
  });

  it("never moves a cursor", async () => {
    await post("review", "alice", "one");
    for (let i = 0; i < 3; i++) {
      const r = await hook(["prompt", "--as", "bob"], "{}");
      expect(r.stdout).toContain("1 unread");
    }
    // init makes .cursors/ (as chat.py 0.7 does); no cursor of bob's may be in it.
    expect(readdirSync(join(root, "review", ".cursors"))).toEqual([]);
    const read = await runCli(["read", "review", "--as", "bob"], { root });
    expect(read.stdout).toContain("one");
    expect((await hook(["prompt", "--as", "bob"], "{}")).stdout).toBe("");
  });

  it("the fast path and the full CLI print the same notice; the full CLI explains bad lines", async () => {
    await post("review", "alice", "hello");
    const fast = await hook(["prompt", "--as", "bob", "--format", "codex"], "{}");
    // A global option the fast path does not take sends the same hook through the full CLI.
    const full = await runCli(
      ["--max-body", "1000", "hook", "prompt", "--as", "bob", "--format", "codex"],
      { root, input: "{}" },
    );
    expect(fast).toMatchObject({ code: 0 });
    expect(fast.stdout).toContain("1 unread");
    expect(full.stdout).toBe(fast.stdout);
    const help = await hook(["--help"]);
    expect(help).toMatchObject({ code: 0 });
    expect(help.stdout).toContain("--block");
    const unknown = await hook(["prompt", "--as", "bob", "--bogus"], "{}");
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toContain("--bogus");
  });

  it("loads neither the MCP SDK nor zod: not the hook's bundle, not the CLI's start-up chunks", () => {
    const dist = dirname(CLI);
    const hookBundle = readFileSync(join(dist, "hook.cjs"), "utf8");
    expect(hookBundle).not.toMatch(/@modelcontextprotocol|ZodError/);
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      expect(text, file).not.toMatch(/from\s*"(@modelcontextprotocol|zod)/);
      for (const m of text.matchAll(/(?:^|\n)import\s[^;]*?from\s*"(\.[^"]+)"/g)) {
        visit(join(dirname(file), m[1]!));
      }
    };
    visit(join(dist, "main.js"));
    expect(seen.size).toBeGreaterThan(3);
    const chunks = readdirSync(join(dist, "chunks"));
    const lazy = chunks.filter((c) =>
      readFileSync(join(dist, "chunks", c), "utf8").includes("@modelcontextprotocol/sdk"),
    );
    expect(lazy.length).toBeGreaterThan(0);
    for (const chunk of lazy) expect(seen.has(join(dist, "chunks", chunk))).toBe(false);
  });
});
