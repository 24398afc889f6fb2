import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeWorld, startDaemon, type World } from "../daemon/harness.js";
import { collect, runCli, startCli, untilStdout, watching } from "../helpers/cli.js";
import { type RunningViewer, rawRequest, startView } from "../viewer/helpers.js";

let world: World;
/** Alice's config folder and a reader's: two users of one root. */
let alice: Record<string, string>;
let reader: Record<string, string>;

beforeEach(async () => {
  world = makeWorld();
  alice = { XDG_CONFIG_HOME: join(world.dir, "alice-config"), AGENT_CHAT_DAEMON: "off" };
  reader = { XDG_CONFIG_HOME: join(world.dir, "reader-config"), AGENT_CHAT_DAEMON: "off" };
  expect((await world.cli(["init", "review"])).code).toBe(0);
});

afterEach(() => world.cleanup());

function json<T>(stdout: string): T {
  return JSON.parse(stdout) as T;
}

describe("agent-chat id", () => {
  it("new, show, list; a second new for the name is refused with the way out", async () => {
    const made = await world.cli(["--json", "id", "new", "--as", "alice"], alice);
    expect(made.code, made.stderr).toBe(0);
    const info = json<{ key: string; privateKey: string; published: string[] }>(made.stdout);
    expect(info.privateKey).toBe(
      join(world.dir, "alice-config", "agent-chat", "keys", "alice.key"),
    );
    expect(statSync(info.privateKey).mode & 0o777).toBe(0o600);
    expect(info.published).toEqual([info.key]);
    expect(readdirSync(join(world.root, ".keys"))).toEqual(["alice.pub"]);

    const shown = await world.cli(["id", "show", "alice"], reader);
    expect(shown.stdout).toContain(`key\t${info.key}`);
    expect(shown.stdout).toContain("private\t(not held here)");
    const list = await world.cli(["id", "list"], alice);
    expect(list.stdout).toBe(`alice\t${info.key}\n`);

    const again = await world.cli(["id", "new", "--as", "alice"], reader);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already has a key");
    expect(again.stderr).toContain("id rotate");
  });

  it("read, peek and tail mark signed messages; --json says verified, unsigned or forged", async () => {
    await world.cli(["id", "new", "--as", "alice"], alice);
    const tail = startCli(["--json", "tail", "review"], { env: { ...world.env, ...reader } });
    await watching(tail);
    await world.cli(["post", "review", "--from", "alice", "--body", "signed"], alice);
    await world.cli(["post", "review", "--from", "bob", "--body", "plain"], alice);
    const file = readdirSync(join(world.root, "review")).find((n) => n.startsWith("0001-"))!;
    const path = join(world.root, "review", file);
    writeFileSync(path, readFileSync(path, "utf8").replace("\nsigned\n", "\nedited\n"));

    const human = await world.cli(["read", "review", "--as", "carol"], reader);
    const rules = human.stdout.split("\n").filter((l) => l.startsWith("=".repeat(70)));
    expect(rules).toEqual([
      `${"=".repeat(70)} FORGED: the signature does not match the message`,
      "=".repeat(70),
    ]);

    await world.cli(["post", "review", "--from", "alice", "--body", "good"], alice);
    const peek = await world.cli(["--json", "peek", "review", "-n", "3"], reader);
    const got = json<{ messages: Array<{ from: string; trust: string }> }>(peek.stdout).messages;
    expect(got.map((m) => [m.from, m.trust])).toEqual([
      ["alice", "forged"],
      ["bob", "unsigned"],
      ["alice", "verified"],
    ]);
    await untilStdout(tail, (out) => out.split("\n").length > 3);
    tail.kill("SIGINT");
    const tailed = (await collect(tail)).stdout.trim().split("\n");
    // The first one as it was posted (the edit came after), then bob's and the good one.
    expect(tailed.map((l) => json<{ trust: string }>(l).trust)).toEqual([
      "verified",
      "unsigned",
      "verified",
    ]);
  });

  it("a signed post goes past a running daemon, whose readers see it verified", async () => {
    await world.cli(["id", "new", "--as", "alice"], alice);
    const daemon = await startDaemon(world);
    try {
      const viaDaemon = { XDG_CONFIG_HOME: alice.XDG_CONFIG_HOME! };
      const posted = await world.cli(
        ["post", "review", "--from", "alice", "--body", "hi"],
        viaDaemon,
      );
      expect(posted.code, posted.stderr).toBe(0);
      expect(readFileSync(join(world.root, "review", "0001-alice-hi.md"), "utf8")).toContain(
        "sig: ed25519:",
      );
      const read = await world.cli(["--json", "read", "review", "--as", "bob"], {
        XDG_CONFIG_HOME: reader.XDG_CONFIG_HOME!,
      });
      expect(json<{ messages: Array<{ trust: string }> }>(read.stdout).messages).toMatchObject([
        { trust: "verified" },
      ]);
    } finally {
      await daemon.stop();
    }
  });

  it("export on one machine, import on another: posts from both verify", async () => {
    await world.cli(["id", "new", "--as", "alice"], alice);
    const exported = await world.cli(["id", "export", "--as", "alice"], alice);
    const laptop = { XDG_CONFIG_HOME: join(world.dir, "laptop"), AGENT_CHAT_DAEMON: "off" };
    const imported = await runCli(["id", "import"], {
      env: { ...world.env, ...laptop },
      input: exported.stdout,
    });
    expect(imported.code, imported.stderr).toBe(0);
    await world.cli(["post", "review", "--from", "alice", "--body", "laptop"], laptop);
    const peek = await world.cli(["--json", "peek", "review"], reader);
    expect(json<{ messages: Array<{ trust: string }> }>(peek.stdout).messages).toMatchObject([
      { trust: "verified" },
    ]);
  });

  it("init --signatures require --membership strict, policy, and unpause after a loop guard's pause", async () => {
    const init = [
      "init",
      "ops",
      "--members",
      "alice",
      "--signatures",
      "require",
      "--membership",
      "strict",
    ];
    expect((await world.cli(init, alice)).code).toBe(0);
    const outsider = await world.cli(["post", "ops", "--from", "bob", "--body", "x"], alice);
    expect(outsider.code).toBe(1);
    expect(outsider.stderr).toContain("bob is not a member of ops");
    const keyless = await world.cli(["post", "ops", "--from", "alice", "--body", "x"], alice);
    expect(keyless.stderr).toContain("agent-chat id new --as alice");
    await world.cli(["id", "new", "--as", "alice"], alice);
    expect((await world.cli(["post", "ops", "--from", "alice", "--body", "ok"], alice)).code).toBe(
      0,
    );

    const set = await world.cli(["policy", "review", "--rate-limit", "2"], alice);
    expect(set.stdout).toBe(
      "review: signatures off, membership open, rate limit 2, ping-pong off\n",
    );
    for (const body of ["1", "2"]) {
      expect(
        (await world.cli(["post", "review", "--from", "carol", "--body", body], alice)).code,
      ).toBe(0);
    }
    const third = await world.cli(["post", "review", "--from", "carol", "--body", "3"], alice);
    expect(third.code).toBe(1);
    expect(third.stderr).toContain("agent-chat unpause review --agent carol");
    expect((await world.cli(["policy", "review"], alice)).stdout).toContain("paused: carol");
    const lifted = await world.cli(["unpause", "review", "--agent", "carol"], alice);
    expect(lifted.stdout).toBe("carol may post in review again\n");
  });

  it("the viewer's From field never signs with a key its user holds", async () => {
    await world.cli(["id", "new", "--as", "alice"], alice);
    const saved = process.env.XDG_CONFIG_HOME;
    process.env.XDG_CONFIG_HOME = alice.XDG_CONFIG_HOME;
    let viewer: RunningViewer | undefined;
    try {
      viewer = await startView(world.root);
      const res = await rawRequest(viewer.port, "/api/channels/review/messages", {
        method: "POST",
        headers: { Authorization: `Bearer ${viewer.token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ from: "alice", body: "typed into the viewer" }),
      });
      expect(res.status, res.body).toBeLessThan(300);
    } finally {
      process.env.XDG_CONFIG_HOME = saved;
      await viewer?.stop();
    }
    const peek = await world.cli(["--json", "peek", "review"], reader);
    expect(json<{ messages: Array<{ trust: string }> }>(peek.stdout).messages).toMatchObject([
      { trust: "unsigned" },
    ]);
  });
});
