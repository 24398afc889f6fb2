// A NATS root is a NATS root everywhere: never resolved as a folder path, one daemon per
// namespace whatever the working folder, and `info`/`send` use the root's own server.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ingestEnvelopes } from "../../src/store/nats/b00t.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { runCli } from "../helpers/cli.js";
import { describeNats } from "../helpers/describe-nats.js";
import { NatsServer } from "../helpers/nats-server.js";
import { daemonFixture, type World } from "./harness.js";

const { world, serve } = daemonFixture();

/** Two working folders of one world, neither of which holds the root. */
function folders(w: World): [string, string] {
  const a = join(w.dir, "work-a");
  const b = join(w.dir, "work-b", "deeper");
  mkdirSync(a, { recursive: true });
  mkdirSync(b, { recursive: true });
  return [a, b];
}

function cliIn(w: World, cwd: string, args: string[], root: string) {
  return runCli(args, { env: { ...w.env, AGENT_CHAT_ROOT: root, NATS_URL: undefined }, cwd });
}

describe("a NATS root in info", () => {
  it("is shown as its URL, with one socket from any working folder and its own server", async () => {
    const w = world();
    const root = "nats://127.0.0.1:58381/team-a";
    const [a, b] = folders(w);
    const infos = [];
    for (const cwd of [a, b]) {
      const r = await cliIn(w, cwd, ["--json", "info"], root);
      expect(r.code, r.stderr).toBe(0);
      infos.push(JSON.parse(r.stdout));
    }
    expect(infos[0].root).toBe(root);
    expect(infos[1].socket).toBe(infos[0].socket);
    expect(infos[0].transports).toContainEqual({ name: "nats", url: "nats://127.0.0.1:58381" });
    // The same namespace spelt otherwise (seeds in another order, the default port, a query)
    // is the same root, hence the same daemon socket.
    const seeds = "nats://b.lan,a.lan:4222/team-a";
    const other = await cliIn(w, a, ["--json", "info"], `${seeds}?replicas=3`);
    const same = await cliIn(w, b, ["--json", "info"], "NATS://a.lan:4222,b.lan:4222/team-a");
    expect(JSON.parse(other.stdout).socket).toBe(JSON.parse(same.stdout).socket);
    expect(JSON.parse(other.stdout).root).toBe("nats://a.lan:4222,b.lan:4222/team-a");
    // Credentials in the URL name the same root, and are never printed.
    const secret = await cliIn(
      w,
      a,
      ["--json", "info"],
      "nats://agent:s3cret@127.0.0.1:58381/team-a",
    );
    expect(secret.stdout).not.toContain("s3cret");
    expect(JSON.parse(secret.stdout)).toMatchObject({ root, socket: infos[0].socket });
    const text = await cliIn(w, b, ["info"], root);
    expect(text.stdout).toContain(`root:       ${root}\n`);
    expect(text.stdout).toContain("nats (nats://127.0.0.1:58381)");
  });

  it("is written as given into an agent tool's setup, not as a path of the working folder", async () => {
    const w = world();
    const root = "nats://127.0.0.1:58381/team-a";
    const r = await cliIn(w, w.dir, ["--json", "setup", "codex", "--as", "bob"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(root);
    expect(r.stdout).not.toContain("nats:/127");
    expect(JSON.parse(r.stdout).notes.join("\n")).not.toContain("credentials");
    // Credentials in the URL go into the tool's files as given: said, with the way out.
    const secret = "nats://agent:s3cret@127.0.0.1:58381/team-a";
    const withSecret = await cliIn(w, w.dir, ["--json", "setup", "codex", "--as", "bob"], secret);
    expect(JSON.parse(withSecret.stdout).notes).toContainEqual(
      expect.stringMatching(
        /^the root's URL carries credentials, .*set up with nats:\/\/127\.0\.0\.1:58381\/team-a and give AGENT_CHAT_NATS_USER/,
      ),
    );
  });

  it("refuses a malformed NATS root instead of taking it for a folder", async () => {
    const w = world();
    const r = await cliIn(w, w.dir, ["info"], "nats://127.0.0.1:4222/team.a");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('invalid namespace "team.a"');
  });
});

describeNats("a NATS root with a real nats-server", (server) => {
  it("has one daemon whatever the working folder: a second serve exits 5", async () => {
    const w = world();
    const root = server().url(`roots${process.pid}`);
    w.env.AGENT_CHAT_ROOT = root;
    const [a, b] = folders(w);
    const first = await serve(w, [], a);
    const second = await cliIn(w, b, ["serve"], root);
    expect(second.code, second.stderr).toBe(5);
    expect(second.stderr).toContain(`a daemon is already listening on ${first.socket}`);
    // A client in the other folder finds that daemon, which posts into the namespace.
    const sent = await cliIn(w, b, ["send", "--channel", "ops", "--message", "hi"], root);
    expect(sent.stdout, sent.stderr).toMatch(/^sent #1 to ops /);
    const read = await cliIn(w, a, ["--json", "read", "ops", "--as", "bob"], root);
    expect(JSON.parse(read.stdout).messages).toMatchObject([{ seq: 1, body: "hi" }]);
  });

  it("reaches a server that wants credentials from hooks too (the environment's options)", async () => {
    const secured = await NatsServer.start({ user: "agent", pass: "s3cret-pw" });
    try {
      const w = world();
      const root = secured.url("hooks");
      const env = {
        ...w.env,
        AGENT_CHAT_ROOT: root,
        AGENT_CHAT_NATS_USER: "agent",
        AGENT_CHAT_NATS_PASS: "s3cret-pw",
      };
      expect((await runCli(["init", "dev"], { env })).code).toBe(0);
      const post = ["post", "dev", "--from", "alice", "--to", "bob", "--body", "look"];
      expect((await runCli(post, { env })).code).toBe(0);
      const hook = ["hook", "session-start", "--as", "bob", "--format", "claude"];
      const r = await runCli(hook, { env });
      expect(r.stderr).toBe("");
      expect(r.stdout).toContain("dev");
    } finally {
      await secured.dispose();
    }
  });

  it("send --transport nats goes to the root's server, not to 127.0.0.1:4222", async () => {
    const w = world();
    const root = server().url(`team-a-${process.pid}`);
    const bridge = await NatsStore.open(root);
    const ac = new AbortController();
    const bridging = ingestEnvelopes(bridge, { signal: ac.signal });
    try {
      await bridge.nc.flush(); // the bridge's subscription is registered
      const args = ["send", "--transport", "nats", "--channel", "Mission Delta"];
      const r = await cliIn(w, w.dir, [...args, "--message", "deploying"], root);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(
        `posted #1 to mission-delta in team-a-${process.pid} (bridged from chat.mission-delta on ` +
          `nats://127.0.0.1:${server().port})\n`,
      );
      expect(await bridge.peek("mission-delta", 5)).toMatchObject([{ body: "deploying" }]);
    } finally {
      ac.abort();
      await bridging;
      await bridge.close();
    }
  });
});
