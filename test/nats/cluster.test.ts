import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { parseNatsUrl } from "../../src/store/roots.js";
import { runCli } from "../helpers/cli.js";
import { describeCluster } from "../helpers/describe-cluster.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { NatsServer } from "../helpers/nats-server.js";
import { tempDir } from "../helpers/tmp.js";

let cluster: NatsCluster;
let single: NatsServer;
let counter = 0;
const ns = () => `cl${process.pid}-${++counter}`;

/** The replicas of a namespace's message stream and KV bucket, as the server keeps them. */
async function replicasOf(server: string, namespace: string): Promise<number[]> {
  const nc = await connect({ servers: server });
  try {
    const jsm = await jetstreamManager(nc);
    const streams = [`AGENTCHAT_${namespace}`, `KV_agentchat-${namespace}`];
    return await Promise.all(
      streams.map(async (s) => (await jsm.streams.info(s)).config.num_replicas),
    );
  } finally {
    await nc.close();
  }
}

describeCluster("nats on a 3-node cluster: replication", () => {
  beforeAll(async () => {
    [cluster, single] = await Promise.all([NatsCluster.start(), NatsServer.start()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([cluster?.dispose(), single?.dispose()]);
  });

  const first = () => `nats://127.0.0.1:${cluster.nodes[0]!.port}`;

  it("a new namespace keeps 3 copies of its stream and bucket on a 3-node cluster, 1 on a single server", async () => {
    const name = ns();
    const store = await NatsStore.open(`${first()}/${name}`);
    await store.close();
    expect(await replicasOf(first(), name)).toEqual([3, 3]);
    const alone = await NatsStore.open(single.url(name));
    await alone.close();
    expect(await replicasOf(`nats://127.0.0.1:${single.port}`, name)).toEqual([1, 1]);
  });

  it("?replicas=N in the root (or AGENT_CHAT_NATS_REPLICAS) sets the copies; more than the cluster has is refused clearly", async () => {
    const name = ns();
    await (await NatsStore.open(`${first()}/${name}?replicas=2`)).close();
    expect(await replicasOf(first(), name)).toEqual([2, 2]);
    await expect(NatsStore.open(`${first()}/${ns()}?replicas=4`)).rejects.toThrow(
      /replicas 4 is more than the 3 JetStream servers/,
    );
    await expect(NatsStore.open(single.url(`${ns()}?replicas=3`))).rejects.toThrow(
      /replicas 3 needs a JetStream cluster, but nats:\/\/127\.0\.0\.1:\d+ is a single server/,
    );
    const viaEnv = ns();
    const cli = await runCli(["init", "general"], {
      root: `${first()}/${viaEnv}`,
      env: { AGENT_CHAT_NATS_REPLICAS: "2" },
    });
    expect(cli.stderr).toBe("");
    expect(await replicasOf(first(), viaEnv)).toEqual([2, 2]);
    const refused = await runCli(["channels"], {
      root: `${first()}/${ns()}`,
      env: { AGENT_CHAT_NATS_REPLICAS: "5" },
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/replicas 5 is more than the 3 JetStream servers/);
  });

  it("an R1 namespace on the cluster warns once on open, and `agent-chat nats replicas NS 3` raises it with its messages", async () => {
    const name = ns();
    const r1 = await NatsStore.open(`${first()}/${name}?replicas=1`);
    await r1.init("general");
    await r1.post("general", { from: "alice", body: "kept" });
    await r1.close();

    const warned = await runCli(["channels"], { root: `${first()}/${name}` });
    expect(warned.code).toBe(0);
    const lines = warned.stderr.split("\n").filter((l) => l.includes("warning"));
    expect(lines).toEqual([
      `agent-chat: warning: namespace ${name} keeps 1 copy on a cluster of 3 servers: losing the node that holds it stops it; raise it with: agent-chat nats replicas ${name} 3`,
    ]);

    const raised = await runCli(["nats", "replicas", name, "3"], { root: `${first()}/general` });
    expect(raised.stderr).toBe("");
    expect(raised.stdout).toContain(`namespace ${name} keeps 3 copies`);
    expect(await replicasOf(first(), name)).toEqual([3, 3]);
    const after = await runCli(["read", "general", "--as", "bob"], { root: `${first()}/${name}` });
    expect(after.stderr).toBe("");
    expect(after.stdout).toContain("kept");

    const tooMany = await runCli(["nats", "replicas", name, "4"], { root: `${first()}/${name}` });
    expect(tooMany.code).not.toBe(0);
    expect(tooMany.stderr).toMatch(/replicas 4 is more than the 3 JetStream servers/);
  });
});

describe("nats root URL with several seed servers", () => {
  it("parses every seed (port 4222 by default), credentials, namespace and ?replicas", () => {
    const t = parseNatsUrl("nats://u:p@h1:4300,h2,[::1]:4301/team-a?replicas=2");
    expect(t.servers).toEqual(["nats://h1:4300", "nats://h2:4222", "nats://[::1]:4301"]);
    expect(t.server).toBe("nats://h1:4300,h2:4222,[::1]:4301");
    expect(t.location).toBe("nats://h1:4300,h2:4222,[::1]:4301/team-a");
    expect([t.namespace, t.user, t.pass, t.replicas]).toEqual(["team-a", "u", "p", 2]);
    expect(parseNatsUrl("tls://tok@h1/ns").token).toBe("tok");
    expect(() => parseNatsUrl("nats://h1,:x/ns")).toThrow(/not a valid server/);
    expect(() => parseNatsUrl("nats://h1/ns?replicas=6")).toThrow(/from 1 to 5/);
  });
});

describeCluster("nats on a 3-node cluster: seeds", () => {
  beforeAll(async () => {
    cluster = await NatsCluster.start();
  }, 60_000);
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("an agent starts while one seed of the root is down (seeds in the URL, or in AGENT_CHAT_NATS_CONFIG)", async () => {
    const name = ns();
    const root = cluster.url(name);
    expect((await runCli(["init", "general"], { root })).code).toBe(0);
    const down = cluster.nodes[0]!;
    await down.stop();
    const config = tempDir("agent-chat-seeds-");
    try {
      await cluster.waitReady();
      const posted = await runCli(["post", "general", "--from", "alice", "--body", "hi"], { root });
      expect(posted.stderr).toBe("");
      expect(posted.stdout).toContain("posted #1");
      // Only the stopped node in the URL; the other two come from the config file.
      const file = join(config.dir, "nats.json");
      const others = cluster.nodes.slice(1).map((n) => `127.0.0.1:${n.port}`);
      writeFileSync(file, JSON.stringify({ servers: others }));
      const read = await runCli(["read", "general", "--as", "bob"], {
        root: `nats://127.0.0.1:${down.port}/${name}`,
        env: { AGENT_CHAT_NATS_CONFIG: file },
      });
      expect(read.stderr).toBe("");
      expect(read.stdout).toContain("hi");
      const alone = await runCli(["read", "general", "--as", "bob"], {
        root: `nats://127.0.0.1:${down.port}/${name}`,
        env: { AGENT_CHAT_NATS_TIMEOUT: "1" },
      });
      expect(alone.code).not.toBe(0);
      expect(alone.stderr).toMatch(
        /cannot connect to nats:\/\/127\.0\.0\.1:\d+: connection refused/,
      );
    } finally {
      config.cleanup();
      await down.start();
      await cluster.waitReady();
    }
  });
});
