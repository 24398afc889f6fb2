import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type ModelStub, startModelStub } from "../test/agents/model-stub.js";
import {
  makeSandbox,
  runTool,
  type Sandbox,
  startTool,
  toolBinary,
} from "../test/agents/sandbox.js";
import {
  claudeStandIn,
  codexStandIn,
  copilotStandIn,
  geminiStandIn,
  opencodeStandIn,
  piStandIn,
  qwenStandIn,
} from "../test/agents/stand-in-config.js";
import { startTerminal } from "../test/agents/terminal.js";
import {
  NOTICE_MARK,
  runCommand,
  stopCodexDaemon,
  stopCopilot,
} from "../test/agents/wake-command.js";
import { loadNow, recordWakes, type WakeRecords } from "./agent-wake-record.js";
import { type BenchModule, type Row, stats } from "./lib.js";

/**
 * Each real agent CLI idle against the stand-in model on 127.0.0.1, woken by a message: the
 * time from the start of a post (in this process) to the stand-in's receipt of the idle
 * session's next model request, which carries the wake notice. Claude Code natively after
 * `setup claude-code --wake` (a stream-json session), through its inbox socket and, the messaging
 * gate off, by its rewake hook; Codex, Gemini CLI, Qwen
 * Code and GitHub Copilot CLI interactive in a tmux terminal under `agent-chat run`, their stop
 * hooks marking turn ends; pi and OpenCode interactive in tmux, woken natively by our extension
 * (`setup pi --wake`) and plugin (`session.promptAsync`).
 */

const POLL_MS = 5;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, ok: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`agent wake: timed out waiting for ${what}`);
    await pause(POLL_MS);
  }
}

/** No request reached the stand-in for `ms`: the turn (and its side requests) is over. */
async function quiet(stub: ModelStub, ms = 1_500): Promise<void> {
  await until("the stand-in to go quiet", () => {
    const last = stub.requests.at(-1)?.at ?? 0;
    return performance.now() - last >= ms;
  });
}

interface Session {
  /** Resolves once the session is idle and ready to be woken again. */
  idle(): Promise<void>;
  /** What the session shows, for an error. */
  screen(): string;
  close(): Promise<void>;
}

interface Harness {
  name: string;
  /** The host it is (`setup TOOL`), for bench/results/agent-wake.json and the docs' tables. */
  tool: string;
  path: string;
  start(sandbox: Sandbox, stub: ModelStub): Promise<Session>;
}

/**
 * Claude Code as a `claude -p --input-format stream-json` session after `setup claude-code
 * --wake`: `hook wait` writes into the session's inbox socket (Claude Code's default), or,
 * with `extra` turning its messaging gate off (no inbox), wakes it by the rewake hook's exit.
 */
function claudeHarness(name: string, path: string, extra: Record<string, string>): Harness {
  return {
    name,
    tool: "claude-code",
    path,
    async start(sandbox, stub) {
      const setup = await sandbox.agentChat([
        "setup",
        "claude-code",
        "--as",
        "bob",
        "--write",
        "--wake",
      ]);
      if (setup.code !== 0) throw new Error(setup.stderr);
      const env = { ...claudeStandIn(sandbox, stub.url), ...extra };
      const args = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
      ];
      const child = startTool(sandbox, toolBinary("claude"), args, env);
      let turns = 0;
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (line.includes('"type":"result"')) turns++;
      });
      const user = { type: "user", message: { role: "user", content: "Say hi." } };
      child.stdin!.write(`${JSON.stringify(user)}\n`);
      const sessions = join(sandbox.env.XDG_STATE_HOME!, "agent-chat", "hook-sessions");
      const parked = () =>
        existsSync(sessions) && readdirSync(sessions).some((name) => name.endsWith(".waiter"));
      let woken = 0;
      return {
        async idle() {
          // Each turn ends in a result event; then its Stop hook parks a `hook wait`.
          await until("Claude Code's turn to end", () => turns > woken);
          woken = turns;
          await until("the parked hook wait", parked);
        },
        screen: () => `${turns} turns`,
        async close() {
          const exited = new Promise((resolve) => child.on("close", resolve));
          child.kill("SIGTERM");
          await exited;
        },
      };
    },
  };
}

const claude = claudeHarness(
  "Claude Code",
  "native: `hook wait` (setup claude-code --wake) writes into the session's inbox socket; claude -p --input-format stream-json",
  {},
);
const claudeRewake = claudeHarness(
  "Claude Code, rewake hook",
  "native: async Stop hook `hook wait` exits 2 (asyncRewake), no inbox socket (CLAUDE_CODE_HARBOR_KITE=0); claude -p --input-format stream-json",
  { CLAUDE_CODE_HARBOR_KITE: "0" },
);

/**
 * Claude Code interactive in tmux, as a user starts it after `setup claude-code --wake` (its
 * first-run questions answered before): woken through its inbox socket, the first (warm-up)
 * time before it has had any turn.
 */
const claudeInteractive: Harness = {
  name: "Claude Code, interactive",
  tool: "claude-code",
  path: "native: `hook wait` (setup claude-code --wake, parked at session start and at Stop) writes into the session's inbox socket; interactive in tmux",
  async start(sandbox, stub) {
    const setup = await sandbox.agentChat([
      "setup",
      "claude-code",
      "--as",
      "bob",
      "--write",
      "--wake",
    ]);
    if (setup.code !== 0) throw new Error(setup.stderr);
    const env = claudeStandIn(sandbox, stub.url, { interactive: true });
    const term = startTerminal(sandbox, [toolBinary("claude")], env);
    await until("Claude Code's prompt", () => /shift\+tab to cycle/.test(term.screen()), 90_000);
    return {
      async idle() {
        await quiet(stub);
        await until("the parked hook wait", () => waitParked(sandbox));
      },
      screen: () => term.screen(),
      close: () => term.close(),
    };
  },
};

/** Codex, Gemini CLI, Qwen Code or Copilot CLI interactive in tmux, under `agent-chat run --as bob`. */
function underRun(
  name: string,
  setupTool: string,
  command: (sandbox: Sandbox) => string[],
  standIn: (sandbox: Sandbox, url: string) => Record<string, string>,
  setupFlags: string[] = [],
): Harness {
  return {
    name,
    tool: setupTool,
    path: "`agent-chat run` (setup --wake), idleness marked by the stop hook; interactive in tmux",
    async start(sandbox, stub) {
      const env = standIn(sandbox, stub.url);
      const setup = await runTool(
        sandbox,
        "agent-chat",
        [
          "--root",
          sandbox.root,
          "setup",
          setupTool,
          "--as",
          "bob",
          "--write",
          "--wake",
          ...setupFlags,
        ],
        { env },
      );
      if (setup.code !== 0) throw new Error(setup.stderr);
      const term = startTerminal(sandbox, runCommand(sandbox, command(sandbox)), env);
      await until(`${name}'s first turn`, () => stub.requests.length > 0, 90_000);
      return {
        idle: () => quiet(stub),
        screen: () => term.screen(),
        async close() {
          await term.close();
          if (setupTool === "codex") await stopCodexDaemon(sandbox, env);
          if (setupTool === "copilot") await stopCopilot(sandbox);
        },
      };
    },
  };
}

const codex = underRun(
  "Codex",
  "codex",
  () => [toolBinary("codex"), "--dangerously-bypass-hook-trust", "Say hi."],
  codexStandIn,
);
const gemini = underRun(
  "Gemini CLI",
  "gemini",
  () => [toolBinary("gemini"), "-i", "Say hi."],
  geminiStandIn,
  ["--trust"],
);
const qwen = underRun(
  "Qwen Code",
  "qwen",
  () => [toolBinary("qwen"), "-i", "Say hi."],
  qwenStandIn,
);
const copilot = underRun(
  "GitHub Copilot CLI",
  "copilot",
  () => [toolBinary("copilot"), "-i", "Say hi."],
  copilotStandIn,
);

/** pi interactive in tmux, woken natively: its extension parks `hook wait` after each turn. */
const pi: Harness = {
  name: "pi",
  tool: "pi",
  path: "native: the extension (setup pi --wake) parks `hook wait` and starts a turn; interactive in tmux",
  async start(sandbox, stub) {
    const env = piStandIn(sandbox, stub.url);
    const setup = await sandbox.agentChat(["setup", "pi", "--as", "bob", "--write", "--wake"]);
    if (setup.code !== 0) throw new Error(setup.stderr);
    const term = startTerminal(sandbox, [toolBinary("pi"), "Say hi."], env);
    const sessions = join(sandbox.env.XDG_STATE_HOME!, "agent-chat", "hook-sessions");
    const parked = () =>
      existsSync(sessions) && readdirSync(sessions).some((name) => name.endsWith(".waiter"));
    return {
      async idle() {
        await quiet(stub);
        await until("the parked hook wait", parked);
      },
      screen: () => term.screen(),
      close: () => term.close(),
    };
  },
};

/** Whether a `hook wait` of the sandbox's sessions is parked (its mark in the state folder). */
function waitParked(sandbox: Sandbox): boolean {
  const sessions = join(sandbox.env.XDG_STATE_HOME!, "agent-chat", "hook-sessions");
  return existsSync(sessions) && readdirSync(sessions).some((name) => name.endsWith(".waiter"));
}

const opencode: Harness = {
  name: "OpenCode",
  tool: "opencode",
  path: "native: our plugin parks `hook wait` at session.idle and prompts the session through OpenCode's server (setup opencode); interactive in tmux",
  async start(sandbox, stub) {
    const setup = await sandbox.agentChat(["setup", "opencode", "--as", "bob", "--write"]);
    if (setup.code !== 0) throw new Error(setup.stderr);
    const env = opencodeStandIn(sandbox, stub.url);
    const term = startTerminal(sandbox, [toolBinary("opencode"), "--prompt", "Say hi."], env);
    await until("OpenCode's first turn", () => stub.requests.length > 0, 90_000);
    return {
      async idle() {
        await quiet(stub);
        await until("the plugin's parked hook wait", () => waitParked(sandbox));
      },
      screen: () => term.screen(),
      close: () => term.close(),
    };
  },
};

/** `n` wakes of one harness after a warm-up one; milliseconds from post to the woken request. */
async function wakes(harness: Harness, n: number): Promise<number[]> {
  const sandbox = makeSandbox("agent-chat-bench-wake-");
  const stub = await startModelStub({ calls: [], text: "Done." });
  const init = await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
  if (init.code !== 0) throw new Error(init.stderr);
  const store = new FsStore(sandbox.root);
  let session: Session | undefined;
  try {
    session = await harness.start(sandbox, stub);
    const samples: number[] = [];
    for (let i = 0; i <= n; i++) {
      await session.idle();
      const before = stub.requests.length;
      const t0 = performance.now();
      await store.post("general", { from: "alice", to: "bob", body: `wake ${i}` });
      const current = session;
      const woken = () => stub.requests.slice(before).find((r) => r.body.includes(NOTICE_MARK));
      await until(`${harness.name} to take a turn`, () => woken() !== undefined, 30_000).catch(
        (err: Error) => {
          throw new Error(`${err.message}; it shows:\n${current.screen()}`);
        },
      );
      if (i > 0) samples.push(woken()!.at - t0);
    }
    return samples;
  } finally {
    await session?.close();
    await store.close();
    await stub.close();
    sandbox.cleanup();
  }
}

/**
 * Every harness, or those whose name contains one of the names in
 * AGENT_WAKE_ONLY, separated by `;` (names hold commas): e.g. `AGENT_WAKE_ONLY="Claude Code" npm
 * run bench -- --only=agent`.
 */
function harnesses(): Harness[] {
  const all = [claude, claudeRewake, claudeInteractive, codex, gemini, qwen, pi, copilot, opencode];
  const only = process.env.AGENT_WAKE_ONLY?.split(";").filter((n) => n !== "");
  return only ? all.filter((h) => only.some((n) => h.name.includes(n))) : all;
}

export const agentWakeBench: BenchModule = {
  name: "agent wake",
  async run(ctx) {
    const n = ctx.quick ? 5 : 10;
    const rows: Row[] = [];
    const records: WakeRecords = {};
    // One harness at a time: each is a heavy process tree on a shared machine.
    for (const harness of harnesses()) {
      const load = loadNow();
      // A harness that fails is a row that says so; the others are still measured.
      const measured = await wakes(harness, n).then(
        (samples) => ({ samples, error: undefined }),
        (err: Error) => ({ samples: [], error: err.message }),
      );
      const s = stats(measured.samples);
      if (measured.samples.length > 0) {
        const { tool, path } = harness;
        const [p50, max] = [s.median, Math.max(...measured.samples)].map(Math.round) as [
          number,
          number,
        ];
        const date = new Date().toISOString().slice(0, 10);
        records[harness.name] = {
          tool,
          path,
          n: s.n,
          p50,
          max,
          date,
          node: process.version,
          load,
          quick: ctx.quick,
        };
      }
      rows.push({
        group: "agent wake",
        figure: `post → idle agent's next model turn, ${harness.name}`,
        unit: "ms",
        stats: s,
        goal: "p50 ≤ 1 s (issue 30)",
        met: s.median <= 1000,
        note: measured.error ? `${harness.path}; failed: ${measured.error}` : harness.path,
      });
    }
    recordWakes(records);
    return rows;
  },
};

export default agentWakeBench;
