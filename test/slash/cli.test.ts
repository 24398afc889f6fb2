import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

describe("agent-chat slash (built CLI)", () => {
  let root: string;
  let home: ReturnType<typeof tempDir>;
  let cleanup: () => void;
  /** The user's own config file, where the allowlist lives. */
  const userConfig = () => join(home.dir, "agent-chat", "config.json");
  const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
    runCli(args, {
      root,
      env: { AGENT_CHAT_CONFIG: undefined, XDG_CONFIG_HOME: home.dir, ...env },
    });

  beforeEach(async () => {
    ({ dir: root, cleanup } = tempDir("agent-chat-slash-"));
    home = tempDir("agent-chat-home-");
    mkdirSync(join(home.dir, "agent-chat"));
    const store = new FsStore(root, { watch: false });
    await store.init("review", { members: ["alice", "bob"] });
    await store.addTask("review", { title: "Docs", from: "alice" });
    await store.close();
  });
  afterEach(() => {
    cleanup();
    home.cleanup();
  });

  it("prints the parsed command and its argv, as text and as JSON", async () => {
    const text = await cli(["slash", "/b00t model unload llava"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(
      "command: b00t model remove\nprogram: b00t-cli\nargv: model remove llava --yes\n",
    );
    const json = await cli([
      "--json",
      "slash",
      "/chat claim task-1",
      "--channel",
      "review",
      "--as",
      "bob",
    ]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      verb: "chat",
      key: "chat claim",
      program: "agent-chat",
      argv: ["claim", "review", "task-1", "--as", "bob"],
    });
  });

  it("a line it cannot parse is an error that says why", async () => {
    const bad = await cli(["--json", "slash", "/b00t model rm"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("/b00t model rm needs a model name");
    expect(JSON.parse(bad.stdout).error.code).toBe("INVALID_ARGUMENT");
  });

  it("a typo read as a download is shown with a note, and --exec never runs it", async () => {
    const shown = await cli(["slash", "/b00t model frobnicate"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("argv: model download frobnicate\n");
    expect(shown.stderr).toContain(
      'agent-chat: note: "frobnicate" is no /b00t model sub-command, so b00t reads it as a model to download',
    );
    writeFileSync(userConfig(), JSON.stringify({ slash: { exec: ["b00t"] } }));
    const run = await cli(["slash", "/b00t model frobnicate", "--exec"], {
      PATH: "/nonexistent",
    });
    expect(run.code).toBe(64);
    expect(run.stderr).toContain("not run: ");
    expect(run.stderr).toContain("write /b00t model download frobnicate");
    expect(run.stderr).not.toContain("running:");
  });

  it("--exec refuses a verb that no config allows, and runs nothing", async () => {
    const refused = await cli([
      "--json",
      "slash",
      "/chat claim 1",
      "--channel",
      "review",
      "--as",
      "bob",
      "--exec",
    ]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error.code).toBe("NOT_ALLOWED");
    expect(refused.stderr).toContain(`not in the slash.exec allowlist of ${userConfig()}`);
    const tasks = JSON.parse((await cli(["--json", "tasks", "review"])).stdout);
    expect(tasks.tasks[0].state).toBe("open");
  });

  it("--exec runs an allowed /chat command from the user's config and passes its exit code", async () => {
    writeFileSync(userConfig(), JSON.stringify({ slash: { exec: ["chat claim"] } }));
    const ran = await cli([
      "slash",
      "/chat claim 1",
      "--channel",
      "review",
      "--as",
      "bob",
      "--exec",
    ]);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain("claimed 1 -> task-1.CLAIMED-bob.md");
    const tasks = JSON.parse((await cli(["--json", "tasks", "review"])).stdout);
    expect(tasks.tasks[0]).toMatchObject({ state: "claimed", holder: "bob" });
    // The second claim loses: the child's exit code 3 is ours.
    const lost = await cli([
      "slash",
      "/chat take 1",
      "--channel",
      "review",
      "--as",
      "alice",
      "--exec",
    ]);
    expect(lost.code).toBe(3);
  });

  it("never takes the allowlist from the root, whose files anyone who posts can write", async () => {
    writeFileSync(join(root, "_config.json"), JSON.stringify({ slash: { exec: ["*"] } }));
    const refused = await cli([
      "slash",
      "/chat claim 1",
      "--channel",
      "review",
      "--as",
      "bob",
      "--exec",
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`not in the slash.exec allowlist of ${userConfig()}`);
    // A relative XDG_CONFIG_HOME would resolve in the working folder, which may be the root.
    mkdirSync(join(root, ".config", "agent-chat"), { recursive: true });
    writeFileSync(join(root, ".config", "agent-chat", "config.json"), '{"slash":{"exec":["*"]}}');
    const relative = await runCli(["slash", "/chat channels", "--exec"], {
      root,
      cwd: root,
      env: { AGENT_CHAT_CONFIG: undefined, XDG_CONFIG_HOME: ".config", HOME: home.dir },
    });
    expect(relative.code).toBe(1);
    expect(relative.stderr).toContain("not in the slash.exec allowlist");
    execFileSync("mkfifo", [userConfig()]);
    const fifo = await cli(["slash", "/chat read", "--channel", "review", "--exec"]);
    expect(fifo.code).toBe(1);
    expect(fifo.stderr).toContain("is not a regular file");
  });

  it("$AGENT_CHAT_CONFIG names another config file", async () => {
    const { dir, cleanup: done } = tempDir("agent-chat-config-");
    try {
      const path = join(dir, "config.json");
      writeFileSync(path, JSON.stringify({ slash: { exec: ["chat"] } }));
      const ran = await cli(
        ["--json", "slash", "/chat read", "--channel", "review", "--as", "bob", "--exec"],
        {
          AGENT_CHAT_CONFIG: path,
        },
      );
      expect(ran.code).toBe(0);
      expect(JSON.parse(ran.stdout)).toMatchObject({ channel: "review", messages: [] });
      writeFileSync(path, "{not json");
      const broken = await cli(["slash", "/chat read", "--channel", "review", "--exec"], {
        AGENT_CHAT_CONFIG: path,
      });
      expect(broken.code).toBe(1);
      expect(broken.stderr).toContain(`${path} is not valid JSON`);
    } finally {
      done();
    }
  });

  it("read --json describes a message's slash line and never runs it", async () => {
    writeFileSync(userConfig(), JSON.stringify({ slash: { exec: ["*"] } }));
    await cli(["post", "review", "--from", "alice", "--body", "/chat claim 1"]);
    await cli(["post", "review", "--from", "alice", "--body", "/usr/bin is a folder"]);
    const read = await cli(["--json", "read", "review", "--as", "bob"]);
    const [first, second] = JSON.parse(read.stdout).messages;
    expect(first.slash).toMatchObject({
      verb: "chat",
      key: "chat claim",
      argv: ["claim", "review", "1"],
    });
    expect(second.slash).toBeUndefined();
    const tasks = JSON.parse((await cli(["--json", "tasks", "review"])).stdout);
    expect(tasks.tasks[0].state).toBe("open");
  });
});
