import { JetStreamApiError } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { DEFAULT_NATS_TIMEOUT_MS } from "../../src/store/nats/connect.js";
import {
  CLUSTER_ELECTION_MS,
  NOT_ROUTED_YET,
  patiently,
  retryWindowMs,
} from "../../src/store/nats/patience.js";

describe("nats patience: how long a call keeps trying", () => {
  it("on a cluster, by default, a call outlasts an election: two of nats-server's 4-9 s rounds", () => {
    expect(retryWindowMs(undefined, DEFAULT_NATS_TIMEOUT_MS, true, 2)).toBe(CLUSTER_ELECTION_MS);
    expect(retryWindowMs(undefined, DEFAULT_NATS_TIMEOUT_MS, true, 1)).toBe(CLUSTER_ELECTION_MS);
    expect(CLUSTER_ELECTION_MS).toBeGreaterThanOrEqual(2 * 9_000);
  });

  it("a single server, or a timeout the user gave, bounds the retries by that timeout", () => {
    expect(retryWindowMs(undefined, DEFAULT_NATS_TIMEOUT_MS, false, 2)).toBe(10_000);
    expect(retryWindowMs(undefined, DEFAULT_NATS_TIMEOUT_MS, false, 1)).toBe(5_000);
    expect(retryWindowMs(1_000, DEFAULT_NATS_TIMEOUT_MS, true, 2)).toBe(2_000);
    expect(retryWindowMs(30_000, DEFAULT_NATS_TIMEOUT_MS, true, 1)).toBe(30_000);
  });

  it("a request nobody on a cluster listened to yet is sent again until it is answered", async () => {
    let calls = 0;
    const answer = await patiently(async () => {
      if (++calls < 3) {
        throw new AgentChatError("BACKEND_UNAVAILABLE", `cannot create x: ${NOT_ROUTED_YET}`);
      }
      return "created";
    }, Date.now() + 60_000);
    expect(answer).toBe("created");
    expect(calls).toBe(3);
  });

  it("a stream creation refused because the cluster has not heard from a server it lists yet (just started) is sent again", async () => {
    let calls = 0;
    const answer = await patiently(async () => {
      if (++calls < 3) {
        throw new JetStreamApiError({
          code: 400,
          err_code: 10005,
          description: "no suitable peers for placement, peer offline",
        });
      }
      return "created";
    }, Date.now() + 60_000);
    expect(answer).toBe("created");
    expect(calls).toBe(3);
  });

  it("a server without JetStream, or any other refusal, is not asked again", async () => {
    let calls = 0;
    const refused = patiently(async () => {
      calls++;
      throw new AgentChatError("BACKEND_UNAVAILABLE", "JetStream is not enabled on nats://h:4222");
    }, Date.now() + 60_000);
    await expect(refused).rejects.toThrow(/not enabled/);
    expect(calls).toBe(1);
  });
});
