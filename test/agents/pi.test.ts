import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";
import { piStandIn } from "./stand-in-config.js";

/*
 * The real pi (the devDependency @mariozechner/pi-coding-agent) after `agent-chat setup pi
 * --write`, with the stand-in model on 127.0.0.1 as a provider of the user's own: pi has no MCP,
 * so the extension setup writes gives it our tools; `pi -p` calls one as the agent with no
 * question, the result carries the unread footer, and the hooks' notices reach the model and the
 * user; `doctor` passes.
 */

let sandbox: Sandbox;
let stub: ModelStub;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-pi-");
  stub = await startModelStub({
    calls: [{ toolSuffix: "chat_post", args: { channel: "general", body: "hello from pi" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

describe("pi (real binary) after setup pi --write", () => {
  it("calls chat_post as the agent through the extension, unasked, and shows the hooks' notices", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    const setup = await sandbox.agentChat(["setup", "pi", "--as", "alice", "--write"]);
    expect(setup.code, setup.stderr).toBe(0);
    const env = piStandIn(sandbox, stub.url);
    const doctor = await runTool(sandbox, "agent-chat", ["doctor", "--tool", "pi"], { env });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(
      /^ok {4}identity: alice \(from .*\.pi\/agent\/agent-chat\.json\)$/m,
    );

    const run = await runTool(sandbox, toolBinary("pi"), ["-p", "Say hello in general."], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("Posted.\n");
    // Stop: the notice is told to the user, on stderr beside the answer.
    expect(run.stderr).toContain(
      "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool",
    );
    const messages = await sandbox.messages("general");
    expect(messages.map((m) => `${m.from}: ${m.body}`)).toEqual([
      "bob: hi",
      "alice: hello from pi",
    ]);
    // The session's notice reached the model with the first request of the turn.
    expect(stub.requests[0]!.body).toContain(
      "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool",
    );
    // The tool was offered by its own name and its result came back with the footer.
    const last = stub.requests.at(-1)!.body;
    expect(last).toContain('"name":"chat_post"');
    const [result] = toolResults(last);
    expect(result).toContain("Posted #2 to general.");
    expect(result).toMatch(/<agent-chat>\{\\?"chat\\?":\{\\?"msgs\\?":1/);
  }, 90_000);
});
