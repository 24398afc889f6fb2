import { join } from "node:path";
import { expect, it, vi } from "vitest";
import { openStore } from "../../src/client/open.js";
import { DaemonClient } from "../../src/daemon/client.js";
import { DaemonServer } from "../../src/daemon/server.js";
import { tempDir } from "../helpers/tmp.js";

// A holder parked in `wait` through the daemon keeps its lease alive; once its process is gone
// (its socket ends) the daemon's wait no longer renews it: the lease follows the holder's life.
it("a vanished client's parked wait stops renewing its leases; the lease expires", async () => {
  const tmp = tempDir();
  const store = await openStore(join(tmp.dir, "root"));
  const daemon = new DaemonServer({ store, root: store.location, version: "test" });
  const socket = join(tmp.dir, "run", "d.sock");
  await daemon.listen(socket);
  try {
    await store.init("ch", { extra: { task_ttl: 1 } });
    await store.addTask("ch", { id: "1", title: "t", from: "lead" });
    const granted = await store.claim("ch", "1", "bob");
    const client = await DaemonClient.connect(socket);
    const parked = client.wait(["ch"], { as: "bob" }).catch(() => undefined);
    // Alive and parked: renewed.
    await vi.waitFor(
      async () => {
        const [t] = await store.tasks("ch");
        expect(Date.parse(t!.expiresAt!)).toBeGreaterThan(Date.parse(granted.expiresAt!));
      },
      { timeout: 10_000, interval: 100 },
    );
    // Its process dies: the connection ends.
    (client as unknown as { socket: { destroy(): void } }).socket.destroy();
    await parked;
    await vi.waitFor(async () => expect((await store.tasks("ch"))[0]!.state).toBe("expired"), {
      timeout: 15_000,
      interval: 200,
    });
  } finally {
    await daemon.close();
    await store.close();
    tmp.cleanup();
  }
}, 30_000);

it("a wait through the daemon client accepts the activity option (the daemon judges activity by the connection)", async () => {
  const tmp = tempDir();
  const store = await openStore(join(tmp.dir, "root"));
  const daemon = new DaemonServer({ store, root: store.location, version: "test" });
  const socket = join(tmp.dir, "run", "d.sock");
  await daemon.listen(socket);
  const client = await DaemonClient.connect(socket);
  try {
    await store.init("ch");
    await store.post("ch", { from: "alice", to: "bob", body: "hi" });
    const got = await client.wait(["ch"], { as: "bob", activity: new AbortController().signal });
    expect(got.messages.map((m) => m.body)).toEqual(["hi"]);
  } finally {
    await client.close();
    await daemon.close();
    await store.close();
    tmp.cleanup();
  }
});

it("a path lease added and released through the daemon posts chat.py's path.locked and path.lock.unlocked once each", async () => {
  const tmp = tempDir();
  const store = await openStore(join(tmp.dir, "root"));
  const daemon = new DaemonServer({ store, root: store.location, version: "test" });
  const socket = join(tmp.dir, "run", "d.sock");
  await daemon.listen(socket);
  const client = await DaemonClient.connect(socket);
  try {
    await store.init("ch");
    const lease = await client.addPathLease("ch", "src/**", "bob");
    await client.releasePathLease("ch", String(lease.token), "bob");
    const audits = (await store.read("ch", { as: "carol", all: true, everyone: true })).messages
      .filter((m) => m.status.startsWith("path."))
      .map((m) => [
        m.status,
        m.from,
        JSON.parse(m.body).lock_id,
        typeof JSON.parse(m.body).transaction_id,
      ]);
    expect(audits).toEqual([
      ["path.locked", "bob", "agent-chat-1", "string"],
      ["path.lock.unlocked", "bob", "agent-chat-1", "string"],
    ]);
  } finally {
    await client.close();
    await daemon.close();
    await store.close();
    tmp.cleanup();
  }
});
