import { existsSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { expect, it, vi } from "vitest";
import { describeCluster } from "../helpers/describe-cluster.js";
import { type ClusterNode, NatsCluster } from "../helpers/nats-cluster.js";

describeCluster("test helper: a 3-node JetStream cluster", () => {
  it("starts ready (one meta leader, three peers), survives a node stopping, frozen or killed, and cleans up", async () => {
    const cluster = await NatsCluster.start();
    const dir = cluster.dir;
    try {
      const meta = await cluster.nodes[0]!.meta();
      expect(meta?.cluster_size).toBe(3);
      expect(meta?.leader).toMatch(/^n[123]$/);
      // Ready means every node gossips every client URL: a client learns the whole cluster from
      // any one node at once (a moment after start-up, a node may have heard of two only).
      for (const node of cluster.nodes) {
        const nc = await connect({ servers: node.server });
        expect(nc.info?.cluster).toBe("agentchat-test");
        expect(nc.info?.connect_urls?.length, `client URLs ${node.name} names`).toBe(3);
        await nc.close();
      }

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

  it("partitionable: every route goes through the proxies; a node cut off has no route and the others elect without it; healed, all three are peers again", async () => {
    const cluster = await NatsCluster.start(3, { partitionable: true });
    try {
      const [n1, n2, n3] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
      cluster.isolate(n1);
      await vi.waitFor(
        async () => {
          expect(await n1.routes()).toBe(0);
          // The other two still reach each other.
          expect(await n2.routes()).toBeGreaterThan(0);
          expect(await n3.routes()).toBeGreaterThan(0);
          const meta = await n2.meta();
          expect(meta?.leader).toMatch(/^n[23]$/);
          expect(meta?.replicas?.find((r) => r.name === "n1")?.current).toBeFalsy();
        },
        { timeout: 30_000, interval: 200 },
      );
      // The cut follows the node across a restart (it starts with a new server ID).
      await n1.kill();
      const refused = cluster.refusedRoutes;
      await n1.start();
      await vi.waitFor(() => expect(cluster.refusedRoutes).toBeGreaterThan(refused + 1), {
        timeout: 15_000,
      });
      expect(await n1.routes()).toBe(0);
      cluster.heal();
      await cluster.waitReady(30_000);
      expect(await n1.routes()).toBeGreaterThan(0);
    } finally {
      await cluster.dispose();
    }
  }, 120_000);
});
