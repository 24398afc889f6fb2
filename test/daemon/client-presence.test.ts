import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openStore } from "../../src/client/open.js";
import { DaemonClient } from "../../src/daemon/client.js";
import { DaemonServer } from "../../src/daemon/server.js";
import type { PresenceInfo, Store } from "../../src/store/types.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * Through a daemon, presence names the client's own process (its `hello`), not the daemon's:
 * `who` tells a CLI or MCP client's liveness, and a client killed mid-wait is gone.
 */
describe("daemon: presence names the client, not the daemon", () => {
  let tmp: ReturnType<typeof tempDir>;
  let store: Store;
  let daemon: DaemonServer;
  let socket: string;
  let env: Record<string, string>;
  let watcher: DaemonClient;

  beforeEach(async () => {
    tmp = tempDir();
    const root = join(tmp.dir, "root");
    store = await openStore(root);
    await store.init("review", { members: ["alice", "bob"] });
    daemon = new DaemonServer({ store, root: store.location, version: "test" });
    socket = join(tmp.dir, "run", "d.sock");
    await daemon.listen(socket);
    env = { AGENT_CHAT_ROOT: root, AGENT_CHAT_SOCKET: socket, AGENT_CHAT_HARNESS: "codex" };
    watcher = await DaemonClient.connect(socket);
  });

  afterEach(async () => {
    await watcher.close();
    await daemon.close();
    await store.close();
    tmp.cleanup();
  });

  const bob = async (): Promise<PresenceInfo | undefined> =>
    (await watcher.who("review")).find((p) => p.agent === "bob");

  it("a CLI client parked in wait shows its own pid and harness, and gone once SIGKILLed", async () => {
    const waiter = startCli(["wait", "review", "--as", "bob", "--timeout", "60"], { env });
    await vi.waitFor(async () => expect((await bob())?.state).toBe("waiting"), {
      timeout: 15_000,
      interval: 100,
    });
    expect(await bob()).toMatchObject({ harness: "codex", pid: waiter.pid, parkedOn: ["review"] });
    expect(daemon.info().connections).toBe(2);
    waiter.kill("SIGKILL");
    await collect(waiter);
    const killed = Date.now();
    await vi.waitFor(
      async () => {
        const info = await bob();
        expect(info).toMatchObject({ state: "gone", pid: waiter.pid });
        expect(info?.why).toMatch(/waiting process \d+ died/);
      },
      { timeout: 5_000, interval: 100 },
    );
    expect(Date.now() - killed).toBeLessThan(5_000);
  });

  it("a CLI post through the daemon records the client's harness and pid", async () => {
    const r = await runCli(["post", "review", "--from", "alice", "--body", "hi"], { env });
    expect(r.code).toBe(0);
    const alice = (await watcher.who("review")).find((p) => p.agent === "alice");
    expect(alice?.harness).toBe("codex");
    expect(alice?.pid).not.toBe(process.pid);
    expect(alice?.state).toBe("active");
  });

  it("a client that closes its connection mid-wait is no longer waiting (alive: active)", async () => {
    const client = await DaemonClient.connect(socket, { harness: "mcp" });
    const parked = client.wait(["review"], { as: "bob", timeoutMs: 20_000 }).catch(() => {});
    await vi.waitFor(async () => expect((await bob())?.state).toBe("waiting"), {
      timeout: 5_000,
      interval: 50,
    });
    expect(await bob()).toMatchObject({ harness: "mcp", pid: process.pid });
    await client.close();
    await parked;
    await vi.waitFor(async () => expect((await bob())?.state).toBe("active"), {
      timeout: 5_000,
      interval: 50,
    });
  });
});
