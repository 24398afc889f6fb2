import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type BenchModule, type Row, samplePair, stats } from "./lib.js";

const workers = new URL("./workers/", import.meta.url).pathname;
const group = "delivery";

/**
 * Delivery (issue 17): `post --wait-for read` end to end (post → a parked reader in another
 * process returns and moves its cursor → the sender's waitFor sees it and returns), and what
 * recording presence costs a post, with and without it in the same run.
 */
const bench: BenchModule = {
  name: "delivery",
  async run(ctx) {
    const root = ctx.tmp();
    const rows: Row[] = [];
    rows.push(...(await waitForRead(root, ctx.quick ? 15 : 60)));
    rows.push(...(await presenceCost(root, ctx.quick ? 300 : 2_000)));
    return rows;
  },
};

export default bench;

async function waitForRead(root: string, n: number): Promise<Row[]> {
  const sender = new FsStore(root);
  await sender.init("deliver", { members: ["alice", "bob"] });
  const reader = await startReader(root);
  const total: number[] = [];
  const toReader: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t0 = performance.timeOrigin + performance.now();
      const { seq } = await sender.post("deliver", { from: "alice", to: "bob", body: `m${i}` });
      const readAt = reader.next();
      await sender.waitFor("deliver", seq, { state: "read", timeoutMs: 30_000 });
      const t1 = performance.timeOrigin + performance.now();
      total.push(t1 - t0);
      toReader.push((await readAt) - t0);
    }
  } finally {
    await reader.stop();
    await sender.close();
  }
  return [
    {
      group,
      figure: "post --wait-for read: post → reader (another process) reads → sender returns",
      unit: "ms",
      stats: stats(total),
      baseline: { name: "post → the reader's wait returns, same samples", stats: stats(toReader) },
      note: "the sender looks at receipts every 100 ms and on every new message",
    },
  ];
}

async function presenceCost(root: string, n: number): Promise<Row[]> {
  const on = new FsStore(root, { watch: false });
  const off = new FsStore(root, { watch: false, recordPresence: false });
  // One channel for both: a post's cost grows with the channel, which must not favour either.
  await on.init("presence");
  let i = 0;
  try {
    const [throttled, baseline] = await samplePair(
      n,
      () => on.post("presence", { from: "alice", body: "x" }),
      () => off.post("presence", { from: "alice", body: "x" }),
    );
    const [fresh, baseline2] = await samplePair(
      Math.min(n, 500),
      () => on.post("presence", { from: `agent${i++}`, body: "x" }),
      () => off.post("presence", { from: `agent${i++}`, body: "x" }),
    );
    const without = { name: "post with presence off, same run", stats: stats(baseline) };
    return [
      {
        group,
        figure: "post, presence recorded (one write per agent per 5 s: a small read otherwise)",
        unit: "ms",
        stats: stats(throttled),
        baseline: without,
        goal: "≤ 1.10× the post without presence",
        met: stats(throttled).median <= 1.1 * stats(baseline).median,
      },
      {
        group,
        figure: "post as a new agent each time (presence record written every post)",
        unit: "ms",
        stats: stats(fresh),
        baseline: { name: "post with presence off, same run", stats: stats(baseline2) },
      },
    ];
  } finally {
    await on.close();
    await off.close();
  }
}

interface Reader {
  child: ChildProcess;
  next(): Promise<number>;
  stop(): Promise<void>;
}

/** The bench's waiter (bench/workers/waiter.mjs) as bob: each return is a read. */
async function startReader(root: string): Promise<Reader> {
  const child = fork(join(workers, "waiter.mjs"), [root, "deliver", "bob", "watch", "2000"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const queue: number[] = [];
  const takers: Array<(at: number) => void> = [];
  await new Promise<void>((resolve, reject) => {
    child.once("error", reject);
    child.on("message", (msg) => {
      if (msg === "ready") return resolve();
      const { at } = msg as { at: number };
      const take = takers.shift();
      if (take) take(at);
      else queue.push(at);
    });
  });
  return {
    child,
    next: () =>
      queue.length > 0 ? Promise.resolve(queue.shift()!) : new Promise((r) => takers.push(r)),
    stop: async () => {
      child.send("stop");
      await new Promise((r) => child.once("exit", r));
    },
  };
}
