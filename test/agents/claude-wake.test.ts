import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it, vi } from "vitest";
import { runTool, startTool, toolBinary } from "./sandbox.js";
import { wakeFixture } from "./wake-session.js";

/*
 * The real Claude Code after `agent-chat setup claude-code --write --wake`, with a stand-in for
 * the Anthropic API on 127.0.0.1: an idle `claude -p --input-format stream-json` session takes
 * a new turn when another agent posts to it, and only then. Twice: through the session's inbox
 * socket (Claude Code's default), and by the rewake hook's exit when the session has no inbox
 * (Claude Code's messaging gate off: CLAUDE_CODE_HARBOR_KITE=0).
 */

// No tool call: each turn is one request and a plain answer.
const session = wakeFixture({
  name: "claude-wake",
  script: { calls: [], text: "Done." },
  standIn: (_sandbox, url) => ({
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: "sk-ant-stand-in",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    MCP_CONNECTION_NONBLOCKING: "false",
  }),
});
const claude = () => toolBinary("claude");

/** The parked `hook wait` processes' marks (one per session; gone when the wait ends). */
const stateDir = () => join(session.sandbox.env.XDG_STATE_HOME!, "agent-chat", "hook-sessions");

function waiters(): string[] {
  const dir = stateDir();
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".waiter")) : [];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const parked = () =>
  vi.waitFor(
    () => {
      if (waiters().length !== 1) throw new Error("no hook wait is parked");
    },
    { timeout: 20_000, interval: 50 },
  );

/** The texts of a request to the model. */
function texts(body: string): string[] {
  const request = JSON.parse(body) as { messages?: { content?: unknown }[] };
  const found = (request.messages ?? []).flatMap((m) =>
    typeof m.content === "string"
      ? [m.content]
      : Array.isArray(m.content)
        ? m.content.map((b: { text?: unknown }) => (typeof b?.text === "string" ? b.text : ""))
        : [],
  );
  return found;
}

/** How each wake path reaches the model: the turn's origin, and our notice after its prefix. */
const paths: {
  path: string;
  env: Record<string, string>;
  origin: string;
  notice: RegExp;
  first: string;
}[] = [
  {
    path: "the inbox socket",
    env: {},
    origin: "peer",
    notice: /Another Claude session sent a message:\n(agent-chat \(not another[^\n]*)/g,
    first:
      "agent-chat (not another Claude session: the agent-chat hook of this session): a new message arrived while you were idle: general #1 from bob. 1 unread agent-chat message for alice (general: 1). Read it with the chat_read tool (or: agent-chat read general --as alice).",
  },
  {
    path: "the rewake hook (no inbox: CLAUDE_CODE_HARBOR_KITE=0)",
    env: { CLAUDE_CODE_HARBOR_KITE: "0" },
    origin: "task-notification",
    notice: /Stop hook blocking error from command "Stop": (not an error[^\n]*)/g,
    first:
      "not an error: a new agent-chat message arrived while you were idle: general #1 from bob. 1 unread agent-chat message for alice (general: 1). Read it with the chat_read tool (or: agent-chat read general --as alice).",
  },
];

describe("Claude Code (real binary) after setup claude-code --write --wake", () => {
  it.each(paths)(
    "an idle stream-json session takes a new turn when a message arrives, once per message, moving no cursor: by $path",
    async (way) => {
      /** The wake notices Claude Code put in a request to the model (after its own prefix). */
      const wakeNotices = (body: string) =>
        texts(body).flatMap((text) => [...text.matchAll(way.notice)].map((m) => m[1]!));
      const { sandbox, stub } = session;
      await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
      const setup = await sandbox.agentChat([
        "setup",
        "claude-code",
        "--as",
        "alice",
        "--write",
        "--wake",
      ]);
      expect(setup.code, setup.stderr).toBe(0);
      // Claude Code's own loader: `claude doctor` lists settings that do not match its schema.
      const doctor = await runTool(sandbox, claude(), ["doctor"], { env: session.env });
      expect(doctor.stdout).toContain("Claude Code doctor");
      expect(doctor.stdout).not.toMatch(/Invalid settings|did not load/);

      const child = startTool(
        sandbox,
        claude(),
        ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        { ...session.env, ...way.env },
      );
      let stderr = "";
      child.stderr?.setEncoding("utf8").on("data", (d: string) => {
        stderr += d;
      });
      const results: { origin?: { kind?: string } }[] = [];
      createInterface({ input: child.stdout! }).on("line", (line) => {
        const event = JSON.parse(line) as { type?: string; origin?: { kind?: string } };
        if (event.type === "result") results.push(event);
      });
      const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
      let waiterPids: number[] = [];
      const resultCount = (n: number) =>
        vi.waitFor(
          () => {
            if (results.length < n) throw new Error(`${results.length} turns; stderr: ${stderr}`);
          },
          { timeout: 20_000, interval: 20 },
        );
      try {
        child.stdin?.write(
          `${JSON.stringify({ type: "user", message: { role: "user", content: "Say hi." } })}\n`,
        );
        await resultCount(1);
        // The turn ended: its Stop hook parked `hook wait`; the session is idle.
        await parked();
        const before = stub.requests.length;
        const posted = Date.now();
        await sandbox.agentChat([
          "post",
          "general",
          "--from",
          "bob",
          "--to",
          "alice",
          "--title",
          "Review?",
          "--body",
          "PR 7",
        ]);
        await vi.waitFor(
          () => {
            if (stub.requests.length === before) throw new Error("no new request");
          },
          { timeout: 15_000, interval: 10 },
        );
        const latency = Date.now() - posted;
        await resultCount(2);
        expect(results[1]!.origin?.kind).toBe(way.origin);
        expect(stub.requests).toHaveLength(before + 1);
        expect(wakeNotices(stub.requests.at(-1)!.body)).toEqual([way.first]);
        // The woken turn's Stop parks a new wait that stays silent about #1 (the model did not
        // read it: the cursor is where it was); a new message wakes it about #2 only.
        await parked();
        expect(stub.requests).toHaveLength(before + 1);
        const cursor = await sandbox.agentChat([
          "--json",
          "read",
          "general",
          "--as",
          "alice",
          "--peek",
        ]);
        expect(JSON.parse(cursor.stdout).messages.map((m: { seq: number }) => m.seq)).toEqual([1]);
        await sandbox.agentChat([
          "post",
          "general",
          "--from",
          "bob",
          "--to",
          "alice",
          "--body",
          "ping",
        ]);
        await resultCount(3);
        const third = wakeNotices(stub.requests.at(-1)!.body);
        expect(third.at(-1)).toContain("general #2 from bob");
        expect(third.filter((n) => n.includes("general #1"))).toHaveLength(1);
        expect(results).toHaveLength(3);
        console.log(`${way.path}: post -> the stand-in's new request in ${latency} ms`);
        expect(latency).toBeLessThan(10_000);
        await parked();
      } finally {
        // A headless session waits up to 30 s for pending asyncRewake hooks when its input ends;
        // ended by a signal, it must not leave the parked wait behind (the wait also ends by
        // itself once CLAUDE_PID is gone).
        waiterPids = waiters().map((name) =>
          Number(readFileSync(join(stateDir(), name), "utf8").split("-")[0]),
        );
        child.kill("SIGTERM");
      }
      await exited;
      expect(waiterPids).toHaveLength(1);
      await vi.waitFor(
        () => {
          if (waiterPids.some(alive)) throw new Error("the hook wait outlived Claude Code");
        },
        { timeout: 10_000, interval: 50 },
      );
    },
    90_000,
  );

  it("a one-shot claude -p with the wake hook installed ends as soon as its turn does", async () => {
    const { sandbox } = session;
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    // No trust question under `claude -p`: Claude Code's docs (Security, "Trust verification")
    // say it is disabled when running non-interactively with -p; first-run.test.ts answers it.
    const oneShot = async () => {
      const started = Date.now();
      const run = await runTool(sandbox, claude(), ["-p", "Say hi."], { env: session.env });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain("Done.");
      return Date.now() - started;
    };
    // The same run without the wake hook, on this machine now: what the run itself costs.
    await sandbox.agentChat(["setup", "claude-code", "--as", "alice", "--write"]);
    const baseline = await oneShot();
    await sandbox.agentChat(["setup", "claude-code", "--as", "alice", "--write", "--wake"]);
    const took = await oneShot();
    // Claude Code waits up to 30 s at the end of a headless run for a parked asyncRewake hook;
    // under a one-shot run the hook does not park, so the run costs what it costs without it.
    expect(took - baseline).toBeLessThan(20_000);
    expect(waiters()).toEqual([]);
  }, 120_000);
});
