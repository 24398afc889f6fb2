import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type ModelStub, type StubScript, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, type Sandbox, toolBinary } from "./sandbox.js";
import { claudeStandIn, opencodeStandIn, piStandIn, qwenStandIn } from "./stand-in-config.js";
import { startTerminal, type Terminal } from "./terminal.js";
import { NOTICE_MARK } from "./wake-command.js";
import { idleAfterFirstTurn, requestWhere, runnable, title } from "./wake-session.js";

/*
 * One conversation across four real agent tools, each in its own terminal as its user runs it,
 * each with its own HOME and project folder and a stand-in model of its own on 127.0.0.1, all on
 * one chat root: alice (Claude Code) is asked by her first prompt to ask the team; she posts the
 * question with chat_post and goes idle. bob (pi), carol (OpenCode) and dave (Qwen Code under
 * `agent-chat run`), idle after a first turn, are woken by the question, each the way its wake
 * test proves it, read it and answer with chat_post; alice is woken by the answers and reads
 * them all. No key is pressed after alice's first prompt.
 */

const PROMPT = "Ask the team which port the stand-in listens on.";
const QUESTION = "Which port does the stand-in listen on? Each of you, please answer.";
const answerOf = (agent: string) => `${agent}: it listens on port 4242`;

/** alice's stand-in: the question on her prompt; a chat_read on each wake (the nth on the nth). */
const ASKER: StubScript = {
  calls: [
    { toolSuffix: "chat_post", args: { channel: "general", body: QUESTION }, onlyIf: PROMPT },
    ...[1, 2, 3].map((times) => ({
      toolSuffix: "chat_read",
      args: { channel: "general" },
      onlyIf: NOTICE_MARK,
      times,
    })),
  ],
  text: "Done.",
};

/** An answerer's stand-in: a plain first turn; on the wake, read the question, then answer it. */
const answerer = (agent: string): StubScript => ({
  calls: [
    { toolSuffix: "chat_read", args: { channel: "general" }, onlyIf: NOTICE_MARK },
    {
      toolSuffix: "chat_post",
      args: { channel: "general", to: "alice", reply_to: 1, body: answerOf(agent) },
      onlyIf: NOTICE_MARK,
    },
  ],
  text: "Done.",
});

/**
 * One team member's user in the shared sandbox: a HOME (XDG folders in it) and a project folder
 * of their own, the sandbox's chat root and `agent-chat` on PATH.
 */
function member(base: Sandbox, agent: string): Sandbox {
  const home = join(base.dir, agent, "home");
  const project = join(base.dir, agent, "project");
  for (const d of [home, project]) mkdirSync(d, { recursive: true });
  const env = {
    ...base.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local", "share"),
  };
  const agentChat: Sandbox["agentChat"] = (args) =>
    runCli(["--root", base.root, ...args], { env, cwd: project });
  return { ...base, home, project, env, agentChat, cleanup: () => {} };
}

/** The `hook wait` processes parked for a member (one per idle session of a native wake). */
function waiters(sandbox: Sandbox): string[] {
  const dir = join(sandbox.env.XDG_STATE_HOME!, "agent-chat", "hook-sessions");
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".waiter")) : [];
}

const parked = (sandbox: Sandbox) =>
  vi.waitFor(
    () => {
      if (waiters(sandbox).length !== 1) throw new Error("no hook wait is parked");
    },
    { timeout: 30_000, interval: 50 },
  );

interface Member {
  agent: string;
  tool: string;
  sandbox: Sandbox;
  stub: ModelStub;
  term?: Terminal;
}

let base: Sandbox | undefined;
let members: Member[] = [];

afterEach(async () => {
  for (const m of members) await m.term?.close();
  for (const m of members) await m.stub.close();
  base?.cleanup();
  base = undefined;
  members = [];
});

async function join4(): Promise<Record<string, Member>> {
  base = makeSandbox("agent-chat-mixed-team-");
  const team: [string, string, StubScript][] = [
    ["alice", "Claude Code", ASKER],
    ["bob", "pi", answerer("bob")],
    ["carol", "OpenCode", answerer("carol")],
    ["dave", "Qwen Code", answerer("dave")],
  ];
  for (const [agent, tool, script] of team) {
    members.push({ agent, tool, sandbox: member(base, agent), stub: await startModelStub(script) });
  }
  return Object.fromEntries(members.map((m) => [m.agent, m]));
}

async function setup(m: Member, host: string, extra: string[] = []): Promise<void> {
  const run = await m.sandbox.agentChat(["setup", host, "--as", m.agent, "--write", ...extra]);
  expect(run.code, run.stderr).toBe(0);
}

/** Claude Code up and idle, its chat tools connected (as claude-inbox.test.ts starts it). */
async function startClaude(m: Member): Promise<void> {
  const env = claudeStandIn(m.sandbox, m.stub.url, { interactive: true });
  m.term = startTerminal(m.sandbox, [toolBinary("claude")], env);
  const term = m.term;
  await term.waitFor(/shift\+tab to cycle/, { refuse: /trust this folder|API key/ });
  await term.type("/mcp", /❯ \/mcp/);
  await term.press("Enter", /Enter to view · Esc to close/);
  await term.waitFor(/✔ agent-chat\s+\d+ tools/, { refuse: /✘ agent-chat|failed/ });
  await term.press("Escape", /^(?![\s\S]*MCP servers)[\s\S]*shift\+tab to cycle/);
  await parked(m.sandbox);
}

/** pi after its first turn, its extension's wait parked (as pi-wake.test.ts). */
async function startPi(m: Member): Promise<void> {
  m.term = startTerminal(
    m.sandbox,
    [toolBinary("pi"), "Say hi."],
    piStandIn(m.sandbox, m.stub.url),
  );
  await m.term.waitFor(/Done\./, { timeoutMs: 90_000 });
  await parked(m.sandbox);
}

/** OpenCode after its first turn, started as usual (as opencode-wake.test.ts). */
async function startOpenCode(m: Member): Promise<void> {
  const env = opencodeStandIn(m.sandbox, m.stub.url);
  m.term = startTerminal(m.sandbox, [toolBinary("opencode"), "--prompt", "Say hi."], env);
  await idleAfterFirstTurn(m.term, /Done\./, m.stub);
}

/** Qwen Code under `agent-chat run --as dave` after its first turn (as qwen-wake.test.ts). */
async function startQwen(m: Member): Promise<void> {
  const command = [
    join(m.sandbox.dir, "bin", "agent-chat"),
    "--root",
    m.sandbox.root,
    "run",
    "--as",
    m.agent,
    "--",
    toolBinary("qwen"),
    "-i",
    "Say hi.",
  ];
  m.term = startTerminal(m.sandbox, command, qwenStandIn(m.sandbox, m.stub.url));
  await idleAfterFirstTurn(m.term, /◆\S*\s+Done\./, m.stub);
}

/**
 * When each message file of a channel appeared (polled every 10 ms, on the stand-ins'
 * `performance.now()` clock), by file name: the message files carry seconds only.
 */
function watchChannel(root: string, channel: string): { seen: Map<string, number>; stop(): void } {
  const seen = new Map<string, number>();
  const dir = join(root, channel);
  const timer = setInterval(() => {
    const now = performance.now();
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (/^\d+-.*\.md$/.test(name) && !seen.has(name)) seen.set(name, now);
    }
  }, 10);
  return { seen, stop: () => clearInterval(timer) };
}

/** When the message of `agent` appeared in the channel. */
function postedBy(seen: Map<string, number>, agent: string): number {
  const at = [...seen].find(([name]) => name.match(/^\d+-([^-]+)-/)?.[1] === agent)?.[1];
  if (at === undefined) throw new Error(`no message from ${agent} among ${[...seen.keys()]}`);
  return at;
}

/** The first request to `m`'s stand-in whose tool results hold every one of `texts`; its time. */
async function firstHolding(m: Member, texts: string[], timeoutMs = 120_000): Promise<number> {
  const i = await requestWhere(
    m.stub,
    (b) => texts.every((t) => toolResults(b).some((r) => r.includes(t))),
    0,
    timeoutMs,
  );
  return m.stub.requests[i]!.at;
}

describe.runIf(runnable)("a mixed team: four real agent tools in one conversation", () => {
  it(title(
    "Claude Code asks; pi, OpenCode and Qwen Code are woken by the question and answer; Claude Code is woken and reads every answer",
  ), async () => {
    const team = await join4();
    const { alice, bob, carol, dave } = team as Record<string, Member>;
    const answerers = [bob!, carol!, dave!];
    const init = await alice!.sandbox.agentChat([
      "init",
      "general",
      "--members",
      "alice,bob,carol,dave",
    ]);
    expect(init.code, init.stderr).toBe(0);
    await setup(alice!, "claude-code", ["--wake"]);
    await setup(bob!, "pi", ["--wake"]);
    await setup(carol!, "opencode");
    await setup(dave!, "qwen", ["--wake"]);
    let hasAll = 0;
    try {
      await Promise.all([
        startClaude(alice!),
        startPi(bob!),
        startOpenCode(carol!),
        startQwen(dave!),
      ]);
      for (const m of answerers)
        expect(m.stub.requests.some((r) => r.body.includes(NOTICE_MARK))).toBe(false);

      // alice's first prompt: the last key pressed in the test.
      const channel = watchChannel(base!.root, "general");
      try {
        await alice!.term!.type(PROMPT, /❯\s+Ask the team/);
        await alice!.term!.press("Enter", /Ask the team[\s\S]*(chat_post|Done\.)/);
        await firstHolding(alice!, ["Posted #1"]);
        await Promise.all(
          answerers.map(async (m) => {
            // Woken by the question (our notice, never its text), read it, answered.
            const woken = await requestWhere(m.stub, (b) => b.includes(NOTICE_MARK), 0, 120_000);
            expect(m.stub.requests[woken]!.body).not.toContain("port does the stand-in");
            await firstHolding(m, [QUESTION]);
            await firstHolding(m, ["Posted #"]);
          }),
        );
        hasAll = await firstHolding(
          alice!,
          answerers.map((m) => answerOf(m.agent)),
        );
        // The file poll may trail the last request by a tick: wait until it has seen all four.
        await vi.waitFor(() => expect(channel.seen.size).toBe(4), { timeout: 5_000, interval: 10 });
      } finally {
        channel.stop();
      }
      const asked = postedBy(channel.seen, "alice");
      const answered = answerers.map((m) => postedBy(channel.seen, m.agent) - asked);
      const all = hasAll - asked;

      // The channel: the question, and one answer from each of the others, to alice.
      const messages = await alice!.sandbox.messages("general");
      expect(messages.map((m) => [m.from, m.body])).toEqual(
        expect.arrayContaining([
          ["alice", QUESTION],
          ...answerers.map((m) => [m.agent, answerOf(m.agent)]),
        ]),
      );
      expect(messages).toHaveLength(4);
      // alice read them in turns the wake started (her stand-in was given our notice first),
      // and her cursor is past them all.
      const firstWake = alice!.stub.requests.findIndex((r) => r.body.includes(NOTICE_MARK));
      expect(firstWake).toBeGreaterThan(0);
      expect(alice!.stub.requests[firstWake]!.body).not.toContain("port 4242");
      const unread = await alice!.sandbox.agentChat([
        "--json",
        "read",
        "general",
        "--as",
        "alice",
        "--peek",
      ]);
      expect(JSON.parse(unread.stdout).messages).toEqual([]);
      const wakes = alice!.stub.requests.at(-1)!.body.split(NOTICE_MARK).length - 1;
      const ms = (n: number) => `${Math.round(n)} ms`;
      console.log(
        `mixed team: question posted -> answers ${answerers
          .map((m, i) => `${m.agent} (${m.tool}) ${ms(answered[i]!)}`)
          .join(", ")}; alice (Claude Code) has all ${ms(all)} (woken ${wakes}x)`,
      );
    } catch (err) {
      const screens = members.map((m) => `--- ${m.agent} (${m.tool}):\n${m.term?.screen() ?? ""}`);
      throw new Error(`${(err as Error).message}\nthe screens:\n${screens.join("\n")}`, {
        cause: err,
      });
    }
  }, 300_000);
});
