import { describe } from "vitest";
import { clusterSkipNote, clusterSkipReason } from "./nats-cluster.js";

/**
 * A describe block that needs a cluster of nats-server 2.10 or newer: skipped outside CI with
 * the reason in its name, failing in CI (NatsCluster.start refuses there).
 */
export function describeCluster(name: string, tests: () => void): void {
  describe.skipIf(clusterSkipReason !== undefined)(`${name}${clusterSkipNote}`, tests);
}
