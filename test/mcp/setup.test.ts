import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "./client.js";

let dir: string;
let cleanup: () => void;
let root: string;
let project: string;
let codexHome: string;

beforeEach(() => {
  ({ dir, cleanup } = tempDir("agent-chat-setup-"));
  root = join(dir, "chat root");
  project = join(dir, "project");
  codexHome = join(dir, "home", ".codex");
  mkdirSync(project, { recursive: true });
});
afterEach(() => cleanup());

function setup(args: string[]) {
  return runCli(["--root", root, "setup", ...args], { env: { CODEX_HOME: codexHome } });
}

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8"));

/** Python's tomllib is a strict TOML 1.0 parser; CI images have python3 ≥ 3.11. */
const hasTomllib = spawnSync("python3", ["-c", "import tomllib"]).status === 0;
function parseToml(path: string): Record<string, unknown> {
  const script = "import json,sys,tomllib;print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))";
  return JSON.parse(execFileSync("python3", ["-c", script, path], { encoding: "utf8" }));
}

describe("agent-chat setup", () => {
  it("claude-code: prints the .mcp.json entry, the hooks and the one command", async () => {
    const r = await setup(["claude-code", "--as", "alice", "--dir", project, "--json"]);
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan.files.map((f: { path: string }) => f.path)).toEqual([
      join(project, ".mcp.json"),
      join(project, ".claude", "settings.json"),
    ]);
    const mcp = JSON.parse(plan.files[0].snippet);
    expect(mcp.mcpServers["agent-chat"]).toEqual({
      type: "stdio",
      command: "agent-chat",
      args: ["mcp", "--as", "alice"],
      env: { AGENT_CHAT_ROOT: root },
    });
    const hooks = JSON.parse(plan.files[1].snippet).hooks;
    expect(Object.keys(hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
    expect(hooks.SessionStart[0].hooks[0]).toEqual({
      type: "command",
      command: `agent-chat --root '${root}' hook session-start --as alice --format claude`,
      timeout: 10,
    });
    expect(plan.oneCommand).toBe(
      `claude mcp add agent-chat --scope project --env 'AGENT_CHAT_ROOT=${root}' -- agent-chat mcp --as alice`,
    );
    const human = await setup(["claude-code", "--as", "alice", "--dir", project]);
    expect(human.stdout).toContain(`# ${join(project, ".mcp.json")}\n{`);
    expect(human.stdout).toContain(plan.oneCommand);
  });

  it("claude-code --write merges into existing files, keeps other entries, and is idempotent", async () => {
    writeFileSync(
      join(project, ".mcp.json"),
      JSON.stringify({ mcpServers: { github: { command: "gh-mcp" } } }),
    );
    mkdirSync(join(project, ".claude"));
    const otherHook = { type: "command", command: "echo other" };
    writeFileSync(
      join(project, ".claude", "settings.json"),
      JSON.stringify({
        permissions: { allow: ["Bash(ls)"] },
        hooks: {
          Stop: [{ hooks: [otherHook] }],
          PreToolUse: [{ matcher: "Bash", hooks: [otherHook] }],
        },
      }),
    );
    const first = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`updated ${join(project, ".mcp.json")}`);
    // Again, as someone else: replaces our entries instead of adding a second set.
    const second = await setup(["claude-code", "--as", "bob", "--dir", project, "--write"]);
    expect(second.code).toBe(0);

    const mcp = readJson(join(project, ".mcp.json"));
    expect(Object.keys(mcp.mcpServers)).toEqual(["github", "agent-chat"]);
    expect(mcp.mcpServers["agent-chat"].args).toEqual(["mcp", "--as", "bob"]);
    const settings = readJson(join(project, ".claude", "settings.json"));
    expect(settings.permissions).toEqual({ allow: ["Bash(ls)"] });
    expect(settings.hooks.PreToolUse).toEqual([{ matcher: "Bash", hooks: [otherHook] }]);
    expect(settings.hooks.Stop).toHaveLength(2);
    expect(settings.hooks.Stop[0]).toEqual({ hooks: [otherHook] });
    const ours = settings.hooks.Stop[1].hooks;
    expect(ours).toHaveLength(1);
    expect(ours[0].command).toContain("hook stop --as bob");
    expect(settings.hooks.SessionStart).toHaveLength(1);

    const third = await setup(["claude-code", "--as", "bob", "--dir", project, "--write"]);
    expect(third.stdout).toContain(`unchanged ${join(project, ".mcp.json")}`);
  });

  it("the hook commands it writes run and print the notice", async () => {
    await initChannels(root, { review: ["alice", "bob"] });
    await runCli(["post", "review", "--from", "alice", "--body", "hi bob"], { root });
    await setup(["claude-code", "--as", "bob", "--dir", project, "--write", "--command", CLI]);
    const settings = readJson(join(project, ".claude", "settings.json"));
    const command = settings.hooks.UserPromptSubmit[0].hooks[0].command;
    const out = execFileSync("sh", ["-c", command], {
      input: JSON.stringify({ hook_event_name: "UserPromptSubmit", prompt: "go" }),
      encoding: "utf8",
    });
    expect(out).toContain("1 unread agent-chat message for bob (review: 1)");
  });

  it("refuses to overwrite a settings file that is not valid JSON", async () => {
    const path = join(project, ".mcp.json");
    writeFileSync(path, "{ broken");
    const r = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${path} is not valid JSON`);
    expect(readFileSync(path, "utf8")).toBe("{ broken");
  });

  it("gemini: writes mcpServers and SessionStart/BeforeAgent/AfterAgent hooks into .gemini/settings.json", async () => {
    mkdirSync(join(project, ".gemini"));
    writeFileSync(
      join(project, ".gemini", "settings.json"),
      JSON.stringify({ theme: "GitHub", mcpServers: { other: { command: "x" } } }),
    );
    const r = await setup(["gemini", "--as", "carol", "--dir", project, "--write"]);
    expect(r.code).toBe(0);
    const settings = readJson(join(project, ".gemini", "settings.json"));
    expect(settings.theme).toBe("GitHub");
    expect(Object.keys(settings.mcpServers)).toEqual(["other", "agent-chat"]);
    expect(settings.mcpServers["agent-chat"]).toMatchObject({
      command: "agent-chat",
      args: ["mcp", "--as", "carol"],
      env: { AGENT_CHAT_ROOT: root },
    });
    expect(Object.keys(settings.hooks)).toEqual(["SessionStart", "BeforeAgent", "AfterAgent"]);
    expect(settings.hooks.BeforeAgent[0].hooks[0].command).toContain(
      "hook prompt --as carol --format gemini",
    );
    const printed = JSON.parse(
      (await setup(["gemini", "--as", "carol", "--dir", project, "--json"])).stdout,
    );
    expect(printed.oneCommand).toBe(
      `gemini mcp add --scope project -e AGENT_CHAT_NAME=carol -e 'AGENT_CHAT_ROOT=${root}' agent-chat agent-chat mcp`,
    );
  });

  it.skipIf(!hasTomllib)(
    "codex: merges [mcp_servers.agent-chat] into config.toml without touching the rest",
    async () => {
      mkdirSync(codexHome, { recursive: true });
      const configPath = join(codexHome, "config.toml");
      writeFileSync(
        configPath,
        [
          'model = "gpt-5"',
          "",
          "[mcp_servers.github]",
          'command = "gh-mcp"',
          "",
          "[mcp_servers.agent-chat]",
          'command = "old"',
          "",
          "[mcp_servers.agent-chat.env]",
          'AGENT_CHAT_ROOT = "/old"',
          "",
          "[features]",
          "web_search = true",
          "",
          "[profiles.fast]",
          'model = "gpt-5-mini"',
          "",
        ].join("\n"),
      );
      const printed = JSON.parse((await setup(["codex", "--as", "dave", "--json"])).stdout);
      expect(printed.oneCommand).toBe(
        `codex mcp add agent-chat --env 'AGENT_CHAT_ROOT=${root}' -- agent-chat mcp --as dave`,
      );
      const r = await setup(["codex", "--as", "dave", "--write"]);
      expect(r.code).toBe(0);
      await setup(["codex", "--as", "dave", "--write"]);
      const config = parseToml(configPath);
      expect(config).toEqual({
        model: "gpt-5",
        mcp_servers: {
          github: { command: "gh-mcp" },
          "agent-chat": {
            command: "agent-chat",
            args: ["mcp", "--as", "dave"],
            env: { AGENT_CHAT_ROOT: root },
            tool_timeout_sec: 960,
          },
        },
        features: { codex_hooks: true, web_search: true },
        profiles: { fast: { model: "gpt-5-mini" } },
      });
      const hooks = readJson(join(codexHome, "hooks.json")).hooks;
      expect(Object.keys(hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
      expect(hooks.Stop[0].hooks[0].command).toContain("hook stop --as dave --format codex");

      // A fresh home: the file is created, and still parses.
      const fresh = join(dir, "fresh");
      await runCli(["--root", root, "setup", "codex", "--as", "dave", "--write"], {
        env: { CODEX_HOME: fresh },
      });
      expect(parseToml(join(fresh, "config.toml"))).toMatchObject({
        mcp_servers: { "agent-chat": { args: ["mcp", "--as", "dave"] } },
        features: { codex_hooks: true },
      });
    },
  );

  it("needs an identity and a known tool", async () => {
    const nameless = await setup(["codex"]);
    expect(nameless.code).toBe(64);
    expect(nameless.stderr).toContain("--as NAME is required");
    const unknown = await setup(["cursor", "--as", "x"]);
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toContain("claude-code, codex, gemini");
  });
});
