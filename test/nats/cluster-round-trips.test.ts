import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { natsSkipReason } from "../helpers/nats-server.js";
import { skipName } from "../helpers/tools.js";

let cluster: NatsCluster;
let counter = 0;
const root = () => cluster.url(`rt${process.pid}-${++counter}`);

/** Counts the requests a store's connection sends (each is one round trip to a server). */
function countRequests(store: NatsStore): { readonly n: number } {
  const counted = { n: 0 };
  const nc = store.nc as unknown as { request: (...args: unknown[]) => Promise<unknown> };
  const request = nc.request.bind(nc);
  nc.request = (...args: unknown[]) => {
    counted.n++;
    return request(...args);
  };
  return counted;
}

async function until(condition: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const SUITE = skipName("nats cluster: round trips per operation", natsSkipReason);
describe.skipIf(natsSkipReason !== undefined)(SUITE, () => {
  beforeAll(async () => {
    cluster = await NatsCluster.start();
  }, 60_000);
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("a post through a cluster is one request once the store has posted there", async () => {
    const store = await NatsStore.open(root());
    try {
      await store.init("team");
      await store.post("team", { from: "alice", body: "first" });
      const requests = countRequests(store);
      for (let i = 0; i < 20; i++) await store.post("team", { from: "alice", body: `m${i}` });
      expect(requests.n).toBe(20);
      const seqs = (await store.read("team", { as: "bob" })).messages.map((m) => m.seq);
      expect(seqs).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    } finally {
      await store.close();
    }
  }, 30_000);

  it("100 agents parked and woken at once through one connection: a few requests each, every one woken once", async () => {
    const url = root();
    const admin = await NatsStore.open(url);
    const waiter = await NatsStore.open(url);
    const agents = Array.from({ length: 100 }, (_, i) => `agent${i}`);
    try {
      await admin.init("fan");
      await waiter.read("fan", { as: "agent0", peek: true });
      const requests = countRequests(waiter);
      const waits = agents.map((as) => waiter.wait(["fan"], { as, timeoutMs: 60_000 }));
      await until(
        async () =>
          (await admin.who()).filter((p) => p.state === "waiting").length === agents.length,
      );
      await admin.post("fan", { from: "boss", to: agents, body: "wake up" });
      const results = await Promise.all(waits);
      expect(results.map((r) => r.messages.length)).toEqual(agents.map(() => 1));
      // A wait answers once its cursor is saved; its receipt and presence follow, and a store
      // closing writes them first.
      await waiter.close();
      // Parking and waking each record presence and a receipt on a cluster, where every write
      // of the bucket is checked against the last: done one by one they retried each other's
      // writes: dozens of requests per agent, tens of seconds for a thousand agents.
      expect(requests.n / agents.length).toBeLessThan(25);
      const who = await admin.who("fan");
      expect(who.filter((p) => p.state === "waiting")).toEqual([]);
      const receipts = await admin.receipts("fan", 1);
      expect(receipts.addressees.filter((r) => r.state === "read")).toHaveLength(agents.length);
    } finally {
      await Promise.all([admin.close(), waiter.close()]);
    }
  }, 60_000);
});
