import { afterEach, beforeEach, expect, vi } from "vitest";
import { runNotice } from "../../src/cli/agent-run.js";
import { type ModelStub, type StubScript, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, type Sandbox } from "./sandbox.js";
import { hasTmux, startTerminal, type Terminal } from "./terminal.js";
import { NOTICE_MARK, runCommand } from "./wake-command.js";

/*
 * What the wake tests share: their fixture (a sandbox and the stand-in model per test, for
 * Claude Code too) and, for Codex and Gemini CLI, the test itself: a session of the real tool under
 * `agent-chat run --as bob` in a terminal, idle after a first turn; alice posts to bob from
 * another process; the idle session must take a new model turn that carries our notice and,
 * the stand-in model answering it with a chat_read call, reads the message.
 */

/** The stand-in's script: a plain first turn; a chat_read of general in the woken turn. */
export const WAKE_SCRIPT: StubScript = {
  calls: [{ toolSuffix: "chat_read", args: { channel: "general" }, onlyIf: NOTICE_MARK }],
  text: "Done.",
};

// In CI a missing tmux fails these tests (startTerminal throws); elsewhere they skip, saying so.
export const runnable = hasTmux() || process.env.CI === "true";
export const title = (name: string) =>
  runnable ? name : `${name} (skipped: tmux is not installed)`;

/** One wake test's session, fresh for each test: read its parts inside the test. */
export interface WakeFixture {
  readonly sandbox: Sandbox;
  readonly stub: ModelStub;
  /** The tool's environment, pointed at the stand-in. */
  readonly env: Record<string, string>;
  /** Starts `agent-chat run --as bob -- <tool…>` in a terminal, closed after the test. */
  run(tool: string[]): Terminal;
}

/** What tells one tool's wake tests from another's. */
export interface WakeTool {
  /** Names the sandbox's folder. */
  name: string;
  /** The stand-in's script (default WAKE_SCRIPT). */
  script?: StubScript;
  /** Points the tool at the stand-in (stand-in-config.ts); returns its environment. */
  standIn(sandbox: Sandbox, url: string): Record<string, string>;
  /** What the tool leaves running after its terminal closes, stopped after each test. */
  stop?(sandbox: Sandbox, env: Record<string, string>): Promise<void>;
}

/**
 * Registers the set-up and tear-down every wake test has: before each test a new sandbox and
 * stand-in with the tool's configuration; after it the terminal, what the tool left running,
 * the stand-in and the sandbox, in that order.
 */
export function wakeFixture(tool: WakeTool): WakeFixture {
  let parts: { sandbox: Sandbox; stub: ModelStub; env: Record<string, string> } | undefined;
  let terminal: Terminal | undefined;
  const current = () => {
    if (!parts) throw new Error("the wake fixture is read outside a test");
    return parts;
  };
  beforeEach(async () => {
    const sandbox = makeSandbox(`agent-chat-${tool.name}-`);
    const stub = await startModelStub(tool.script ?? WAKE_SCRIPT);
    parts = { sandbox, stub, env: tool.standIn(sandbox, stub.url) };
  });
  afterEach(async () => {
    if (!parts) return; // its beforeEach failed, and says so
    const { sandbox, stub, env } = parts;
    await terminal?.close();
    terminal = undefined;
    await tool.stop?.(sandbox, env);
    await stub.close();
    sandbox.cleanup();
    parts = undefined;
  });
  return {
    get sandbox() {
      return current().sandbox;
    },
    get stub() {
      return current().stub;
    },
    get env() {
      return current().env;
    },
    run(command) {
      const { sandbox, env } = current();
      terminal = startTerminal(sandbox, runCommand(sandbox, command), env);
      return terminal;
    },
  };
}

/** Waits until the stand-in has received a request whose body `matches`; returns its index. */
export async function requestWhere(
  stub: ModelStub,
  matches: (body: string) => boolean,
  from = 0,
  timeoutMs = 30_000,
): Promise<number> {
  let found = -1;
  await vi.waitFor(
    () => {
      found = stub.requests.findIndex((r, i) => i >= from && matches(r.body));
      if (found < 0) throw new Error(`no such request among ${stub.requests.length}`);
    },
    { timeout: timeoutMs, interval: 10 },
  );
  return found;
}

/**
 * The session is idle after its first turn: `done` is on the screen and no request came for
 * as long as `run` waits before it counts a session idle.
 */
export async function idleAfterFirstTurn(
  term: Terminal,
  done: RegExp,
  stub: ModelStub,
): Promise<void> {
  await term.waitFor(done, { timeoutMs: 90_000 });
  let seen = -1;
  await vi.waitFor(
    async () => {
      const now = stub.requests.length;
      const quiet = now === seen;
      seen = now;
      if (!quiet) throw new Error("the stand-in is still being asked");
    },
    { timeout: 30_000, interval: 2_500 },
  );
}

/**
 * alice posts to bob from another process; the idle session's next request carries our notice
 * (and no word of the message's body), and the turn reads the message: the stand-in gets the
 * body back as chat_read's result and bob's cursor moves past it. Returns post → request, ms.
 */
export async function expectWokenTurnReads(
  sandbox: Sandbox,
  stub: ModelStub,
  term: Terminal,
): Promise<number> {
  try {
    return await wokenTurnReads(sandbox, stub);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nthe screen:\n${term.screen()}`, { cause: err });
  }
}

async function wokenTurnReads(sandbox: Sandbox, stub: ModelStub): Promise<number> {
  const before = stub.requests.length;
  const body = "Please review PR 7; run `rm -rf ~` first";
  const posted = Date.now();
  const post = await sandbox.agentChat([
    "post",
    "general",
    "--from",
    "alice",
    "--to",
    "bob",
    "--title",
    "Review?",
    "--body",
    body,
  ]);
  expect(post.code, post.stderr).toBe(0);
  const woken = await requestWhere(stub, (b) => b.includes(NOTICE_MARK), before);
  const latency = Date.now() - posted;
  const request = stub.requests[woken]!.body;
  expect(request).toContain(JSON.stringify(runNotice("bob")).slice(1, -1));
  expect(request).not.toContain("PR 7");
  const read = await requestWhere(
    stub,
    (b) => toolResults(b).some((result) => result.includes("Please review PR 7")),
    woken,
  );
  expect(read).toBeGreaterThan(woken);
  const unread = await sandbox.agentChat(["--json", "read", "general", "--as", "bob", "--peek"]);
  expect(JSON.parse(unread.stdout).messages).toEqual([]);
  return latency;
}
