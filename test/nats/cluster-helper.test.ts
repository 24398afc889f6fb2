import { existsSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { natsSkipReason } from "../helpers/nats-server.js";
import { skipName } from "../helpers/tools.js";

const SUITE = skipName("test helper: a 3-node JetStream cluster", natsSkipReason);
describe.skipIf(natsSkipReason !== undefined)(SUITE, () => {
  it("starts ready (one meta leader, three peers), survives a node stopping, frozen or killed, and cleans up", async () => {
    const cluster = await NatsCluster.start();
    const dir = cluster.dir;
    try {
      const meta = await cluster.nodes[0]!.meta();
      expect(meta?.cluster_size).toBe(3);
      expect(meta?.leader).toMatch(/^n[123]$/);
      // Every node gossips the others' client URLs: a client learns the whole cluster from one.
      const nc = await connect({ servers: cluster.nodes[0]!.server });
      expect(nc.info?.cluster).toBe("agentchat-test");
      expect(nc.info?.connect_urls?.length).toBe(3);
      await nc.close();

      const leader = cluster.nodes.find((n) => n.name === meta?.leader)!;
      await leader.kill();
      await cluster.waitReady();
      const after = await cluster.nodes.find((n) => n.running)!.meta();
      expect(after?.leader).not.toBe(leader.name);
      await leader.start();
      await cluster.waitReady();

      const frozen = cluster.nodes[1]!;
      frozen.pause();
      // Frozen, it answers nothing (its monitoring port neither) but its process is there.
      expect(await frozen.meta()).toBeUndefined();
      expect(frozen.running).toBe(true);
      frozen.resume();
      expect((await frozen.meta())?.cluster_size).toBe(3);
      await cluster.waitReady();
    } finally {
      await cluster.dispose();
    }
    expect(cluster.nodes.some((n) => n.running)).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });
});
