import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HOSTS } from "../../src/hosts/index.js";
import { missingReason, skipName } from "../helpers/tools.js";
import { type ModelStub, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";
import {
  claudeStandIn,
  codexStandIn,
  copilotStandIn,
  geminiStandIn,
  opencodeStandIn,
  piStandIn,
  qwenStandIn,
} from "./stand-in-config.js";
import { hasTmux, startTerminal, type Terminal } from "./terminal.js";
import { stopCodexDaemon } from "./wake-command.js";

/*
 * The first run a user meets, in each real tool: a fresh HOME and a fresh git repository,
 * `agent-chat setup TOOL --as alice --write`, then the tool started in a terminal (tmux), its own
 * first-run questions answered by keystroke as they come on screen, and one prompt. The stand-in
 * model then calls chat_channels, chat_post and chat_read: each must run with no approval asked
 * and hand the footer back to the model. After it, `agent-chat doctor` (no --as, no --root)
 * passes and `git status` offers no file that names alice. No step of the tool is skipped by
 * a flag or a hand-written setting. The questions answered are the host's `profile.asks`, which
 * docs/first-run.md's table lists (scripts/harness-tables.ts).
 */

// Without tmux these skip, saying so; in CI (CI=true) they run and fail (startTerminal throws).
const reason = missingReason("tmux", hasTmux(), "apt-get install tmux");
/** A tool's whole first run, on a loaded machine: start-up, questions, a restart, a turn. */
const FIRST_RUN_MS = 300_000;

const PROMPT = "Check the chat";
const DONE = "All done.";

let sandbox: Sandbox;
let stub: ModelStub;
let terminal: Terminal | undefined;
/** The first-run questions the tool put to the user, as they were answered. */
let asked: string[];

beforeEach(async () => {
  asked = [];
  sandbox = makeSandbox("agent-chat-first-run-");
  execFileSync("git", ["init", "-q"], { cwd: sandbox.project });
  await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
  await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
  stub = await startModelStub({
    calls: [
      { toolSuffix: "chat_channels", args: {} },
      { toolSuffix: "chat_post", args: { channel: "general", body: "hello from alice" } },
      { toolSuffix: "chat_read", args: { channel: "general" } },
    ],
    text: DONE,
  });
});
afterEach(async () => {
  await terminal?.close();
  terminal = undefined;
  await stub.close();
  sandbox.cleanup();
});

/** What every tool's first run must end with, whatever the tool. */
async function expectCallsRan(tool: string, env: Record<string, string>): Promise<void> {
  // It asked what its profile says (and the docs' table), no more and no fewer.
  expect(asked).toEqual(HOSTS.find((h) => h.tool === tool)!.profile.asks);
  const messages = await sandbox.messages("general");
  expect(messages.map((m) => `${m.from}: ${m.body}`)).toEqual([
    "bob: hi",
    "alice: hello from alice",
  ]);
  // The three results the model got back, in order, each with the unread footer.
  const results = toolResults(stub.requests.at(-1)!.body);
  expect(results).toHaveLength(3);
  expect(results[0]).toMatch(/general · 1 unread/);
  expect(results[1]).toContain("Posted #2 to general.");
  expect(results[2]).toMatch(/bob[\s\S]*hi/);
  for (const result of results) expect(result).toMatch(/<agent-chat>\{\\?"chat\\?":/);
  // The hooks ran too: bob's message was told to the model before it read it.
  expect(stub.requests.some((r) => r.body.includes("1 unread agent-chat message for alice"))).toBe(
    true,
  );

  // As the user runs it after setup: no --as, no --root, in the project folder.
  const doctor = await runTool(sandbox, "agent-chat", ["doctor"], { env });
  expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
  expect(doctor.stdout).toMatch(/^ok {4}identity: alice \(from /m);

  // `git add .` would take no file that names the agent.
  const status = execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], {
    cwd: sandbox.project,
    encoding: "utf8",
  });
  const offered = status
    .split("\n")
    .filter(Boolean)
    .map((line) => line.slice(3));
  for (const path of offered) {
    expect(readFileSync(join(sandbox.project, path), "utf8"), path).not.toContain("alice");
  }
}

/** The screen with `want` on it and none of `unless` (a question still up after its answer). */
const without = (unless: string, want: string) =>
  new RegExp(`^(?![\\s\\S]*${unless})[\\s\\S]*${want}`);

describe.skipIf(reason !== undefined)("first run in the real tools, after setup --write", () => {
  it(
    skipName(
      "Claude Code: theme, security notes, trust folder; then the chat tools run unasked",
      reason,
    ),
    async () => {
      const setup = await sandbox.agentChat(["setup", "claude-code", "--as", "alice", "--write"]);
      expect(setup.code, setup.stderr).toBe(0);
      const env = claudeStandIn(sandbox, stub.url, { firstRun: true });
      let term = startTerminal(sandbox, [toolBinary("claude")], env);
      terminal = term;
      await term.waitFor(/Choose the text style/);
      asked.push("theme");
      await term.press("Enter", /Security notes:[\s\S]*Press Enter to continue/);
      asked.push("security notes");
      // The trust question names what setup pre-approved: the six tools, nothing else.
      const trust = await term.press("Enter", /Yes, I trust this folder/);
      asked.push("trust this folder");
      expect(trust).toMatch(/pre-approves 6 tool permissions in \.claude\/settings\.local\.json/);
      expect(trust).not.toContain("chat_workspace");
      // An answer Claude Code took as "No, exit" ends it; as it says, run claude again (the
      // theme and the security notes are not asked again).
      for (let start = 1; !(await trustClaudeFolder(term)); start++) {
        if (start === 3) throw new Error(`claude exited untrusted 3 times:\n${term.screen()}`);
        await term.close();
        term = startTerminal(sandbox, [toolBinary("claude")], env);
        terminal = term;
        await term.waitFor(/Yes, I trust this folder/);
      }
      // Claude Code connects the server in the background; a prompt sent before that goes to
      // the model without the tools. /mcp shows when it is up.
      await term.type("/mcp", /❯ \/mcp/);
      // Not "MCP servers": the slash-command menu says "Manage MCP servers" before Enter.
      await term.press("Enter", /Enter to view · Esc to close/);
      await term.waitFor(/✔ agent-chat\s+\d+ tools/, { refuse: /✘ agent-chat|failed/ });
      await term.press("Escape", without("MCP servers", "shift\\+tab to cycle"));
      await term.type(PROMPT, new RegExp(`❯\\s+${PROMPT}`));
      await term.press("Enter", new RegExp(`●\\s+${DONE}`), {
        refuse: /Do you want to proceed|don't ask again|Permission denied/,
      });
      // Listed up front: the model saw the tools without searching for them.
      expect(stub.requests[0]!.body).toContain('"name":"mcp__agent-chat__chat_channels"');
      await expectCallsRan("claude-code", env);
    },
    FIRST_RUN_MS,
  );

  it(
    skipName("Codex: trust this folder, review hooks; then the chat tools run unasked", reason),
    async () => {
      // The user's own Codex config (the stand-in as its model provider), nothing trusted.
      const env = codexStandIn(sandbox, stub.url, { trusted: false });
      const setup = await runTool(
        sandbox,
        "agent-chat",
        ["--root", sandbox.root, "setup", "codex", "--as", "alice", "--write"],
        { env },
      );
      expect(setup.code, setup.stderr).toBe(0);
      const term = startTerminal(sandbox, [toolBinary("codex")], env);
      terminal = term;
      try {
        await term.waitFor(/Ask Codex to do anything/);
        // Codex asks its questions once the first prompt is sent, and keeps the prompt.
        await term.type(PROMPT, new RegExp(`›\\s+${PROMPT}`));
        await term.press("Enter", /Trust this folder\?[\s\S]*1\. Trust and continue/);
        asked.push("trust this folder");
        await term.press("Enter", /Hooks need review[\s\S]*2\. Trust all and continue/);
        asked.push("review hooks");
        await term.press("2", /› 2\. Trust all and continue/);
        await term.press("Enter", without("Hooks need review", `›\\s+${PROMPT}`));
        const done = await term.press("Enter", new RegExp(`•\\s+${DONE}`), {
          refuse: /Allow|approve|Approve|Would you like/,
        });
        expect(done).toMatch(/Called agent-chat\.chat_channels[\s\S]*Called agent-chat\.chat_post/);
        await expectCallsRan("codex", env);
        // Hooks trusted in the TUI run under `codex exec` too (no --dangerously-bypass-hook-trust).
        await sandbox.agentChat([
          "post",
          "general",
          "--from",
          "bob",
          "--to",
          "alice",
          "--body",
          "more",
        ]);
        const seen = stub.requests.length;
        const exec = await runTool(sandbox, toolBinary("codex"), ["exec", "Anything new?"], {
          env,
        });
        expect(exec.code, exec.stderr).toBe(0);
        expect(stub.requests[seen]?.body).toContain(
          "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool",
        );
      } finally {
        await stopCodexDaemon(sandbox, env);
      }
    },
    FIRST_RUN_MS,
  );

  it(
    skipName("Gemini CLI: trust folder (it restarts); then the chat tools run unasked", reason),
    async () => {
      // The user's own settings: an API key (the stand-in is its base URL).
      const env = geminiStandIn(sandbox, stub.url, { relaunch: true });
      const setup = await sandbox.agentChat(["setup", "gemini", "--as", "alice", "--write"]);
      expect(setup.code, setup.stderr).toBe(0);
      const term = startTerminal(sandbox, [toolBinary("gemini")], env);
      terminal = term;
      // The question comes up before Gemini CLI has finished starting; an answer given then is
      // saved, but the restart it calls for is dropped when start-up ends, and the session goes
      // on untrusted (no server, no hooks). Its banner is drawn once start-up is over.
      await term.waitFor(/Gemini CLI v\d[\s\S]*Do you trust the files in this folder\?/);
      asked.push("trust this folder (it restarts)");
      await term.press("Enter", /restarting to apply the trust changes/);
      // Its untrusted first session never starts the server.
      const ready = await term.waitFor(/1 MCP server[\s\S]*Type your message/);
      // Gemini CLI's own look for a newer version fails on a machine without the internet; any
      // other error on the screen is one our set-up caused.
      const ours = ready.replace(/Failed to check for updates: .*/g, "");
      expect(ours).not.toMatch(/deprecated|Error/);
      await term.type(PROMPT, new RegExp(`>\\s+${PROMPT}`));
      await term.press("Enter", new RegExp(`✦\\s+${DONE}`), {
        refuse: /Action Required|Allow execution/,
      });
      await expectCallsRan("gemini", env);
    },
    FIRST_RUN_MS,
  );

  it(
    skipName("Qwen Code: no question; the chat tools run unasked", reason),
    async () => {
      // The user's provider, by the variables Qwen Code's own help names (no file).
      const env = qwenStandIn(sandbox, stub.url);
      const setup = await sandbox.agentChat(["setup", "qwen", "--as", "alice", "--write"]);
      expect(setup.code, setup.stderr).toBe(0);
      const term = startTerminal(sandbox, [toolBinary("qwen")], env);
      terminal = term;
      // Folder trust is off by default: nothing is asked before the prompt.
      await term.waitFor(/Qwen Code \(v\d[\s\S]*Type your message/, {
        refuse: /trust|Trust|Select Authentication|How would you like to authenticate/,
      });
      // Qwen Code takes the prompt before it has connected its MCP servers (the first request
      // may then lack our tools): a user who wants them waits until /mcp lists them, as here.
      await term.type("/mcp", /\/mcp/);
      await term.press("Enter", /agent-chat\s+·\s+✓ connected/);
      await term.press("Escape", /Type your message/);
      await term.type(PROMPT, new RegExp(`>\\s+${PROMPT}`));
      const done = await term.press("Enter", new RegExp(`◆\\S*\\s+${DONE}`), {
        refuse:
          /Allow execution|Do you want to proceed|Apply this change|Waiting for user confirmation/,
      });
      expect(done).toMatch(/✓ chat_channels[\s\S]*✓ chat_post[\s\S]*✓ chat_read/);
      await expectCallsRan("qwen", env);
    },
    FIRST_RUN_MS,
  );

  it(
    skipName("pi: no question; the extension loads and the chat tools run unasked", reason),
    async () => {
      // The user's own model, as pi's docs/models.md adds one (models.json, settings.json).
      const env = piStandIn(sandbox, stub.url);
      const setup = await sandbox.agentChat(["setup", "pi", "--as", "alice", "--write"]);
      expect(setup.code, setup.stderr).toBe(0);
      const term = startTerminal(sandbox, [toolBinary("pi")], env);
      terminal = term;
      // pi lists the extension it loaded; it asks nothing (no trust, no approval, by design).
      await term.waitFor(/\[Extensions\]\s+agent-chat\.js[\s\S]*stand-in/, {
        refuse: /trust|Trust|Log ?in/,
      });
      await term.type(PROMPT, new RegExp(PROMPT));
      const done = await term.press("Enter", new RegExp(`chat_read[\\s\\S]*${DONE}`), {
        refuse: /Allow|Confirm/,
      });
      // The session's notice, shown as the message the extension added to the turn.
      expect(done).toMatch(/\[agent-chat\]\s+1 unread agent-chat message for alice/);
      await expectCallsRan("pi", env);
    },
    FIRST_RUN_MS,
  );

  it(
    skipName("GitHub Copilot CLI: one question, folder trust; the chat tools run unasked", reason),
    async () => {
      // The user's provider, by the variables Copilot's own `help providers` names (no file).
      const env = copilotStandIn(sandbox, stub.url, { trusted: false });
      const setup = await sandbox.agentChat(["setup", "copilot", "--as", "alice", "--write"]);
      expect(setup.code, setup.stderr).toBe(0);
      const term = startTerminal(sandbox, [toolBinary("copilot")], env);
      terminal = term;
      // Its one question: trust the folder, answered "Yes, and remember this folder".
      await term.waitFor(/Do you trust the files in this folder\?[\s\S]*2\. Yes, and remember/);
      asked.push("trust this folder");
      await term.press("2", /has been added to trusted folders/);
      await term.type(PROMPT, new RegExp(`❯ ${PROMPT}`));
      const done = await term.press("Enter", new RegExp(`● ${DONE}`), {
        refuse: /Do you want to use this tool\?|Permission denied/,
      });
      expect(done).toMatch(/● chat_channels[\s\S]*● chat_post[\s\S]*● chat_read/);
      await expectCallsRan("copilot", env);
    },
    FIRST_RUN_MS,
  );

  it(
    skipName("OpenCode: no question; the chat tools run unasked", reason),
    async () => {
      // The user's provider and model (given as OpenCode reads a config of the environment).
      const env = opencodeStandIn(sandbox, stub.url);
      const setup = await sandbox.agentChat(["setup", "opencode", "--as", "alice", "--write"]);
      expect(setup.code, setup.stderr).toBe(0);
      const term = startTerminal(sandbox, [toolBinary("opencode")], env);
      terminal = term;
      // Nothing is asked before the prompt: no trust, no sign-in (a provider is configured).
      await term.waitFor(/stand-in/, {
        refuse: /trust|Trust|Connect a provider|Log in/,
        timeoutMs: 180_000,
      });
      await term.type(PROMPT, new RegExp(PROMPT));
      // The answer below the prompt (the session's title, above it, is the stand-in's too).
      const done = await term.press(
        "Enter",
        new RegExp(`${PROMPT}[\\s\\S]*chat_read[\\s\\S]*${DONE}`),
        {
          refuse: /Permission required|Allow once|Allow always/,
          timeoutMs: 180_000,
        },
      );
      expect(done).toMatch(/chat_channels[\s\S]*chat_post[\s\S]*chat_read/);
      await expectCallsRan("opencode", env);
    },
    FIRST_RUN_MS,
  );
});

/**
 * Answers Claude Code's trust question with "Yes, I trust this folder"; false when Claude Code
 * took the answer as "No, exit" and ended. For a moment after it draws the question it refuses
 * Enter, then draws it again with "No, exit" chosen: a "Yes" chosen before that is undone, and
 * an Enter sent for it may land on "No, exit". So "Yes" is chosen again each time the screen
 * shows "No, exit" chosen, and Enter is sent only while it shows "Yes" chosen.
 */
async function trustClaudeFolder(term: Terminal): Promise<boolean> {
  const outcome = /shift\+tab to cycle|isn't trusted/;
  for (let step = 1; step <= 8; step++) {
    const now = term.screen();
    if (/isn't trusted/.test(now)) return false;
    if (/shift\+tab to cycle/.test(now)) return true;
    if (/❯ Yes, I trust this folder/.test(now)) {
      await term.press("Enter", new RegExp(`${outcome.source}|❯ No, exit`));
    } else {
      await term.press("Down", new RegExp(`${outcome.source}|❯ Yes, I trust this folder`));
    }
  }
  throw new Error(`Claude Code's trust question took no answer:\n${term.screen()}`);
}
