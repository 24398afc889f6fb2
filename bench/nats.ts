import { FsStore } from "../src/store/fs/fs-store.js";
import { NatsStore } from "../src/store/nats/nats-store.js";
import type { Store } from "../src/store/types.js";
import { NatsServer } from "../test/helpers/nats-server.js";
import { type BenchModule, type Row, sample, stats } from "./lib.js";

/**
 * NATS JetStream store beside the folder store, measured in the same run on the same machine:
 * post latency, post throughput (one connection posting back to back, and two connections
 * contending for one channel), and wake latency (a waiter on one connection, a post on another).
 */
const bench: BenchModule = {
  name: "nats",
  async run(ctx) {
    const posts = ctx.quick ? 100 : 1000;
    const wakes = ctx.quick ? 20 : 150;
    const server = await NatsServer.start();
    try {
      let n = 0;
      const nats = async () => NatsStore.open(server.url(`bench${++n}`));
      const dir = ctx.tmp();
      const folder = async () => new FsStore(dir);
      const rows: Row[] = [];

      const natsPost = await postLatency(await nats(), posts);
      const fsPost = await postLatency(await folder(), posts);
      rows.push({
        group: "nats store",
        figure: "post latency",
        unit: "ms",
        stats: stats(natsPost),
        baseline: { name: "folder store", stats: stats(fsPost) },
        goal: "median under 5 ms on localhost",
        met: stats(natsPost).median < 5,
      });

      const natsTp = await throughput([await nats()], posts);
      const fsTp = await throughput([await folder()], posts);
      rows.push({
        group: "nats store",
        figure: "post throughput, 1 connection",
        unit: "msg/s",
        stats: { n: posts, median: natsTp, p99: natsTp },
        baseline: { name: "folder store", stats: { n: posts, median: fsTp, p99: fsTp } },
        ratio: natsTp / fsTp,
      });

      const ns = server.url(`bench${++n}`);
      const pair = [await NatsStore.open(ns), await NatsStore.open(ns)];
      const natsTp2 = await throughput(pair, posts);
      const fsPair = [await folder(), await folder()];
      const fsTp2 = await throughput(fsPair, posts);
      rows.push({
        group: "nats store",
        figure: "post throughput, 2 contending connections",
        unit: "msg/s",
        stats: { n: posts, median: natsTp2, p99: natsTp2 },
        baseline: { name: "folder store", stats: { n: posts, median: fsTp2, p99: fsTp2 } },
        ratio: natsTp2 / fsTp2,
        note: "gapless seqs; conflicts retried",
      });

      const nsWake = server.url(`bench${++n}`);
      const natsWake = await wakeLatency(
        await NatsStore.open(nsWake),
        await NatsStore.open(nsWake),
        wakes,
      );
      const fsWake = await wakeLatency(await folder(), await folder(), wakes);
      rows.push({
        group: "nats store",
        figure: "wake latency (post on one connection → waiter returns on another)",
        unit: "ms",
        stats: stats(natsWake),
        baseline: { name: "folder store (fs.watch)", stats: stats(fsWake) },
        goal: "p50 ≤ 2 ms (issue 3)",
        met: stats(natsWake).median <= 2,
      });
      return rows;
    } finally {
      await server.dispose();
    }
  },
};

export default bench;

export async function postLatency(store: Store, n: number): Promise<number[]> {
  const channel = `lat-${Date.now()}`;
  await store.init(channel);
  try {
    return await sample(n, () => store.post(channel, { from: "bench", body: "latency probe" }));
  } finally {
    await store.close();
  }
}

/** Messages per second for `n` posts spread over the stores, all started at once. */
async function throughput(stores: Store[], n: number): Promise<number> {
  const channel = `tp-${Date.now()}-${stores.length}`;
  await stores[0]!.init(channel);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      stores[i % stores.length]!.post(channel, { from: `p${i % stores.length}`, body: `m${i}` }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  for (const s of stores) await s.close();
  return n / seconds;
}

/** From the moment `post` returns to the moment the waiter's `wait` resolves, in ms. */
export async function wakeLatency(waiter: Store, poster: Store, n: number): Promise<number[]> {
  const channel = `wake-${Date.now()}`;
  await poster.init(channel);
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      let woke = 0;
      const waiting = waiter.wait([channel], { as: "waiter", timeoutMs: 10_000 }).then(() => {
        woke = performance.now();
      });
      // Give the wait time to park (its first scan finds nothing).
      await new Promise((r) => setTimeout(r, 15));
      const t0 = performance.now();
      await poster.post(channel, { from: "poster", body: `wake ${i}` });
      await waiting;
      out.push(Math.max(0, woke - t0));
    }
  } finally {
    await waiter.close();
    await poster.close();
  }
  return out;
}
