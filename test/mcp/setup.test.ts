import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { parse } from "smol-toml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "./client.js";

let dir: string;
let cleanup: () => void;
let root: string;
let project: string;
let codexHome: string;
let geminiHome: string;
let qwenHome: string;
let piDir: string;
let copilotHome: string;
let opencodeDir: string;

beforeEach(() => {
  ({ dir, cleanup } = tempDir("agent-chat-setup-"));
  root = join(dir, "chat root");
  project = join(dir, "project");
  codexHome = join(dir, "home", ".codex");
  geminiHome = join(dir, "home");
  qwenHome = join(dir, "home", ".qwen");
  piDir = join(dir, "home", ".pi", "agent");
  copilotHome = join(dir, "home", ".copilot");
  opencodeDir = join(dir, "home", ".config", "opencode");
  mkdirSync(project, { recursive: true });
});
afterEach(() => cleanup());

function setup(args: string[]) {
  return runCli(["--root", root, "setup", ...args], {
    env: {
      CODEX_HOME: codexHome,
      GEMINI_CLI_HOME: geminiHome,
      QWEN_HOME: qwenHome,
      PI_CODING_AGENT_DIR: piDir,
      COPILOT_HOME: copilotHome,
      OPENCODE_CONFIG_DIR: opencodeDir,
    },
  });
}

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8"));

const parseToml = (path: string) => parse(readFileSync(path, "utf8"));

describe("agent-chat setup", () => {
  it("never reads or writes through a link a cloned project planted (.mcp.json, .claude)", async () => {
    const outside = join(dir, "outside");
    mkdirSync(join(outside, "claude"), { recursive: true });
    writeFileSync(join(outside, "docker.json"), '{"auths":{"x":"SECRET"}}');
    symlinkSync(join(outside, "docker.json"), join(project, ".mcp.json"));
    const first = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/\.mcp\.json is a symbolic link; setup never reads or writes/);
    expect(first.stdout).not.toContain("SECRET");
    expect(readFileSync(join(outside, "docker.json"), "utf8")).toBe('{"auths":{"x":"SECRET"}}');
    rmSync(join(project, ".mcp.json"));
    symlinkSync(join(outside, "claude"), join(project, ".claude"));
    const second = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/\.claude is a symbolic link/);
    expect(readdirSync(join(outside, "claude"))).toEqual([]);
  });

  it("claude-code: the committed .mcp.json names no one; identity, root, approval and hooks are local", async () => {
    const r = await setup(["claude-code", "--as", "alice", "--dir", project, "--json"]);
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan.files.map((f: { path: string }) => f.path)).toEqual([
      join(project, ".mcp.json"),
      join(project, ".claude", "settings.local.json"),
    ]);
    const mcp = JSON.parse(plan.files[0].snippet);
    // alwaysLoad: the tools are listed to the model, not deferred behind Claude Code's ToolSearch.
    expect(mcp.mcpServers["agent-chat"]).toEqual({
      type: "stdio",
      command: "agent-chat",
      args: ["mcp"],
      alwaysLoad: true,
    });
    expect(plan.files[0].snippet).not.toContain("alice");
    expect(plan.files[0].snippet).not.toContain(root);
    const local = JSON.parse(plan.files[1].snippet);
    expect(local.env).toEqual({ AGENT_CHAT_NAME: "alice", AGENT_CHAT_ROOT: root });
    expect(local.enabledMcpjsonServers).toEqual(["agent-chat"]);
    // Every tool but chat_workspace (it can delete) runs unasked.
    expect(local.permissions).toEqual({
      allow: [
        "mcp__agent-chat__chat_channels",
        "mcp__agent-chat__chat_create_channel",
        "mcp__agent-chat__chat_post",
        "mcp__agent-chat__chat_read",
        "mcp__agent-chat__chat_wait",
        "mcp__agent-chat__chat_tasks",
      ],
    });
    expect(Object.keys(local.hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
    expect(local.hooks.SessionStart[0].hooks[0]).toEqual({
      type: "command",
      command: `agent-chat --root '${root}' hook session-start --as alice --format claude`,
      timeout: 10,
    });
    expect(plan.oneCommand).toBe(
      `claude mcp add agent-chat --scope local --env AGENT_CHAT_NAME=alice --env 'AGENT_CHAT_ROOT=${root}' -- agent-chat mcp`,
    );
    const human = await setup(["claude-code", "--as", "alice", "--dir", project]);
    expect(human.stdout).toContain(`# ${join(project, ".mcp.json")}\n{`);
    expect(human.stdout).toContain(plan.oneCommand);
  });

  it("claude-code --write merges, approves the server, cleans what an older setup committed, and is idempotent", async () => {
    writeFileSync(
      join(project, ".mcp.json"),
      JSON.stringify({
        mcpServers: {
          github: { command: "gh-mcp" },
          "agent-chat": { command: "agent-chat", args: ["mcp", "--as", "old"] },
        },
      }),
    );
    mkdirSync(join(project, ".claude"));
    const otherHook = { type: "command", command: "echo other" };
    const oldHook = {
      type: "command",
      command: "agent-chat --root /x hook stop --as old --format claude",
    };
    writeFileSync(
      join(project, ".claude", "settings.json"),
      JSON.stringify({
        permissions: { allow: ["Bash(ls)"] },
        hooks: { Stop: [{ hooks: [otherHook, oldHook] }], SessionStart: [{ hooks: [oldHook] }] },
      }),
    );
    writeFileSync(
      join(project, ".claude", "settings.local.json"),
      JSON.stringify({
        enabledMcpjsonServers: ["github"],
        permissions: { allow: ["Bash(ls)", "mcp__agent-chat__chat_read"], deny: ["Bash(rm)"] },
        env: { OTHER: "1" },
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [otherHook] }] },
      }),
    );
    const first = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`updated ${join(project, ".mcp.json")}`);
    expect(first.stdout).toContain("Left for you to do:\n  - Claude Code: start `claude`");
    // Again, as someone else: replaces our entries instead of adding a second set.
    const second = await setup(["claude-code", "--as", "bob", "--dir", project, "--write"]);
    expect(second.code).toBe(0);

    const mcp = readJson(join(project, ".mcp.json"));
    expect(Object.keys(mcp.mcpServers)).toEqual(["github", "agent-chat"]);
    expect(mcp.mcpServers["agent-chat"].args).toEqual(["mcp"]);
    const shared = readJson(join(project, ".claude", "settings.json"));
    expect(shared).toEqual({
      permissions: { allow: ["Bash(ls)"] },
      hooks: { Stop: [{ hooks: [otherHook] }] },
    });
    const local = readJson(join(project, ".claude", "settings.local.json"));
    expect(local.enabledMcpjsonServers).toEqual(["github", "agent-chat"]);
    // The user's rules stay; ours are added once, whatever was there already.
    expect(local.permissions.deny).toEqual(["Bash(rm)"]);
    expect(local.permissions.allow).toEqual([
      "Bash(ls)",
      "mcp__agent-chat__chat_read",
      "mcp__agent-chat__chat_channels",
      "mcp__agent-chat__chat_create_channel",
      "mcp__agent-chat__chat_post",
      "mcp__agent-chat__chat_wait",
      "mcp__agent-chat__chat_tasks",
    ]);
    expect(local.env).toEqual({ OTHER: "1", AGENT_CHAT_NAME: "bob", AGENT_CHAT_ROOT: root });
    expect(local.hooks.PreToolUse).toEqual([{ matcher: "Bash", hooks: [otherHook] }]);
    expect(local.hooks.Stop).toHaveLength(1);
    expect(local.hooks.Stop[0].hooks[0].command).toContain("hook stop --as bob");

    const third = await setup(["claude-code", "--as", "bob", "--dir", project, "--write"]);
    expect(third.stdout).toContain(`unchanged ${join(project, ".mcp.json")}`);
    expect(third.stdout).not.toContain("updated");
  });

  it("claude-code: keeps the file that names the agent out of git, in the repository's own exclude list", async () => {
    const git = (args: string[], cwd = project) =>
      execFileSync("git", args, { cwd, encoding: "utf8" });
    git(["init", "-q"]);
    const sub = join(project, "app");
    mkdirSync(sub);
    const exclude = join(project, ".git", "info", "exclude");
    writeFileSync(exclude, "# mine\n*.log");
    const r = await setup(["claude-code", "--as", "alice", "--dir", sub, "--write"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`updated ${exclude}`);
    expect(r.stdout).toMatch(/Kept out of git: \.claude\/settings\.local\.json .*info\/exclude/);
    // Twice: the line is there once; the user's lines stay.
    await setup(["claude-code", "--as", "alice", "--dir", sub, "--write"]);
    expect(readFileSync(exclude, "utf8")).toBe(
      "# mine\n*.log\n# agent-chat setup: per-user files (identity, root)\n/app/.claude/settings.local.json\n",
    );
    // `git add .` then takes the team's .mcp.json and not the file that names alice.
    expect(git(["status", "--porcelain", "--untracked-files=all"])).toBe("?? app/.mcp.json\n");
    // Outside a repository there is nothing to exclude, and setup says nothing of it.
    const loose = join(dir, "loose");
    mkdirSync(loose);
    const outside = await setup(["claude-code", "--as", "alice", "--dir", loose, "--write"]);
    expect(outside.code).toBe(0);
    expect(outside.stdout).not.toContain("Kept out of git");
  });

  it("the hook commands it writes run and print the notice", async () => {
    await initChannels(root, { review: ["alice", "bob"] });
    await runCli(["post", "review", "--from", "alice", "--body", "hi bob"], { root });
    await setup(["claude-code", "--as", "bob", "--dir", project, "--write", "--command", CLI]);
    const settings = readJson(join(project, ".claude", "settings.local.json"));
    const command = settings.hooks.UserPromptSubmit[0].hooks[0].command;
    const out = execFileSync("sh", ["-c", command], {
      input: JSON.stringify({ hook_event_name: "UserPromptSubmit", prompt: "go" }),
      encoding: "utf8",
    });
    expect(out).toContain("1 unread agent-chat message for bob (review: 1)");
  });

  it("claude-code --wake adds the async rewake hook at Stop and at session start, once; without --wake nothing changes, --no-wake removes it", async () => {
    const plain = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(plain.stdout).toContain(
      "note: --wake also wakes an idle session when a message arrives",
    );
    const local = join(project, ".claude", "settings.local.json");
    expect(readJson(local).hooks.Stop).toHaveLength(1);

    const wake = await setup([
      "claude-code",
      "--as",
      "alice",
      "--dir",
      project,
      "--write",
      "--wake",
    ]);
    expect(wake.code).toBe(0);
    expect(wake.stdout).toContain(`updated ${local}`);
    expect(wake.stdout).toMatch(
      /note: Wake: a second Stop hook \(hook wait, "async": true, "asyncRewake": true\), also run at session start, parks while the session is idle/,
    );
    const waitHook = {
      type: "command",
      command: `agent-chat --root '${root}' hook wait --as alice`,
      async: true,
      asyncRewake: true,
      timeout: 3660,
    };
    const { Stop: stop, SessionStart: start } = readJson(local).hooks;
    expect(stop).toHaveLength(2);
    expect(stop[0].hooks[0].command).toContain("hook stop --as alice");
    expect(stop[1]).toEqual({ hooks: [waitHook] });
    // At session start too: a session that had no turn yet is woken (through its inbox socket).
    expect(start).toHaveLength(2);
    expect(start[0].hooks[0].command).toContain("hook session-start --as alice");
    expect(start[1]).toEqual({ matcher: "startup|resume", hooks: [waitHook] });
    const written = readFileSync(local, "utf8");
    // Again with --wake: the same file; again without: the wake hook is left as it is.
    const again = await setup([
      "claude-code",
      "--as",
      "alice",
      "--dir",
      project,
      "--write",
      "--wake",
    ]);
    expect(again.stdout).toContain(`unchanged ${local}`);
    const without = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(without.stdout).toContain(`unchanged ${local}`);
    expect(readFileSync(local, "utf8")).toBe(written);
    // As someone else, without --wake: kept, for the new identity; --no-wake takes it out.
    await setup(["claude-code", "--as", "bob", "--dir", project, "--write"]);
    expect(readJson(local).hooks.Stop[1].hooks[0].command).toContain("hook wait --as bob");
    await setup(["claude-code", "--as", "bob", "--dir", project, "--write", "--no-wake"]);
    expect(readJson(local).hooks.Stop).toHaveLength(1);
    expect(readJson(local).hooks.SessionStart).toHaveLength(1);
    // Printed instead of written, the snippet carries it too.
    const printed = await setup(["claude-code", "--as", "alice", "--dir", project, "--wake"]);
    expect(printed.stdout).toContain('"asyncRewake": true');
  });

  it("codex and gemini --wake: the hooks that mark turns, and the exact `agent-chat run` line to start the tool with", async () => {
    for (const [tool, binary, stop] of [
      ["codex", "codex", "Stop"],
      ["gemini", "gemini", "AfterAgent"],
    ] as const) {
      const r = await setup([tool, "--as", "alice", "--dir", project, "--write", "--wake"]);
      expect(r.code, r.stderr).toBe(0);
      const line = `agent-chat --root '${root}' run --as alice -- ${binary}`;
      const todo = r.stdout.slice(r.stdout.indexOf("Left for you to do:"));
      expect(todo).toContain(`start it as \`${line}\``);
      expect(r.stdout).toContain(`its ${stop} hook marks the end of each turn`);
      const hooksFile =
        tool === "codex"
          ? join(codexHome, "hooks.json")
          : join(geminiHome, ".gemini", "settings.json");
      const hooks = readJson(hooksFile).hooks;
      expect(JSON.stringify(hooks[stop])).toContain("hook stop --as alice");
      // Without --wake no line is offered.
      const plain = await setup([tool, "--as", "alice", "--dir", project, "--write"]);
      expect(plain.stdout).not.toContain(" run --as alice");
    }
  });

  it("refuses to overwrite a settings file that is not valid JSON", async () => {
    const path = join(project, ".mcp.json");
    writeFileSync(path, "{ broken");
    const r = await setup(["claude-code", "--as", "alice", "--dir", project, "--write"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${path} is not valid JSON`);
    expect(readFileSync(path, "utf8")).toBe("{ broken");
  });

  it("qwen: the server, the rules for the chat tools and the hooks go in the user's settings, merged", async () => {
    const settings = join(qwenHome, "settings.json");
    mkdirSync(qwenHome, { recursive: true });
    // The user's own settings: a provider and a rule of theirs stay.
    writeFileSync(
      settings,
      JSON.stringify({
        security: { auth: { selectedType: "openai" } },
        permissions: { allow: ["Bash(git *)"] },
      }),
    );
    // A team's project file that an older setup filled for one person is cleaned.
    mkdirSync(join(project, ".qwen"));
    const shared = join(project, ".qwen", "settings.json");
    writeFileSync(
      shared,
      JSON.stringify({
        mcpServers: { "agent-chat": { command: "agent-chat", args: ["mcp", "--as", "bob"] } },
      }),
    );
    const r = await setup(["qwen", "--as", "alice", "--dir", project, "--write"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = readJson(settings);
    expect(doc.security).toEqual({ auth: { selectedType: "openai" } });
    expect(doc.mcpServers["agent-chat"]).toEqual({
      command: "agent-chat",
      args: ["mcp", "--as", "alice"],
      env: { AGENT_CHAT_ROOT: root },
      timeout: 960000,
      alwaysLoadTools: true,
    });
    // Every chat tool but chat_workspace (it can delete) runs without asking; no server trust.
    expect(doc.permissions.allow).toEqual([
      "Bash(git *)",
      ...["channels", "create_channel", "post", "read", "wait", "tasks"].map(
        (t) => `mcp__agent-chat__chat_${t}`,
      ),
    ]);
    expect(JSON.stringify(doc)).not.toContain('"trust"');
    expect(Object.keys(doc.hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
    expect(doc.hooks.UserPromptSubmit[0].hooks[0]).toEqual({
      type: "command",
      command: `agent-chat --root '${root}' hook prompt --as alice --format qwen`,
      timeout: 10,
    });
    expect(readJson(shared)).toEqual({ mcpServers: {} });
    // Again: nothing changes.
    const again = await setup(["qwen", "--as", "alice", "--dir", project, "--write"]);
    expect(again.stdout).toContain(`unchanged ${settings}`);
  });

  it("pi: the server and hooks go in agent-chat.json of the user's pi folder, with the extension that reads it", async () => {
    const config = join(piDir, "agent-chat.json");
    const extension = join(piDir, "extensions", "agent-chat.js");
    // Without --write: what would be written, and no one command (pi has none for a server).
    const shown = await setup(["pi", "--as", "alice", "--dir", project]);
    expect(shown.stdout).toContain(`# ${config}`);
    expect(shown.stdout).not.toContain("one command");
    const r = await setup(["pi", "--as", "alice", "--dir", project, "--write"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = readJson(config);
    expect(doc.mcpServers["agent-chat"]).toEqual({
      command: "agent-chat",
      args: ["mcp", "--as", "alice"],
      env: { AGENT_CHAT_ROOT: root, AGENT_CHAT_HARNESS: "pi" },
    });
    expect(Object.keys(doc.hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
    expect(doc.hooks.Stop).toEqual([
      {
        hooks: [
          {
            type: "command",
            command: `agent-chat --root '${root}' hook stop --as alice --format pi`,
            timeout: 10,
          },
        ],
      },
    ]);
    // The extension names no one: it reads the file above.
    const code = readFileSync(extension, "utf8");
    expect(code).toContain(`const CONFIG = ${JSON.stringify(config)};`);
    expect(code).not.toContain("alice");
    // --wake: the Stop hook the extension parks in the background; --no-wake takes it out.
    await setup(["pi", "--as", "alice", "--dir", project, "--write", "--wake"]);
    expect(readJson(config).hooks.Stop[1].hooks[0]).toEqual({
      type: "command",
      command: `agent-chat --root '${root}' hook wait --as alice`,
      asyncRewake: true,
    });
    await setup(["pi", "--as", "alice", "--dir", project, "--write", "--no-wake"]);
    expect(readJson(config).hooks.Stop).toHaveLength(1);
    const again = await setup(["pi", "--as", "alice", "--dir", project, "--write"]);
    expect(again.stdout).toContain(`unchanged ${config}`);
    expect(again.stdout).toContain(`unchanged ${extension}`);
  });

  it("copilot: the server, the hooks and the approvals of the chat tools for the repository go in the user's folder, merged", async () => {
    mkdirSync(copilotHome, { recursive: true });
    const servers = join(copilotHome, "mcp-config.json");
    const settings = join(copilotHome, "settings.json");
    const approvals = join(copilotHome, "permissions-config.json");
    // The user's own: another server, a setting, an approval they gave here and elsewhere.
    writeFileSync(servers, JSON.stringify({ mcpServers: { other: { command: "other" } } }));
    writeFileSync(settings, JSON.stringify({ banner: "never" }));
    const theirs = { kind: "commands", commandIdentifiers: ["git status"] };
    writeFileSync(
      approvals,
      JSON.stringify({
        locations: {
          [project]: { tool_approvals: [theirs] },
          "/elsewhere": { tool_approvals: [] },
        },
      }),
    );
    // Set up from a folder inside the repository: Copilot keys approvals by the repository.
    execFileSync("git", ["init", "-q", project]);
    mkdirSync(join(project, "sub"));
    const r = await setup(["copilot", "--as", "alice", "--dir", join(project, "sub"), "--write"]);
    expect(r.code, r.stderr).toBe(0);
    expect(readJson(servers).mcpServers).toEqual({
      other: { command: "other" },
      "agent-chat": {
        type: "local",
        command: "agent-chat",
        args: ["mcp", "--as", "alice"],
        env: { AGENT_CHAT_ROOT: root },
        tools: ["*"],
        timeout: 960000,
      },
    });
    const doc = readJson(settings);
    expect(doc.banner).toBe("never");
    expect(Object.keys(doc.hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
    expect(doc.hooks.UserPromptSubmit[0].hooks[0]).toEqual({
      type: "command",
      command: `agent-chat --root '${root}' hook prompt --as alice --format copilot`,
      timeout: 10,
    });
    // Every chat tool but chat_workspace (it can delete), as Copilot's own answer records it.
    const ours = ["channels", "create_channel", "post", "read", "wait", "tasks"].map((t) => ({
      kind: "mcp",
      serverName: "agent-chat",
      toolName: `chat_${t}`,
    }));
    expect(readJson(approvals).locations).toEqual({
      [project]: { tool_approvals: [theirs, ...ours] },
      "/elsewhere": { tool_approvals: [] },
    });
    // Again: nothing changes.
    const again = await setup(["copilot", "--as", "alice", "--dir", project, "--write"]);
    for (const path of [servers, settings, approvals]) {
      expect(again.stdout).toContain(`unchanged ${path}`);
    }
  });

  it("opencode: the server and allow rules after the user's own go in its config, the hooks in our plugin", async () => {
    const config = join(opencodeDir, "opencode.json");
    mkdirSync(opencodeDir, { recursive: true });
    // A user who made OpenCode ask before every tool, with a provider of theirs: both stay.
    writeFileSync(
      config,
      JSON.stringify({
        model: "mine/m",
        permission: { "*": "ask", "agent-chat_chat_post": "ask" },
      }),
    );
    const r = await setup(["opencode", "--as", "alice", "--dir", project, "--write"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = readJson(config);
    expect(doc.model).toBe("mine/m");
    expect(doc.mcp["agent-chat"]).toEqual({
      type: "local",
      command: ["agent-chat", "mcp", "--as", "alice"],
      environment: { AGENT_CHAT_ROOT: root },
      enabled: true,
      timeout: 960000,
    });
    // OpenCode takes the last rule that matches: ours come after the user's "*": "ask".
    expect(Object.entries(doc.permission)).toEqual([
      ["*", "ask"],
      ...["channels", "create_channel", "post", "read", "wait", "tasks"].map((t) => [
        `agent-chat_chat_${t}`,
        "allow",
      ]),
    ]);
    const plugin = readFileSync(join(opencodeDir, "plugins", "agent-chat.js"), "utf8");
    const hooks = JSON.parse(/^const HOOKS = (.*);$/m.exec(plugin)![1]!);
    expect(Object.keys(hooks)).toEqual(["session.created", "chat.message", "session.idle"]);
    expect(hooks["chat.message"][0].hooks[0].command).toBe(
      `agent-chat --root '${root}' hook prompt --as alice --format opencode`,
    );
    // The wake is the plugin's: a parked hook wait after the stop hook, on by default.
    expect(hooks["session.idle"][1].hooks[0].command).toBe(
      `agent-chat --root '${root}' hook wait --as alice`,
    );
    const again = await setup(["opencode", "--as", "alice", "--dir", project, "--write"]);
    expect(again.stdout).toContain(`unchanged ${config}`);
    // --no-wake takes the wait out, and a later setup without the flag keeps it out.
    await setup(["opencode", "--as", "alice", "--dir", project, "--write", "--no-wake"]);
    await setup(["opencode", "--as", "alice", "--dir", project, "--write"]);
    const unwoken = readFileSync(join(opencodeDir, "plugins", "agent-chat.js"), "utf8");
    const idle = JSON.parse(/^const HOOKS = (.*);$/m.exec(unwoken)![1]!)["session.idle"];
    expect(JSON.stringify(idle)).not.toContain(" hook wait ");
    expect(JSON.stringify(idle)).toContain(" hook stop ");
  });

  it("gemini: the server and hooks go in the user's settings; --trust trusts the folder", async () => {
    mkdirSync(join(geminiHome, ".gemini"), { recursive: true });
    const userSettings = join(geminiHome, ".gemini", "settings.json");
    writeFileSync(
      userSettings,
      JSON.stringify({ theme: "GitHub", mcpServers: { other: { command: "x" } } }),
    );
    // What an older setup wrote into the project file (which teams commit).
    mkdirSync(join(project, ".gemini"));
    const projectSettings = join(project, ".gemini", "settings.json");
    writeFileSync(
      projectSettings,
      JSON.stringify({
        mcpServers: { "agent-chat": { command: "agent-chat", args: ["mcp", "--as", "old"] } },
        hooks: {
          BeforeAgent: [
            {
              hooks: [
                {
                  type: "command",
                  command: "agent-chat --root /x hook prompt --as old --format gemini",
                },
              ],
            },
          ],
        },
        contextFileName: "AGENTS.md",
      }),
    );
    const r = await setup(["gemini", "--as", "carol", "--dir", project, "--write"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Gemini CLI: trust ${project}`);
    const settings = readJson(userSettings);
    expect(settings.theme).toBe("GitHub");
    expect(Object.keys(settings.mcpServers)).toEqual(["other", "agent-chat"]);
    expect(settings.mcpServers["agent-chat"]).toMatchObject({
      command: "agent-chat",
      args: ["mcp", "--as", "carol"],
      env: { AGENT_CHAT_ROOT: root },
    });
    // A policy of the user's lets every tool but chat_workspace run in the default approval mode.
    const policy = parseToml(join(geminiHome, ".gemini", "policies", "agent-chat.toml"));
    expect(policy.rule).toEqual([
      {
        mcpName: "agent-chat",
        toolName: [
          "chat_channels",
          "chat_create_channel",
          "chat_post",
          "chat_read",
          "chat_wait",
          "chat_tasks",
        ],
        decision: "allow",
        priority: 100,
        modes: ["default", "autoEdit", "yolo"],
      },
    ]);
    expect(settings.tools).toBeUndefined();
    expect(Object.keys(settings.hooks)).toEqual(["SessionStart", "BeforeAgent", "AfterAgent"]);
    expect(settings.hooks.BeforeAgent[0].hooks[0].command).toContain(
      "hook prompt --as carol --format gemini",
    );
    expect(readJson(projectSettings)).toEqual({
      mcpServers: {},
      hooks: {},
      contextFileName: "AGENTS.md",
    });
    const trusted = join(geminiHome, ".gemini", "trustedFolders.json");
    expect(existsSync(trusted)).toBe(false);

    const trust = await setup(["gemini", "--as", "carol", "--dir", project, "--write", "--trust"]);
    expect(trust.code).toBe(0);
    expect(readJson(trusted)).toEqual({ [project]: "TRUST_FOLDER" });
    expect(trust.stdout).not.toContain("Gemini CLI: trust");

    const printed = JSON.parse(
      (await setup(["gemini", "--as", "carol", "--dir", project, "--json"])).stdout,
    );
    expect(printed.oneCommand).toBe(
      `gemini mcp add --scope user -e AGENT_CHAT_NAME=carol -e 'AGENT_CHAT_ROOT=${root}' agent-chat agent-chat mcp`,
    );
  });

  it("codex: merges into config.toml keeping comments, writes no deprecated codex_hooks, says to trust the hooks", async () => {
    mkdirSync(codexHome, { recursive: true });
    const configPath = join(codexHome, "config.toml");
    writeFileSync(
      configPath,
      [
        "# my codex settings",
        'model = "gpt-5" # the default',
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
        "codex_hooks = true",
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
    expect(printed.files[0].snippet).not.toContain("hooks");
    const r = await setup(["codex", "--as", "dave", "--write", "--tools-approval", "approve"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "Left for you to do:\n  - Codex: start `codex`, open /hooks and trust",
    );
    await setup(["codex", "--as", "dave", "--write", "--tools-approval", "approve"]);
    const text = readFileSync(configPath, "utf8");
    expect(text).toContain('# my codex settings\nmodel = "gpt-5" # the default\n');
    expect(parseToml(configPath)).toEqual({
      model: "gpt-5",
      mcp_servers: {
        github: { command: "gh-mcp" },
        "agent-chat": {
          command: "agent-chat",
          args: ["mcp", "--as", "dave"],
          env: { AGENT_CHAT_ROOT: root },
          tool_timeout_sec: 960,
          required: true,
          default_tools_approval_mode: "approve",
        },
      },
      features: { web_search: true },
      profiles: { fast: { model: "gpt-5-mini" } },
    });
    const hooks = readJson(join(codexHome, "hooks.json")).hooks;
    expect(Object.keys(hooks)).toEqual(["SessionStart", "UserPromptSubmit", "Stop"]);
    expect(hooks.Stop[0].hooks[0].command).toContain("hook stop --as dave --format codex");

    // A fresh home: the file is created, parses, and turns on no feature (hooks are on by default).
    const fresh = join(dir, "fresh");
    await runCli(["--root", root, "setup", "codex", "--as", "dave", "--write"], {
      env: { CODEX_HOME: fresh },
    });
    const created = parseToml(join(fresh, "config.toml"));
    expect(created).toMatchObject({
      mcp_servers: { "agent-chat": { args: ["mcp", "--as", "dave"] } },
    });
    expect(created).not.toHaveProperty("features");
    expect(created.mcp_servers).not.toHaveProperty("agent-chat.default_tools_approval_mode");
  });

  it("codex: refuses a config.toml that does not parse, and writes nothing", async () => {
    mkdirSync(codexHome, { recursive: true });
    const configPath = join(codexHome, "config.toml");
    const broken = '[mcp_servers.github]\ncommand = "gh-mcp\n';
    writeFileSync(configPath, broken);
    const r = await setup(["codex", "--as", "dave", "--write"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${configPath} is not valid TOML`);
    expect(readFileSync(configPath, "utf8")).toBe(broken);
    expect(existsSync(join(codexHome, "hooks.json"))).toBe(false);
    // An entry setup cannot replace (a dotted key) is refused too, instead of written twice.
    const dotted = 'mcp_servers.agent-chat.command = "x"\n';
    writeFileSync(configPath, dotted);
    const twice = await setup(["codex", "--as", "dave", "--write"]);
    expect(twice.code).toBe(1);
    expect(readFileSync(configPath, "utf8")).toBe(dotted);
    const badMode = await setup(["codex", "--as", "dave", "--tools-approval", "always"]);
    expect(badMode.code).toBe(64);
  });

  it("needs an identity and a known tool", async () => {
    const nameless = await setup(["codex"]);
    expect(nameless.code).toBe(64);
    expect(nameless.stderr).toContain("--as NAME is required");
    const unknown = await setup(["cursor", "--as", "x"]);
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toContain("claude-code, codex, gemini");
  });
});
