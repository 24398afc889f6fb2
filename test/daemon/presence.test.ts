import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { DaemonClient } from "../../src/daemon/client.js";
import { DaemonServer } from "../../src/daemon/server.js";
import type { PresenceInfo, Store } from "../../src/store/types.js";
import { tempDir } from "../helpers/tmp.js";

/** The daemon pushes presence changes to a `presence` stream (docs/daemon.md, docs/delivery.md). */
describe("daemon: presence pushed to subscribers", () => {
  let tmp: ReturnType<typeof tempDir>;
  let store: Store;
  let daemon: DaemonServer;
  let socket: string;
  const clients: DaemonClient[] = [];

  beforeEach(async () => {
    tmp = tempDir();
    store = await openStore(join(tmp.dir, "root"));
    await store.init("review", { members: ["alice", "bob"] });
    daemon = new DaemonServer({ store, root: store.location, version: "test" });
    socket = join(tmp.dir, "run", "d.sock");
    await daemon.listen(socket);
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    await daemon.close();
    await store.close();
    tmp.cleanup();
  });

  async function client(): Promise<DaemonClient> {
    const c = await DaemonClient.connect(socket);
    clients.push(c);
    return c;
  }

  it("streams the members' presence now, then each change: a wait parks, then returns", async () => {
    const watcher = await client();
    const bob = await client();
    const controller = new AbortController();
    const seen: PresenceInfo[][] = [];
    const stateOf = (agents: PresenceInfo[]) => agents.find((p) => p.agent === "bob")?.state;
    const stream = (async () => {
      for await (const agents of watcher.watchPresence("review", { signal: controller.signal })) {
        seen.push(agents);
        if (stateOf(agents) === "active" && seen.some((a) => stateOf(a) === "waiting")) return;
      }
    })();
    await expect.poll(() => seen.length, { timeout: 5_000 }).toBe(1);
    expect(stateOf(seen[0]!)).toBe("never-seen");
    const waiting = bob.wait(["review"], { as: "bob", timeoutMs: 20_000 });
    await expect.poll(() => seen.map(stateOf), { timeout: 5_000 }).toContain("waiting");
    await store.post("review", { from: "alice", to: "bob", body: "wake up" });
    await waiting;
    await stream;
    // Alice's post changes her presence too: bob's states, each change once, in order.
    const bobStates = seen.map(stateOf).filter((s, i, all) => i === 0 || s !== all[i - 1]);
    expect(bobStates).toEqual(["never-seen", "waiting", "active"]);
    controller.abort();
  });

  it("a cancelled stream ends; a missing channel is refused", async () => {
    const watcher = await client();
    const controller = new AbortController();
    const got: PresenceInfo[][] = [];
    for await (const agents of watcher.watchPresence(undefined, { signal: controller.signal })) {
      got.push(agents);
      controller.abort();
    }
    expect(got).toHaveLength(1);
    const err = await (async () => {
      for await (const _ of watcher.watchPresence("nope")) return undefined;
    })().catch((e: { code?: string }) => e.code);
    expect(err).toBe("CHANNEL_NOT_FOUND");
    expect((await watcher.info()).subscriptions).toBe(0);
  });
});
