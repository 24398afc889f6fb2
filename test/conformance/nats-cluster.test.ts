import { afterAll, beforeAll, describe, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { clusterSkipReason, NatsCluster } from "../helpers/nats-cluster.js";
import { storeConformance } from "./suite.js";

// One 3-node cluster for the file; every test gets a fresh namespace, replicated on all three,
// reached through the seeds of every node.
let cluster: NatsCluster | undefined;
let counter = 0;

const skipReason = clusterSkipReason;
if (skipReason) {
  describe("Store conformance: nats cluster", () => {
    it.skip(skipReason, () => {});
  });
} else {
  beforeAll(async () => {
    cluster = await NatsCluster.start();
  }, 60_000);
  afterAll(async () => {
    await cluster?.dispose();
  });

  storeConformance("nats cluster (R3)", async (now) => {
    const url = cluster!.url(`confcl${process.pid}-${++counter}`);
    return {
      open: () => openStore(url, { now }),
      cleanup: async () => {},
    };
  });
}
