import { createInterface } from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, startTool, toolBinary } from "./sandbox.js";

/*
 * The real Claude Code (the devDependency @anthropic-ai/claude-code) after `agent-chat setup
 * claude-code --write`, with a stand-in for the Anthropic API on 127.0.0.1: the model's tool call
 * goes through our MCP server and the hooks' notices reach the model.
 */

let sandbox: Sandbox;
let stub: ModelStub;
const claude = () => toolBinary("claude");

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-claude-");
  stub = await startModelStub({
    calls: [{ toolSuffix: "__chat_post", args: { channel: "general", body: "hello from claude" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

/** Claude Code against the stand-in, with nothing sent anywhere else. */
const modelEnv = () => ({
  ANTHROPIC_BASE_URL: stub.url,
  ANTHROPIC_API_KEY: "sk-ant-stand-in",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_AUTOUPDATER: "1",
});

/** Every "<event> hook success: <text>" Claude Code put in one request to the model. */
function hookNotices(body: string): string[] {
  return [...body.matchAll(/(\w+)(?::\w+)? hook success: ([^"\\]*?unread[^"\\]*?\))/g)].map(
    (m) => `${m[1]}: ${m[2]}`,
  );
}

describe("Claude Code (real binary) after setup claude-code --write", () => {
  it("under claude -p, as set up (no flag, no trust record): calls chat_post as the agent, and both hooks reach the model", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    const setup = await sandbox.agentChat(["setup", "claude-code", "--as", "alice", "--write"]);
    expect(setup.code, setup.stderr).toBe(0);

    // Claude Code's own loader: `claude doctor` lists settings that do not match its schema.
    const doctor = await runTool(sandbox, claude(), ["doctor"], { env: modelEnv() });
    expect(doctor.stdout).toContain("Claude Code doctor");
    expect(doctor.stdout).not.toMatch(/Invalid settings|did not load/);

    // Interactively, a project server waits for the trust question (first-run.test.ts answers
    // it); `claude -p` asks no question: Claude Code's docs (Security, "Trust verification")
    // say trust verification is disabled when running non-interactively with -p.
    const before = await runTool(sandbox, claude(), ["mcp", "list"], { env: modelEnv() });
    expect(before.stdout).toMatch(/agent-chat: agent-chat mcp - .*Pending approval/);

    // Two prompts in one session: the second comes after bob posted again.
    const child = startTool(
      sandbox,
      claude(),
      ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
      modelEnv(),
    );
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const results: string[] = [];
    const waiters: (() => void)[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const event = JSON.parse(line) as { type?: string; result?: string };
      if (event.type === "result") {
        results.push(event.result ?? "");
        waiters.shift()?.();
      }
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    const turn = (text: string) => {
      const done = new Promise<void>((resolve, reject) => {
        waiters.push(resolve);
        exited.then(() => reject(new Error(`claude exited early: ${stderr}`)));
      });
      child.stdin?.write(
        `${JSON.stringify({ type: "user", message: { role: "user", content: text } })}\n`,
      );
      return done;
    };
    try {
      await turn("Say hello in general.");
      await sandbox.agentChat([
        "post",
        "general",
        "--from",
        "bob",
        "--to",
        "alice",
        "--body",
        "again",
      ]);
      await turn("Anything new?");
    } finally {
      child.stdin?.end();
    }
    expect(await exited, stderr).toBe(0);
    expect(results).toEqual(["Posted.", "Posted."]);

    const messages = await sandbox.messages("general");
    expect(messages.map((m) => [m.seq, m.from, m.body])).toEqual([
      [1, "bob", "hi"],
      [2, "alice", "hello from claude"],
      [3, "bob", "again"],
    ]);
    // The tool's answer went back to the model.
    expect(stub.requests.some((r) => r.body.includes("Posted #2 to general."))).toBe(true);

    // Session start told of message 1; the second prompt, of message 3 only then (once each).
    const last = stub.requests.at(-1)!.body;
    expect(hookNotices(stub.requests[0]!.body)).toEqual([
      "SessionStart: 1 unread agent-chat message for alice (general: 1)",
    ]);
    expect(hookNotices(last)).toEqual([
      "SessionStart: 1 unread agent-chat message for alice (general: 1)",
      "UserPromptSubmit: 2 unread agent-chat messages for alice (general: 2)",
    ]);
  }, 60_000);
});
