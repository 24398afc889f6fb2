import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";
import { copilotStandIn } from "./stand-in-config.js";

/*
 * The real GitHub Copilot CLI (the devDependency @github/copilot) after `agent-chat setup
 * copilot --write`, with the stand-in as its custom provider on 127.0.0.1: in its default
 * permission mode (Manual Approval: it asks before each call of a tool that is not read-only,
 * and `copilot -p` denies what would ask), `copilot -p` calls chat_post as the agent with no
 * allow flag, the result carries the unread footer, and the hooks' notice reaches the model;
 * `doctor` passes.
 */

let sandbox: Sandbox;
let stub: ModelStub;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-copilot-");
  stub = await startModelStub({
    calls: [{ toolSuffix: "chat_post", args: { channel: "general", body: "hello from copilot" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

const NOTICE =
  "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool";

describe("GitHub Copilot CLI (real binary) after setup copilot --write", () => {
  it("calls chat_post as the agent unasked in its default permission mode, and the hooks' notice reaches the model", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    const setup = await sandbox.agentChat(["setup", "copilot", "--as", "alice", "--write"]);
    expect(setup.code, setup.stderr).toBe(0);
    const env = copilotStandIn(sandbox, stub.url);
    const doctor = await runTool(sandbox, "agent-chat", ["doctor", "--tool", "copilot"], { env });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(
      /^ok {4}identity: alice \(from .*\.copilot\/mcp-config\.json\)$/m,
    );

    const run = await runTool(sandbox, toolBinary("copilot"), ["-p", "Say hello in general."], {
      env,
      timeoutMs: 90_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^● chat_post \(MCP: agent-chat\)[^\n]*\n {2}└ Posted #2 to general\./m,
    );
    expect(run.stdout).toContain("\nPosted.\n");
    expect(run.stdout).not.toMatch(/Permission denied|no one to approve/);
    const messages = await sandbox.messages("general");
    expect(messages.map((m) => `${m.from}: ${m.body}`)).toEqual([
      "bob: hi",
      "alice: hello from copilot",
    ]);
    // The session's notice reached the model before its first call (SessionStart).
    expect(stub.requests[0]!.body).toContain(NOTICE);
    // The tool was offered, and its result came back with the footer.
    const last = stub.requests.at(-1)!.body;
    expect(last).toContain('"name":"agent-chat-chat_post"');
    const [result] = toolResults(last);
    expect(result).toContain("Posted #2 to general.");
    expect(result).toMatch(/<agent-chat>\{\\?"chat\\?":\{\\?"msgs\\?":1/);
  }, 120_000);
});
