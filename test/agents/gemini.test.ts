import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";

/*
 * The real Gemini CLI (the devDependency @google/gemini-cli) after `agent-chat setup gemini
 * --write`, with a stand-in for the Gemini API on 127.0.0.1 (GOOGLE_GEMINI_BASE_URL): nothing
 * runs in an untrusted folder; once trusted, `gemini -p` calls our tool as the agent in the
 * default approval mode (no --approval-mode yolo), and the hooks' notices reach the model and
 * the user.
 */

let sandbox: Sandbox;
let stub: ModelStub;
const gemini = () => toolBinary("gemini");

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-gemini-");
  stub = await startModelStub({
    calls: [{ toolSuffix: "chat_post", args: { channel: "general", body: "hello from gemini" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

const env = () => ({
  GOOGLE_GEMINI_BASE_URL: stub.url,
  GEMINI_API_KEY: "stand-in",
  // One process: the relaunch with a larger heap only costs time here.
  GEMINI_CLI_NO_RELAUNCH: "true",
});

const setup = (...flags: string[]) =>
  sandbox.agentChat(["setup", "gemini", "--as", "alice", "--write", ...flags]);

describe("Gemini CLI (real binary) after setup gemini --write", () => {
  it("runs nothing until the folder is trusted, then calls chat_post as the agent and shows the hooks' notices", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    // The user's own settings: an API key (with a base URL Gemini CLI would pick "gateway").
    mkdirSync(join(sandbox.home, ".gemini"), { recursive: true });
    writeFileSync(
      join(sandbox.home, ".gemini", "settings.json"),
      JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }),
    );
    expect((await setup()).code).toBe(0);
    const untrusted = await runTool(sandbox, gemini(), ["mcp", "list"], { env: env() });
    const said = untrusted.stdout + untrusted.stderr;
    expect(said).toContain("disabled because this folder is untrusted");
    expect(said).toMatch(/agent-chat: agent-chat mcp --as alice \(stdio\) - Disabled/);

    expect((await setup("--trust")).code).toBe(0);
    // Default approval mode: the policy file setup wrote allows the chat tools.
    const run = await runTool(sandbox, gemini(), ["-p", "Say hello in general."], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    // Gemini CLI's loader says nothing of the settings setup wrote.
    expect(run.stderr).not.toMatch(/invalid|error|unknown|deprecated/i);
    // AfterAgent: the notice is told to the user (on stderr, beside the answer on stdout).
    expect(run.stdout).toBe("Posted.\n");
    expect(run.stderr).toContain(
      "Hook system message: 1 unread agent-chat message for alice (general: 1).",
    );
    const messages = await sandbox.messages("general");
    expect(messages.map((m) => `${m.from}: ${m.body}`)).toEqual([
      "bob: hi",
      "alice: hello from gemini",
    ]);
    // The main turn (the one offered our tool) carried the session's notice, once.
    const turn = stub.requests.find(
      (r) => r.body.includes("chat_post") && r.path.includes("stream"),
    );
    expect(
      turn?.body.match(/<hook_context>1 unread agent-chat message for alice \(general: 1\)/g),
    ).toHaveLength(1);
  }, 60_000);
});
