import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { connectAgent } from "./client.js";

let dir: string;
let cleanup: () => void;
let root: string;
let project: string;
let home: string;

beforeEach(() => {
  ({ dir, cleanup } = tempDir("agent-chat-doctor-"));
  root = join(dir, "chat root");
  project = join(dir, "project");
  home = join(dir, "home");
  mkdirSync(project, { recursive: true });
  mkdirSync(home, { recursive: true });
});
afterEach(() => cleanup());

/** The CLI as a user runs it in a fresh machine: its own HOME, in the project folder. */
function cli(args: string[], rootPath = root) {
  return runCli(["--root", rootPath, ...args], {
    cwd: project,
    env: {
      HOME: home,
      CODEX_HOME: join(home, ".codex"),
      GEMINI_CLI_HOME: home,
      COPILOT_HOME: join(home, ".copilot"),
      OPENCODE_CONFIG_DIR: join(home, ".config", "opencode"),
      XDG_STATE_HOME: join(home, ".state"),
    },
    timeoutMs: 40_000,
  });
}

/** The check lines of the text output, by check name. */
function lines(stdout: string): Record<string, string> {
  const byName: Record<string, string> = {};
  for (const line of stdout.trim().split("\n")) {
    const m = /^(ok|warn|fail)\s+([a-z-]+): /.exec(line);
    if (m) byName[m[2]!] = line;
  }
  return byName;
}

describe("agent-chat doctor", () => {
  it("on a fresh machine, says each tool is not set up and how to set it up, and exits 1", async () => {
    const r = await cli(["doctor", "--as", "alice"]);
    expect(r.code).toBe(1);
    const l = lines(r.stdout);
    for (const tool of ["claude-code", "codex", "gemini", "qwen", "pi", "copilot", "opencode"]) {
      expect(l[tool]).toBe(
        `warn  ${tool}: not set up (run: agent-chat setup ${tool} --as alice --write)`,
      );
    }
    expect(l.tools).toMatch(/^fail {2}tools: agent-chat is set up in none of the agent tools/);
    expect(l.identity).toBe("ok    identity: alice");
    expect(l.root).toContain(`ok    root: ${root}`);
  });

  it("after setup claude-code: claude-code ok, the server lists its tools, the hook runs, exit 0", async () => {
    const setup = await cli(["setup", "claude-code", "--as", "alice", "--write"]);
    expect(setup.code).toBe(0);
    mkdirSync(root);
    const agent = await connectAgent(root, "alice");
    const expected = (await agent.client.listTools()).tools.length;
    await agent.close();
    expect(expected).toBeGreaterThan(0);

    const r = await cli(["doctor", "--as", "alice"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const l = lines(r.stdout);
    expect(l["claude-code"]).toBe(
      `ok    claude-code: server in ${join(project, ".mcp.json")}, hooks in ${join(project, ".claude", "settings.local.json")}`,
    );
    expect(l.server).toBe(`ok    server: starts and lists ${expected} tools`);
    expect(l.hook).toBe("ok    hook: runs (exit 0)");
    expect(l.root).toBe(`ok    root: ${root} (writable)`);
    // The tools the user does not use only warn; the write check left nothing behind.
    expect(l.codex).toMatch(/^warn {2}codex: not set up/);
    expect(l.tools).toBeUndefined();
    expect(readdirSync(root).filter((n) => n.startsWith(".agent-chat-doctor"))).toEqual([]);
  });

  it("right after setup, without --as or --root: the identity and the root come from the files setup wrote, exit 0", async () => {
    // As a user runs it: no --root, no AGENT_CHAT_ROOT, no AGENT_CHAT_NAME.
    const bare = (args: string[]) =>
      runCli(args, {
        cwd: project,
        env: {
          HOME: home,
          CODEX_HOME: join(home, ".codex"),
          GEMINI_CLI_HOME: home,
          XDG_STATE_HOME: join(home, ".state"),
          AGENT_CHAT_ROOT: undefined,
        },
        timeoutMs: 40_000,
      });
    expect((await cli(["setup", "claude-code", "--as", "alice", "--write"])).code).toBe(0);
    const local = join(project, ".claude", "settings.local.json");
    const r = await bare(["doctor"]);
    expect(r.stderr).toBe("");
    expect(r.code, r.stdout).toBe(0);
    const l = lines(r.stdout);
    expect(l.identity).toBe(`ok    identity: alice (from ${local})`);
    expect(l.root).toBe(
      `ok    root: ${root} (does not exist yet; created on first use), from ${local}`,
    );
    expect(l["claude-code"]).toMatch(/^ok {4}claude-code: /);
    expect(l.hook).toBe("ok    hook: runs (exit 0)");

    // Per tool: Codex's files say the same; a second identity is a question only --as answers.
    expect((await cli(["setup", "codex", "--as", "alice", "--write"])).code).toBe(0);
    expect((await bare(["doctor"])).code).toBe(0);
    expect((await cli(["setup", "codex", "--as", "bob", "--write"])).code).toBe(0);
    const two = await bare(["doctor"]);
    expect(two.code).toBe(1);
    expect(lines(two.stdout).identity).toBe(
      `fail  identity: the tools' files name alice (${local}), bob (${join(home, ".codex", "config.toml")}) (pass --as NAME or set AGENT_CHAT_NAME=NAME)`,
    );
    expect((await bare(["doctor", "--as", "bob", "--tool", "codex"])).code).toBe(0);
  });

  it("warns when a per-user file setup wrote is tracked by git, and says how to untrack it", async () => {
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
        cwd: project,
        encoding: "utf8",
      });
    // Committed before setup: the exclude list setup writes keeps only untracked files out.
    git("init", "-q");
    mkdirSync(join(project, ".claude"));
    writeFileSync(join(project, ".claude", "settings.local.json"), "{}\n");
    git("add", ".claude/settings.local.json");
    git("commit", "-q", "-m", "settings");
    expect((await cli(["setup", "claude-code", "--as", "alice", "--write"])).code).toBe(0);

    const tracked = await cli(["doctor", "--as", "alice"]);
    // A warning: the setup works, but the next commit shares who the agent is.
    expect(tracked.code, tracked.stdout).toBe(0);
    expect(lines(tracked.stdout).git).toBe(
      "warn  git: .claude/settings.local.json (claude-code) is tracked by git: it names the agent and the root, and a commit shares them (untrack it, keeping your copy: git rm --cached .claude/settings.local.json, then commit)",
    );
    const json = await cli(["--json", "doctor", "--as", "alice"]);
    expect(JSON.parse(json.stdout).checks).toContainEqual(
      expect.objectContaining({ check: "git", status: "warn" }),
    );

    // Doing what it says: no warning, and git status no longer offers the file.
    git("rm", "-q", "--cached", ".claude/settings.local.json");
    git("commit", "-q", "-m", "untrack");
    const untracked = await cli(["doctor", "--as", "alice"]);
    expect(untracked.code).toBe(0);
    expect(lines(untracked.stdout).git).toBeUndefined();
    expect(git("status", "--porcelain", "--untracked-files=all")).not.toContain("settings.local");
  });

  it("a tool named with --tool that is not set up fails, and the identity comes from the environment", async () => {
    const r = await runCli(["--root", root, "doctor", "--tool", "codex"], {
      cwd: project,
      env: { HOME: home, CODEX_HOME: join(home, ".codex"), AGENT_CHAT_NAME: "bob" },
    });
    expect(r.code).toBe(1);
    const l = lines(r.stdout);
    expect(l.codex).toBe("fail  codex: not set up (run: agent-chat setup codex --as bob --write)");
    expect(l["claude-code"]).toBeUndefined();
    expect(l.identity).toBe("ok    identity: bob");
  });

  it("hooks missing from a set-up tool warn; a settings file that does not parse fails with why", async () => {
    expect((await cli(["setup", "claude-code", "--as", "alice", "--write"])).code).toBe(0);
    writeFileSync(join(project, ".claude", "settings.local.json"), "{}\n");
    const warned = await cli(["doctor", "--as", "alice", "--tool", "claude-code"]);
    expect(warned.code).toBe(0);
    expect(lines(warned.stdout)["claude-code"]).toMatch(
      /^warn {2}claude-code: .*no agent-chat hook for SessionStart, UserPromptSubmit, Stop in .*settings\.local\.json \(run: agent-chat setup claude-code --as alice --write\)$/,
    );
    writeFileSync(join(project, ".mcp.json"), "{ not json");
    const failed = await cli(["doctor", "--as", "alice", "--tool", "claude-code"]);
    expect(failed.code).toBe(1);
    expect(lines(failed.stdout)["claude-code"]).toMatch(
      /^fail {2}claude-code: .*\.mcp\.json is not valid JSON.*\(fix or move aside that file, then run: agent-chat setup claude-code --as alice --write\)$/,
    );
    expect((await cli(["setup", "codex", "--as", "alice", "--write"])).code).toBe(0);
    expect(lines((await cli(["doctor", "--as", "alice", "--tool", "codex"])).stdout).codex).toBe(
      `ok    codex: server in ${join(home, ".codex", "config.toml")}, hooks in ${join(home, ".codex", "hooks.json")}`,
    );
    writeFileSync(join(home, ".codex", "config.toml"), "x = [\n");
    const toml = await cli(["doctor", "--as", "alice", "--tool", "codex"]);
    expect(toml.code).toBe(1);
    expect(lines(toml.stdout).codex).toMatch(
      /^fail {2}codex: .*config\.toml is not valid TOML \(.*\); Codex cannot start with it \(fix or move aside/,
    );
  });

  it("warns when a tool's files name another agent or root, or still wait for an approval", async () => {
    expect((await cli(["setup", "claude-code", "--as", "alice", "--write"])).code).toBe(0);
    const bob = await cli(["doctor", "--as", "bob", "--tool", "claude-code"]);
    expect(bob.code).toBe(0);
    expect(lines(bob.stdout)["claude-code"]).toMatch(
      /^warn {2}claude-code: .*its files run agent-chat as alice, not bob \(run: agent-chat setup claude-code --as bob --write\)$/,
    );
    const other = join(dir, "other root");
    const elsewhere = await cli(["doctor", "--as", "alice", "--tool", "claude-code"], other);
    expect(lines(elsewhere.stdout)["claude-code"]).toContain(
      `its files use the root ${root}, not ${other} (check that one: agent-chat --root '${root}' doctor`,
    );
    const local = join(project, ".claude", "settings.local.json");
    const settings = JSON.parse(readFileSync(local, "utf8"));
    delete settings.enabledMcpjsonServers;
    settings.permissions.allow = ["mcp__agent-chat__chat_read"];
    writeFileSync(local, JSON.stringify(settings));
    const mcpJson = join(project, ".mcp.json");
    const mcp = JSON.parse(readFileSync(mcpJson, "utf8"));
    delete mcp.mcpServers["agent-chat"].alwaysLoad;
    writeFileSync(mcpJson, JSON.stringify(mcp));
    const pending = await cli(["doctor", "--as", "alice", "--tool", "claude-code"]);
    expect(lines(pending.stdout)["claude-code"]).toMatch(
      /^warn {2}claude-code: .*Claude Code shows the server "Pending approval": agent-chat is not in enabledMcpjsonServers/,
    );
    expect(lines(pending.stdout)["claude-code"]).toContain(
      "Claude Code defers the chat tools behind ToolSearch (no alwaysLoad in .mcp.json); Claude Code asks before each call of chat_channels, chat_create_channel, chat_post, chat_wait, chat_tasks (no permissions.allow rule in",
    );

    expect((await cli(["setup", "gemini", "--as", "alice", "--write"])).code).toBe(0);
    const untrusted = await cli(["doctor", "--as", "alice", "--tool", "gemini"]);
    expect(untrusted.code).toBe(0);
    expect(lines(untrusted.stdout).gemini).toBe(
      `warn  gemini: server in ${join(home, ".gemini", "settings.json")}; Gemini CLI runs no server or hook in ${project}: it is not in ${join(home, ".gemini", "trustedFolders.json")} (run: agent-chat setup gemini --as alice --write --trust, or answer Gemini's trust question)`,
    );
    expect((await cli(["setup", "gemini", "--as", "alice", "--write", "--trust"])).code).toBe(0);
    const trusted = await cli(["doctor", "--as", "alice", "--tool", "gemini"]);
    expect(lines(trusted.stdout).gemini).toMatch(/^ok {4}gemini: server in /);
    const policy = join(home, ".gemini", "policies", "agent-chat.toml");
    rmSync(policy);
    const asks = await cli(["doctor", "--as", "alice", "--tool", "gemini"]);
    expect(lines(asks.stdout).gemini).toContain(
      `Gemini CLI asks before each chat tool call (no ${policy})`,
    );
  });

  it("compares a NATS root by its namespace and servers, not its spelling or credentials", async () => {
    const teamA = "nats://u:secret@127.0.0.1:1/team-a";
    expect((await cli(["setup", "claude-code", "--as", "alice", "--write"], teamA)).code).toBe(0);
    const same = await cli(
      ["doctor", "--as", "alice", "--tool", "claude-code"],
      "NATS://127.0.0.1:1/team-a",
    );
    expect(lines(same.stdout).root).toBe(
      "ok    root: nats://127.0.0.1:1/team-a (a NATS root: no folder to check)",
    );
    expect(lines(same.stdout)["claude-code"]).not.toContain("its files use the root");
    const teamB = await cli(
      ["doctor", "--as", "alice", "--tool", "claude-code"],
      "nats://127.0.0.1:1/team-b",
    );
    expect(teamB.stdout).not.toContain("secret");
    expect(lines(teamB.stdout)["claude-code"]).toContain(
      "its files use the root nats://127.0.0.1:1/team-a, not nats://127.0.0.1:1/team-b",
    );
  });

  it("a root that is a link, a file, or under a file fails with the reason", async () => {
    const real = join(dir, "real");
    mkdirSync(real);
    symlinkSync(real, root);
    const linked = await cli(["doctor", "--as", "alice"]);
    expect(linked.code).toBe(1);
    expect(lines(linked.stdout).root).toBe(
      `fail  root: ${root} is a symbolic link; agent-chat never follows one in a root (give the real folder with --root or AGENT_CHAT_ROOT)`,
    );

    const file = join(dir, "a-file");
    writeFileSync(file, "x");
    const notFolder = await cli(["doctor", "--as", "alice"], file);
    expect(notFolder.code).toBe(1);
    expect(lines(notFolder.stdout).root).toMatch(/^fail {2}root: .*a-file is not a folder/);

    const under = await cli(["doctor", "--as", "alice"], join(file, "chat"));
    expect(under.code).toBe(1);
    expect(lines(under.stdout).root).toMatch(
      /^fail {2}root: .*a-file\/chat does not exist and cannot be created \(.*a-file is not a folder\)/,
    );
  });

  it("no identity fails and names how to set it; an invalid one fails too", async () => {
    const none = await cli(["doctor"]);
    expect(none.code).toBe(1);
    const l = lines(none.stdout);
    expect(l.identity).toBe(
      "fail  identity: no identity (pass --as NAME or set AGENT_CHAT_NAME=NAME)",
    );
    expect(l.codex).toContain("agent-chat setup codex --as NAME --write");
    const invalid = await cli(["doctor", "--as", "../x"]);
    expect(invalid.code).toBe(1);
    expect(lines(invalid.stdout).identity).toMatch(/^fail {2}identity: /);
  });

  it("--json prints one document: ok and every check with status, message and fix", async () => {
    expect((await cli(["setup", "claude-code", "--as", "alice", "--write"])).code).toBe(0);
    const r = await cli(["--json", "doctor", "--as", "alice"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as {
      ok: boolean;
      checks: { check: string; status: string; message: string; fix?: string }[];
    };
    expect(report.ok).toBe(true);
    expect(report.checks.map((c) => c.check)).toEqual([
      "root",
      "path",
      "identity",
      "claude-code",
      "codex",
      "gemini",
      "qwen",
      "pi",
      "copilot",
      "opencode",
      "claude-code wake",
      "server",
      "hook",
    ]);
    expect(report.checks.find((c) => c.check === "gemini")).toEqual({
      check: "gemini",
      status: "warn",
      message: "not set up",
      fix: "run: agent-chat setup gemini --as alice --write",
    });
    expect(report.checks.find((c) => c.check === "hook")).toEqual({
      check: "hook",
      status: "ok",
      message: "runs (exit 0)",
    });
  });

  it("names which agent-chat is on PATH: chat.py's console script first warns, and setup avoids it", async () => {
    // chat.py 0.7's console script (PyPI agent-chat-plugin) as pip installs it, and ours.
    const python = join(dir, "venv-bin");
    const ours = join(dir, "npm-bin");
    mkdirSync(python);
    mkdirSync(ours);
    writeFileSync(
      join(python, "agent-chat"),
      "#!/opt/venv/bin/python3\nimport sys\nfrom chat import main\nsys.exit(main())\n",
      { mode: 0o755 },
    );
    symlinkSync(CLI, join(ours, "agent-chat"));
    const withPath = (path: string, args: string[]) =>
      runCli(["--root", root, ...args], {
        cwd: project,
        env: { HOME: home, CODEX_HOME: join(home, ".codex"), GEMINI_CLI_HOME: home, PATH: path },
        timeoutMs: 40_000,
      });
    const shadowed = await withPath(`${python}:${ours}:${process.env.PATH}`, [
      "doctor",
      "--as",
      "alice",
    ]);
    expect(lines(shadowed.stdout).path).toBe(
      `warn  path: agent-chat on PATH is chat.py 0.7's (Python, agent-chat-plugin), ${join(python, "agent-chat")}, not ours ` +
        `(put ours first on PATH, or run ours by its path (${CLI}); setup then writes that path into the hooks and MCP entries (or pass --command))`,
    );
    const setup = await withPath(`${python}:${ours}:${process.env.PATH}`, [
      "setup",
      "claude-code",
      "--as",
      "alice",
      "--write",
    ]);
    expect(setup.code, setup.stderr).toBe(0);
    expect(setup.stderr).toContain("is chat.py's: the entries start");
    const mcp = JSON.parse(readFileSync(join(project, ".mcp.json"), "utf8"));
    expect(mcp.mcpServers["agent-chat"].command).toBe(CLI);

    const first = await withPath(`${ours}:${python}:${process.env.PATH}`, [
      "doctor",
      "--as",
      "alice",
    ]);
    expect(lines(first.stdout).path).toBe(
      `ok    path: agent-chat on PATH is ours, ${join(ours, "agent-chat")}; chat.py's is also installed, at ${join(python, "agent-chat")} (run it by that path)`,
    );
  });

  it("a server or hook that does not answer in time fails and is not waited for", async () => {
    // Node alone takes longer than a millisecond to start: both children are stopped at the deadline.
    const r = await cli(["doctor", "--as", "alice", "--timeout", "0.001"]);
    expect(r.code).toBe(1);
    const l = lines(r.stdout);
    expect(l.server).toBe(
      "fail  server: no answer to tools/list within 1 ms (run it yourself to see why: agent-chat mcp --as alice)",
    );
    expect(l.hook).toMatch(/^fail {2}hook: did not finish within 1 ms \(run it yourself/);
  });

  it("says which path wakes each set-up tool's idle session, from the files setup wrote", async () => {
    mkdirSync(root);
    const wakeLine = (stdout: string, tool: string) =>
      stdout.split("\n").find((line) => line.startsWith(`ok    ${tool} wake: `));
    await cli(["setup", "claude-code", "--as", "alice", "--write"]);
    const plain = await cli(["doctor", "--as", "alice", "--tool", "claude-code"]);
    expect(wakeLine(plain.stdout, "claude-code")).toContain("none: setup claude-code --wake adds");
    await cli(["setup", "claude-code", "--as", "alice", "--write", "--wake"]);
    const woken = await cli(["doctor", "--as", "alice", "--tool", "claude-code"]);
    expect(wakeLine(woken.stdout, "claude-code")).toContain(
      "native: hook wait writes into the session's inbox socket (a fresh session too), else the rewake Stop hook",
    );
    await cli(["setup", "codex", "--as", "alice", "--write", "--wake"]);
    const codex = await cli(["doctor", "--as", "alice", "--tool", "codex"]);
    expect(wakeLine(codex.stdout, "codex")).toBe(
      "ok    codex wake: the agent-chat run wrapper, when started as `agent-chat run --as NAME -- codex` (idle when its Stop hook ends a turn)",
    );
    await cli(["setup", "gemini", "--as", "alice", "--write", "--wake"]);
    const gemini = await cli(["doctor", "--as", "alice", "--tool", "gemini"]);
    expect(wakeLine(gemini.stdout, "gemini")).toContain(
      "idle when its AfterAgent hook ends a turn",
    );
    await cli(["setup", "qwen", "--as", "alice", "--write", "--wake"]);
    const qwen = await cli(["doctor", "--as", "alice", "--tool", "qwen"]);
    expect(qwen.code, qwen.stdout).toBe(0);
    expect(wakeLine(qwen.stdout, "qwen")).toBe(
      "ok    qwen wake: the agent-chat run wrapper, when started as `agent-chat run --as NAME -- qwen` (idle when its Stop hook ends a turn)",
    );
    await cli(["setup", "opencode", "--as", "alice", "--write"]);
    const opencode = await cli(["doctor", "--as", "alice", "--tool", "opencode"]);
    expect(opencode.code, opencode.stdout).toBe(0);
    expect(wakeLine(opencode.stdout, "opencode")).toBe(
      "ok    opencode wake: native: the agent-chat plugin parks hook wait when a session goes idle and prompts it through OpenCode's server",
    );
    await cli(["setup", "opencode", "--as", "alice", "--write", "--no-wake"]);
    const unwoken = await cli(["doctor", "--as", "alice", "--tool", "opencode"]);
    expect(wakeLine(unwoken.stdout, "opencode")).toContain("none: setup opencode --wake");
    await cli(["setup", "copilot", "--as", "alice", "--write", "--wake"]);
    const copilot = await cli(["doctor", "--as", "alice", "--tool", "copilot"]);
    expect(copilot.code, copilot.stdout).toBe(0);
    expect(wakeLine(copilot.stdout, "copilot")).toBe(
      "ok    copilot wake: the agent-chat run wrapper, when started as `agent-chat run --as NAME -- copilot` (idle when its Stop hook ends a turn)",
    );
    // Without the approvals setup wrote, Copilot CLI would ask at each call: doctor says so.
    writeFileSync(join(home, ".copilot", "permissions-config.json"), "{}");
    const asks = await cli(["doctor", "--as", "alice", "--tool", "copilot"]);
    expect(lines(asks.stdout).copilot).toContain(
      `Copilot CLI asks before each call of chat_channels, chat_create_channel, chat_post, chat_read, chat_wait, chat_tasks in ${project}`,
    );
    await cli(["setup", "pi", "--as", "alice", "--write"]);
    const piPlain = await cli(["doctor", "--as", "alice", "--tool", "pi"]);
    expect(wakeLine(piPlain.stdout, "pi")).toContain("none: setup pi --wake adds the wake");
    await cli(["setup", "pi", "--as", "alice", "--write", "--wake"]);
    const pi = await cli(["doctor", "--as", "alice", "--tool", "pi"]);
    expect(pi.code, pi.stdout).toBe(0);
    expect(wakeLine(pi.stdout, "pi")).toBe(
      "ok    pi wake: native: the extension parks hook wait after each turn and starts a turn with its notice",
    );
  });

  it("pi: ok once set up; warns when the extension that gives pi the chat is gone", async () => {
    mkdirSync(root);
    expect((await cli(["setup", "pi", "--as", "alice", "--write"])).code).toBe(0);
    const agentDir = join(home, ".pi", "agent");
    const good = await cli(["doctor", "--as", "alice", "--tool", "pi"]);
    expect(good.code, good.stdout).toBe(0);
    expect(lines(good.stdout).pi).toBe(
      `ok    pi: server in ${join(agentDir, "agent-chat.json")}, hooks in ${join(agentDir, "agent-chat.json")}`,
    );
    rmSync(join(agentDir, "extensions", "agent-chat.js"));
    const gone = await cli(["doctor", "--as", "alice", "--tool", "pi"]);
    expect(lines(gone.stdout).pi).toMatch(
      /^warn {2}pi: .*pi does not load agent-chat: .*extensions\/agent-chat\.js is missing \(run: agent-chat setup pi --as alice --write\)$/,
    );
  });

  it("--help has examples", async () => {
    const r = await cli(["doctor", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Examples?:\n {2}agent-chat doctor --as alice\n/);
  });
});
