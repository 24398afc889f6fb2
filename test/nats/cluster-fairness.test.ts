import { expect, it } from "vitest";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { describeCluster } from "../helpers/describe-cluster.js";
import { NatsCluster } from "../helpers/nats-cluster.js";

const POSTERS = 4;
/** Posts made in all: every poster posts without pause until there are so many. */
const TOTAL = 3000;
/** "A few tries": a post that keeps losing to a poster one request ahead takes its turn. */
const MOST_TRIES = 40;

describeCluster("nats cluster: fair order under contention", () => {
  it(`${POSTERS} posters on one channel posting without pause, ${TOTAL} posts in all: no post takes more than ${MOST_TRIES} tries, and readers see only the posts`, async () => {
    const cluster = await NatsCluster.start();
    try {
      const url = cluster.url(`fair${process.pid}`);
      const admin = await NatsStore.open(url);
      await admin.init("ch");
      const tries: number[] = [];
      const posters = await Promise.all(
        Array.from({ length: POSTERS }, () =>
          NatsStore.open(url, { onPosted: (p) => tries.push(p.tries) }),
        ),
      );
      let started = 0;
      // Each poster keeps posting while the others do: a loser meets a winner all along.
      await Promise.all(
        posters.map(async (store, p) => {
          for (let i = 0; started++ < TOTAL; i++) {
            await store.post("ch", { from: `p${p}`, body: `p${p} ${i}` });
          }
        }),
      );
      tries.sort((a, b) => a - b);
      console.log(
        `${TOTAL} contended posts by ${POSTERS} posters on a cluster: tries p50 ${tries[tries.length >> 1]}, p99 ${tries[Math.floor(tries.length * 0.99)]}, max ${tries.at(-1)}`,
      );
      expect(tries.at(-1)).toBeLessThanOrEqual(MOST_TRIES);
      const messages = await admin.peek("ch", 1_000_000);
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: TOTAL }, (_, k) => k + 1));
      expect(new Set(messages.map((m) => m.body)).size).toBe(TOTAL);
      expect((await admin.dump("ch")).messages).toHaveLength(TOTAL);
      await Promise.all([admin, ...posters].map((s) => s.close()));
    } finally {
      await cluster.dispose();
    }
  }, 120_000);
});
