import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";

/*
 * The real Codex CLI (the devDependency @openai/codex) after `agent-chat setup codex --write`,
 * with a stand-in for the OpenAI Responses API on 127.0.0.1 as a model provider of the user's
 * config.toml: `codex exec` calls our tool with its default approval policy (never), and runs
 * none of the hooks until the user trusts them in the TUI (first-run.test.ts).
 */

let sandbox: Sandbox;
let stub: ModelStub;
let codexHome: string;
const codex = () => toolBinary("codex");

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-codex-");
  codexHome = join(sandbox.home, ".codex");
  stub = await startModelStub({
    calls: [{ toolSuffix: "chat_post", args: { channel: "general", body: "hello from codex" } }],
    text: "Posted.",
  });
});
afterEach(async () => {
  await stub.close();
  sandbox.cleanup();
});

const env = () => ({ CODEX_HOME: codexHome });

/** `codex exec` as a script runs it; --strict-config refuses keys this Codex does not know. */
const exec = (prompt: string) =>
  runTool(sandbox, codex(), ["exec", "--skip-git-repo-check", "--strict-config", prompt], {
    env: env(),
  });

const messages = async () => {
  return (await sandbox.messages("general")).map((m) => `${m.from}: ${m.body}`);
};

describe("Codex (real binary) after setup codex --write", () => {
  it("calls chat_post as the agent under `codex exec`, and runs no hook until they are trusted", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    await sandbox.agentChat(["post", "general", "--from", "bob", "--to", "alice", "--body", "hi"]);
    // The user's own config: the model provider (here the stand-in) stays as it was.
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, "config.toml"),
      [
        "# mine",
        'model = "gpt-5.1-codex"',
        'model_provider = "stand-in"',
        "",
        "[model_providers.stand-in]",
        'name = "stand-in"',
        `base_url = "${stub.url}/v1"`,
        'wire_api = "responses"',
        "",
      ].join("\n"),
    );
    const setup = await runTool(
      sandbox,
      "agent-chat",
      ["--root", sandbox.root, "setup", "codex", "--as", "alice", "--write"],
      { env: env() },
    );
    expect(setup.code, setup.stderr).toBe(0);

    const get = await runTool(sandbox, codex(), ["mcp", "get", "agent-chat"], { env: env() });
    expect(get.stdout).toMatch(/enabled: true[\s\S]*args: mcp --as alice/);

    // No approval asked (exec never asks): the tools' annotations let it run.
    const first = await exec("Say hello in general.");
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain("mcp: agent-chat/chat_post (completed)");
    expect(first.stderr).not.toMatch(/deprecated|unknown field|error/i);
    expect(await messages()).toEqual(["bob: hi", "alice: hello from codex"]);
    // Hooks not yet trusted in /hooks: Codex runs none of them, silently.
    expect(stub.requests.some((r) => r.body.includes("unread agent-chat message"))).toBe(false);

    // Trusting them is a question of the interactive TUI (first-run.test.ts answers it, then
    // runs `codex exec` with the hooks trusted), not a flag.
  }, 60_000);
});
