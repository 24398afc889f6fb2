import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Daemon, envelope, makeWorld, RawClient, startDaemon, type World } from "./harness.js";

let world: World;
let daemon: Daemon;
/** A user who holds alice's key. */
let alice: Record<string, string>;

beforeAll(async () => {
  world = makeWorld();
  alice = { XDG_CONFIG_HOME: join(world.dir, "alice-config") };
  expect((await world.cli(["id", "new", "--as", "alice"], alice)).code).toBe(0);
  // The daemon runs as the user who holds alice's key: it must still sign for no one.
  world.env.XDG_CONFIG_HOME = alice.XDG_CONFIG_HOME!;
  daemon = await startDaemon(world, []);
});

afterAll(async () => {
  await daemon.stop();
  world.cleanup();
});

interface Shown {
  from: string;
  trust: string;
  extra?: Record<string, string>;
}

/** The channel's messages once there are `count` (the envelope gets no answer: poll). */
async function until(channel: string, count: number): Promise<Shown[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await world.cli(["--json", "peek", channel, "-n", "10"]);
    const got = r.code === 0 ? (JSON.parse(r.stdout) as { messages: Shown[] }).messages : [];
    if (got.length >= count || Date.now() > deadline) return got;
  }
}

describe("b00t envelopes and the daemon: unsigned, and marked as arrived through the socket", () => {
  it("a free-form sender is accepted as a display name, posted as its slug", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.send(envelope({ channel: "crew", sender: "Frontend Agent", body: "handoff" }));
    c.close();
    expect(await until("crew", 1)).toMatchObject([
      {
        from: "frontend-agent",
        trust: "unsigned",
        extra: { display_name: "Frontend Agent", via: "b00t-socket" },
      },
    ]);
  });

  it("an envelope from a sender who has a key is still unsigned: the daemon signs for no one", async () => {
    const posted = await world.cli(
      ["send", "--channel", "crew", "--sender", "alice", "--message", "hi"],
      {
        ...alice,
      },
    );
    expect(posted.code, posted.stderr).toBe(0);
    expect((await until("crew", 2))[1]).toMatchObject({
      from: "alice",
      trust: "unsigned",
      extra: { via: "b00t-socket" },
    });
  });
});
