import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub, toolResults } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";
import { opencodeStandIn } from "./stand-in-config.js";

/*
 * The real OpenCode (the devDependency opencode-ai) after `agent-chat setup opencode --write`,
 * with a stand-in for an OpenAI-compatible API on 127.0.0.1. Its user made it ask before every
 * tool (`"permission": {"*": "ask"}`), and `opencode run` rejects what would ask: the chat tool
 * runs as the agent all the same (setup's allow rules, no --auto), the result carries the unread
 * footer, and the plugin's notice reaches the model in the user's message; `doctor` passes.
 */

let sandbox: Sandbox;
let stub: ModelStub;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-opencode-");
  stub = await startModelStub({
    calls: [{ toolSuffix: "chat_post", args: { channel: "general", body: "hello from opencode" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

const NOTICE =
  "1 unread agent-chat message for alice (general: 1). Read them with the chat_read tool";

describe("OpenCode (real binary) after setup opencode --write", () => {
  it("calls chat_post as the agent unasked where its user's rules ask for every tool, and the notice reaches the model", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    const configDir = join(sandbox.home, ".config", "opencode");
    mkdirSync(configDir, { recursive: true });
    writeFileSync(join(configDir, "opencode.json"), JSON.stringify({ permission: { "*": "ask" } }));
    const setup = await sandbox.agentChat(["setup", "opencode", "--as", "alice", "--write"]);
    expect(setup.code, setup.stderr).toBe(0);
    const env = opencodeStandIn(sandbox, stub.url);
    const doctor = await runTool(sandbox, "agent-chat", ["doctor", "--tool", "opencode"], { env });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(/^ok {4}identity: alice \(from .*opencode\/opencode\.json\)$/m);

    const run = await runTool(sandbox, toolBinary("opencode"), ["run", "Say hello in general."], {
      env,
      timeoutMs: 150_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("Posted.");
    expect(run.stdout + run.stderr).not.toContain("permission requested");
    const messages = await sandbox.messages("general");
    expect(messages.map((m) => `${m.from}: ${m.body}`)).toEqual([
      "bob: hi",
      "alice: hello from opencode",
    ]);
    // The plugin's notice joined the user's message before the model's first call.
    const calls = stub.requests.filter((r) => r.body.includes("agent-chat_chat_post"));
    expect(calls[0]!.body).toContain(NOTICE);
    // The tool's result came back with the footer.
    const [result] = toolResults(calls.at(-1)!.body);
    expect(result).toContain("Posted #2 to general.");
    expect(result).toMatch(/<agent-chat>\{\\?"chat\\?":\{\\?"msgs\\?":1/);
  }, 180_000);
});
