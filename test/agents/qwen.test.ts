import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";
import { qwenStandIn } from "./stand-in-config.js";

/*
 * The real Qwen Code (the devDependency @qwen-code/qwen-code) after `agent-chat setup qwen
 * --write`, with a stand-in for an OpenAI-compatible API on 127.0.0.1: in its default approval
 * mode (which asks before every MCP tool call a rule does not allow; `-p` denies what would ask),
 * `qwen -p` calls our tool as the agent, the result carries the unread footer, and the hooks'
 * notices reach the model and the user; `doctor` passes.
 */

let sandbox: Sandbox;
let stub: ModelStub;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-qwen-");
  stub = await startModelStub({
    calls: [{ toolSuffix: "chat_post", args: { channel: "general", body: "hello from qwen" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

describe("Qwen Code (real binary) after setup qwen --write", () => {
  it("calls chat_post as the agent unasked in the default approval mode, and shows the hooks' notices", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    const setup = await sandbox.agentChat(["setup", "qwen", "--as", "alice", "--write"]);
    expect(setup.code, setup.stderr).toBe(0);
    const env = qwenStandIn(sandbox, stub.url);
    const doctor = await runTool(sandbox, "agent-chat", ["doctor", "--tool", "qwen"], { env });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(/^ok {4}identity: alice \(from .*\.qwen\/settings\.json\)$/m);

    const args = ["--approval-mode", "default", "-p", "Say hello in general."];
    const run = await runTool(sandbox, toolBinary("qwen"), args, { env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("Posted.\n");
    // Stop: the notice is told to the user, on stderr beside the answer.
    expect(run.stderr).toContain(
      "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool",
    );
    const messages = await sandbox.messages("general");
    expect(messages.map((m) => `${m.from}: ${m.body}`)).toEqual([
      "bob: hi",
      "alice: hello from qwen",
    ]);
    // The session's notice reached the model before its first call (SessionStart; Qwen Code
    // also runs UserPromptSubmit before each later request of the turn, tool results included).
    expect(stub.requests[0]!.body).toContain(
      "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool",
    );
    // The tool was offered up front and its result came back with the footer.
    const last = stub.requests.at(-1)!.body;
    expect(last).toContain('"name":"mcp__agent-chat__chat_post"');
    const [result] = toolResults(last);
    expect(result).toContain("Posted #2 to general.");
    expect(result).toMatch(/<agent-chat>\{\\?"chat\\?":\{\\?"msgs\\?":1/);
  }, 90_000);
});
