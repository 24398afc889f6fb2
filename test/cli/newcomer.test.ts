import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/** What a person new to the CLI expects of it (issue 44, item 8). */
let tmp: ReturnType<typeof tempDir>;
const cli = (args: string[]) => runCli(args, { root: tmp.dir });

beforeEach(async () => {
  tmp = tempDir();
  expect((await cli(["init", "review", "--members", "alice,bob"])).code).toBe(0);
});

const terminals: Array<{ kill(): void }> = [];
afterEach(() => {
  for (const term of terminals.splice(0)) term.kill();
  tmp.cleanup();
});

/** The CLI on a terminal of its own (stdin, stdout and stderr a pty), as a person runs it. */
async function onTerminal(args: string[]) {
  const { spawn } = await import("@lydell/node-pty");
  const term = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, AGENT_CHAT_ROOT: tmp.dir, AGENT_CHAT_NAME: "" },
    cols: 200,
  });
  terminals.push(term);
  let screen = "";
  term.onData((d) => {
    screen += d;
  });
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  return { screen: () => screen, exited };
}

describe("usage errors", () => {
  it.each([
    [["bogus"]],
    [["read", "review"]],
    [["read", "review", "--as", "bob", "--bogus"]],
    [["init"]],
    [["--max-body", "abc", "channels"]],
    [["lease", "take"]],
  ])("%j is one line `agent-chat: …` on stderr, exit 64", async (args) => {
    const r = await cli(args);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/^agent-chat: [^\n]+\n$/);
    expect(r.stderr).not.toMatch(/error:/);
  });
});

describe("the version", () => {
  const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
  it.each([[["version"]], [["-v"]], [["-V"]], [["--version"]], [["--root", "/nowhere", "-v"]]])(
    "%j prints it",
    async (args) => {
      expect(await cli(args)).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
    },
  );
});

describe("a title-only post", () => {
  it.each([[["--body", ""]], [[]]])(
    "with %j is posted as chat.py posts --body '': the frontmatter, then an empty line",
    async (body) => {
      const args = ["post", "review", "--from", "alice", "--title", "LGTM", "--status", "ack"];
      const r = await cli([...args, ...body]);
      expect(r).toMatchObject({ code: 0, stdout: expect.stringMatching(/^posted #1 /) });
      const file = readFileSync(join(tmp.dir, "review", "0001-alice-lgtm.md"), "utf8");
      expect(file).toMatch(/\nstatus: ack\ntitle: LGTM\n---\n\n$/);
      const read = await cli(["--json", "read", "review", "--as", "bob"]);
      expect(JSON.parse(read.stdout).messages).toMatchObject([{ title: "LGTM", body: "" }]);
    },
  );

  it("from a terminal, with no body given, is posted at once (stdin is not read)", async () => {
    const args = ["post", "review", "--from", "alice", "--title", "LGTM", "--status", "ack"];
    const { screen, exited } = await onTerminal(args);
    expect(await exited).toBe(0);
    expect(screen()).toMatch(/posted #1 /);
  });

  it("without a title, an empty body is still refused", async () => {
    const r = await cli(["post", "review", "--from", "alice", "--body", " "]);
    expect(r).toMatchObject({ code: 64, stderr: "agent-chat: message body is empty\n" });
  });
});

describe("posting to someone who is not a member", () => {
  const post = (channel: string, to: string) =>
    cli(["post", channel, "--from", "alice", "--to", to, "--body", "hi"]);

  it("warns on stderr, and the post still lands", async () => {
    const r = await post("review", "bob,carol");
    expect(r).toMatchObject({ code: 0, stdout: expect.stringMatching(/^posted #1 /) });
    expect(r.stderr).toBe(
      "agent-chat: warning: carol is not a member of review (alice, bob); posted anyway\n",
    );
    const read = await cli(["--json", "read", "review", "--as", "carol", "--peek"]);
    expect(JSON.parse(read.stdout).messages).toHaveLength(1);
  });

  it("says nothing for a member, everyone, or in an open channel", async () => {
    expect((await post("review", "bob")).stderr).toBe("");
    expect((await post("review", "all")).stderr).toBe("");
    expect((await cli(["init", "open"])).code).toBe(0);
    expect((await post("open", "carol")).stderr).toBe("");
  });
});

describe("channel names that differ only in case", () => {
  it("cannot both be made: they are one folder on macOS and Windows", async () => {
    expect((await cli(["init", "Review"])).code).not.toBe(0);
    const r = await cli(["init", "REVIEW"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agent-chat: channel REVIEW would clash with review: .*case/);
    expect((await cli(["--json", "channels"])).stdout).not.toMatch(/REVIEW/);
  });
});

describe("wait, as a person sees it", () => {
  it("on a terminal, says that it is parked, for whom and on what", async () => {
    const args = ["wait", "review", "--as", "bob", "--timeout", "60"];
    const { screen, exited } = await onTerminal(args);
    await vi.waitFor(() => expect(screen()).toContain("agent-chat: waiting"), { timeout: 15_000 });
    expect(screen()).toContain(
      "agent-chat: waiting for a message for bob in review (up to 1m; Ctrl-C stops)",
    );
    await cli(["post", "review", "--from", "alice", "--to", "bob", "--body", "wake up"]);
    expect(await exited).toBe(0);
    expect(screen()).toContain("wake up");
  });

  it("on a pipe, says nothing of it", async () => {
    await cli(["post", "review", "--from", "alice", "--to", "bob", "--body", "there already"]);
    const r = await cli(["wait", "review", "--as", "bob", "--timeout", "60"]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toContain("there already");
  });
});
