import { fork } from "node:child_process";
import { NatsStore } from "../src/store/nats/nats-store.js";
import type { Store } from "../src/store/types.js";
import { NatsCluster } from "../test/helpers/nats-cluster.js";
import { NatsServer } from "../test/helpers/nats-server.js";
import { type BenchModule, type Row, stats } from "./lib.js";
import { wakeLatency } from "./nats.js";

/** Processes the fan-out's waiting agents are spread over (one connection each). */
const PROCESSES = 4;

/**
 * A 3-node JetStream cluster (namespace R3, reached through the seeds of all three) beside a
 * single nats-server in the same run: post and wake latency, and the fan-out of 1,000 parked
 * agents in a few processes, each woken by one message naming all of them.
 */
const bench: BenchModule = {
  name: "nats cluster",
  async run(ctx) {
    const posts = ctx.quick ? 100 : 500;
    const wakes = ctx.quick ? 20 : 100;
    const agents = 1000;
    const [cluster, single] = await Promise.all([NatsCluster.start(), NatsServer.start()]);
    try {
      let n = 0;
      const onCluster = () => NatsStore.open(cluster.url(`bench${++n}`));
      const onSingle = () => NatsStore.open(single.url(`bench${++n}`));
      const rows: Row[] = [];

      const [clusterTimes, singleTimes] = await postLatencies(
        await onCluster(),
        await onSingle(),
        posts,
      );
      const clusterPost = stats(clusterTimes);
      const singlePost = stats(singleTimes);
      rows.push({
        group: "nats cluster",
        figure: "post latency, 3-node cluster, R3",
        unit: "ms",
        stats: clusterPost,
        baseline: { name: "single server", stats: singlePost },
        goal: "p50 ≤ 2× single server",
        met: clusterPost.median <= 2 * singlePost.median,
      });

      const ns = cluster.url(`bench${++n}`);
      const clusterWake = stats(
        await wakeLatency(await NatsStore.open(ns), await NatsStore.open(ns), wakes),
      );
      const nsSingle = single.url(`bench${++n}`);
      const singleWake = stats(
        await wakeLatency(await NatsStore.open(nsSingle), await NatsStore.open(nsSingle), wakes),
      );
      rows.push({
        group: "nats cluster",
        figure: "wake latency, 3-node cluster, R3",
        unit: "ms",
        stats: clusterWake,
        baseline: { name: "single server", stats: singleWake },
        goal: "p50 ≤ 2× single server",
        met: clusterWake.median <= 2 * singleWake.median,
      });

      const fan = await fanOut(cluster.url(`bench${++n}`), agents);
      const fanSingle = await fanOut(single.url(`bench${++n}`), agents);
      rows.push({
        group: "nats cluster",
        figure: `fan-out: ${agents} parked agents in ${PROCESSES} processes, one post naming all → last wake`,
        unit: "ms",
        stats: { n: 1, median: fan.lastWakeMs, p99: fan.lastWakeMs },
        baseline: {
          name: "single server",
          stats: { n: 1, median: fanSingle.lastWakeMs, p99: fanSingle.lastWakeMs },
        },
        goal: "≤ 1 s",
        met: fan.lastWakeMs <= 1000,
        note:
          `every agent woken once; median wake ${fan.medianWakeMs.toFixed(0)} ms; their receipts ` +
          `and presence all written ${fan.recordedMs.toFixed(0)} ms after the post ` +
          `(single server: ${fanSingle.recordedMs.toFixed(0)} ms)`,
      });
      rows.push({
        group: "nats cluster",
        figure: "memory per parked agent (JS heap; RSS)",
        unit: "KiB",
        stats: { n: agents, median: fan.heapPerAgent / 1024, p99: fan.heapPerAgent / 1024 },
        note: `RSS ${(fan.rssPerAgent / 1024).toFixed(1)} KiB per agent`,
      });
      return rows;
    } finally {
      await Promise.all([cluster.dispose(), single.dispose()]);
    }
  },
};

export default bench;

/**
 * Post latency on two stores, one post on each in turn after a warm-up, so that the machine's
 * drift (a shared VM) falls on both alike.
 */
async function postLatencies(a: Store, b: Store, n: number): Promise<[number[], number[]]> {
  const channel = `lat-${Date.now()}`;
  await a.init(channel);
  await b.init(channel);
  const time = async (store: Store) => {
    const t0 = performance.now();
    await store.post(channel, { from: "bench", body: "latency probe" });
    return performance.now() - t0;
  };
  try {
    for (let i = 0; i < 20; i++) await Promise.all([time(a), time(b)]);
    const [as, bs]: [number[], number[]] = [[], []];
    for (let i = 0; i < n; i++) {
      as.push(await time(a));
      bs.push(await time(b));
    }
    return [as, bs];
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

interface FanOut {
  /** Until every woken agent's receipt and presence were written (the children closed). */
  recordedMs: number;
  lastWakeMs: number;
  medianWakeMs: number;
  heapPerAgent: number;
  rssPerAgent: number;
}

/** Parks `agents` waits over PROCESSES children, posts one message naming all, times the wakes. */
async function fanOut(root: string, agents: number): Promise<FanOut> {
  const admin = await NatsStore.open(root);
  await admin.init("fan");
  const per = agents / PROCESSES;
  const worker = new URL("./workers/fanout-waiter.mjs", import.meta.url).pathname;
  const children = Array.from({ length: PROCESSES }, (_, p) =>
    fork(worker, [root, "fan", String(p * per), String(per)], { execArgv: ["--expose-gc"] }),
  );
  const ready = children.map(
    (child) =>
      new Promise<{ heapPerAgent: number; rssPerAgent: number }>((resolve, reject) => {
        child.once("error", reject);
        child.on("message", (m: { ready?: boolean; heapPerAgent: number; rssPerAgent: number }) => {
          if (m.ready) resolve(m);
        });
      }),
  );
  const settled = children.map(
    (child) =>
      new Promise<number>((resolve) => {
        child.on("message", (m: { settled?: number }) => {
          if (m.settled) resolve(m.settled);
        });
      }),
  );
  const woke = children.map(
    (child) =>
      new Promise<Array<{ as: string; at: number; n: number }>>((resolve) => {
        child.on("message", (m: { woke?: Array<{ as: string; at: number; n: number }> }) => {
          if (m.woke) resolve(m.woke);
        });
      }),
  );
  try {
    const memory = await Promise.all(ready);
    const names = Array.from({ length: agents }, (_, i) => `agent${i}`);
    const t0 = performance.timeOrigin + performance.now();
    await admin.post("fan", { from: "boss", to: names, body: "wake up, all of you" });
    const wakes = (await Promise.all(woke)).flat();
    const names2 = new Set(wakes.map((w) => w.as));
    if (names2.size !== agents || wakes.some((w) => w.n !== 1)) {
      throw new Error(`fan-out: ${names2.size} of ${agents} agents woken with one message each`);
    }
    const ms = wakes.map((w) => w.at - t0).sort((a, b) => a - b);
    return {
      recordedMs: Math.max(...(await Promise.all(settled))) - t0,
      lastWakeMs: ms.at(-1)!,
      medianWakeMs: ms[Math.floor(ms.length / 2)]!,
      heapPerAgent: memory.reduce((a, m) => a + m.heapPerAgent, 0) / PROCESSES,
      rssPerAgent: memory.reduce((a, m) => a + m.rssPerAgent, 0) / PROCESSES,
    };
  } finally {
    for (const child of children) child.kill();
    await admin.close();
  }
}
