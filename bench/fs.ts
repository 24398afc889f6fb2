import { type ChildProcess, execFile, fork } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { formatTimestamp, messageFileName, serializeMessage } from "../src/core/message.js";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type BenchContext, type BenchModule, type Row, samplePair, stats } from "./lib.js";

const execFileP = promisify(execFile);
const workers = new URL("./workers/", import.meta.url).pathname;

/** Fills a channel with `count` well-formed messages written directly (fast), as if posted. */
export async function makeChannel(root: string, channel: string, count: number): Promise<void> {
  const store = new FsStore(root);
  await store.init(channel);
  await store.close();
  const dir = join(root, channel);
  const ts = formatTimestamp();
  for (let seq = 1; seq <= count; seq++) {
    const text = serializeMessage({
      seq,
      from: "filler",
      to: "nobody",
      channel,
      ts,
      title: "filler",
      body: `old ${seq}`,
    });
    writeFileSync(join(dir, messageFileName(seq, "filler", "filler")), text);
  }
  writeFileSync(join(dir, ".seq"), String(count));
}

interface Waiter {
  child: ChildProcess;
  next(): Promise<{ at: number; seqs: number[] }>;
  stop(): Promise<void>;
}

async function startWaiter(
  root: string,
  channel: string,
  watch: boolean,
  intervalMs: number,
): Promise<Waiter> {
  const child = fork(
    join(workers, "waiter.mjs"),
    [root, channel, "bob", watch ? "watch" : "poll", String(intervalMs)],
    {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const queue: Array<{ at: number; seqs: number[] }> = [];
  const takers: Array<(v: { at: number; seqs: number[] }) => void> = [];
  await new Promise<void>((resolve, reject) => {
    child.once("error", reject);
    child.on("message", (msg) => {
      if (msg === "ready") return resolve();
      const item = msg as { at: number; seqs: number[] };
      const take = takers.shift();
      if (take) take(item);
      else queue.push(item);
    });
  });
  return {
    child,
    next: () => {
      const item = queue.shift();
      return item ? Promise.resolve(item) : new Promise((r) => takers.push(r));
    },
    stop: async () => {
      child.send("stop");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

const now = () => performance.timeOrigin + performance.now();
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Post from this process → `wait` returns in a waiter process; ms, from the start of the post. */
/**
 * Wake latency on several channels at once: one waiter process parked on each, and posts that
 * take turns between them, so that load on the machine falls on every channel alike.
 */
async function wakeLatencies(
  root: string,
  channels: readonly string[],
  samples: number,
): Promise<number[][]> {
  const waiters = await Promise.all(channels.map((c) => startWaiter(root, c, true, 60_000)));
  const poster = new FsStore(root);
  await pause(200);
  const out = channels.map((): number[] => []);
  for (let i = 0; i < samples + 5; i++) {
    for (const [k, channel] of channels.entries()) {
      const t0 = now();
      await poster.post(channel, { from: "alice", to: "bob", title: "ping", body: `ping ${i}` });
      const { at } = await waiters[k]!.next();
      if (i >= 5) out[k]!.push(at - t0); // the first few warm the waiter's index and caches
      await pause(5);
    }
  }
  await poster.close();
  await Promise.all(waiters.map((w) => w.stop()));
  return out;
}

/** The reference's way: a sleep-poll every 5 s. Many waiters at once keep this run short. */
async function pollLatency(ctx: BenchContext, waiters: number, rounds: number): Promise<number[]> {
  const root = ctx.tmp();
  const out: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const list: Waiter[] = [];
    const setup = new FsStore(root);
    for (let w = 0; w < waiters; w++) {
      const channel = `poll-${round}-${w}`;
      await setup.init(channel);
      list.push(await startWaiter(root, channel, false, 5000));
    }
    await setup.close();
    // Each post at its own random moment of the 5 s cycle, as real posts arrive at any moment.
    // (An even spread can fall in step with the waiters' start-up times, which set their poll
    // phases, and then measures the phase, not the poll.)
    const poster = new FsStore(root);
    await Promise.all(
      list.map(async (waiter, w) => {
        await pause(Math.random() * 5000);
        const t0 = now();
        await poster.post(`poll-${round}-${w}`, { from: "alice", to: "bob", body: "ping" });
        out.push((await waiter.next()).at - t0);
      }),
    );
    await poster.close();
    await Promise.all(list.map((w) => w.stop()));
  }
  return out;
}

/**
 * The floor a locked post cannot beat: mkdir lock, read the counter, write a temporary file,
 * rename it into place, write the counter, rmdir — with the cheapest calls there are
 * (synchronous ones, as the store itself uses inside the lock).
 */
function rawFloor(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const counter = join(dir, ".counter");
  writeFileSync(counter, "0");
  const text = serializeMessage({
    seq: 1,
    from: "alice",
    to: "all",
    channel: "floor",
    ts: formatTimestamp(),
    title: "bench",
    body: "x",
  });
  const lock = join(dir, "_seq.lock");
  return () => {
    mkdirSync(lock);
    const seq = Number(readFileSync(counter, "utf8")) + 1;
    const tmp = join(dir, ".tmp-floor");
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, messageFileName(seq, "alice", "bench")));
    writeFileSync(counter, String(seq));
    rmdirSync(lock);
  };
}

interface PosterReport {
  seqs: number[];
  ms: number;
}

async function posters(root: string, channel: string, processes: number, each: number) {
  const t0 = performance.now();
  const reports = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      execFileP(
        process.execPath,
        [join(workers, "poster.mjs"), root, channel, `p${i}`, String(each)],
        {
          timeout: 300_000,
        },
      ).then((r) => JSON.parse(r.stdout) as PosterReport),
    ),
  );
  const wall = performance.now() - t0;
  const seqs = reports.flatMap((r) => r.seqs);
  const duplicates = seqs.length - new Set(seqs).size;
  // Throughput over the posting itself: the slowest process's posting time (all ran at once).
  const busyMs = Math.max(...reports.map((r) => r.ms));
  return { perSecond: (seqs.length / busyMs) * 1000, duplicates, wall, seqs };
}

const folder = "folder store";

export const fsBench: BenchModule = {
  name: "folder store and CLI",
  async run(ctx) {
    const rows: Row[] = [];
    const q = ctx.quick;
    const root = ctx.tmp();

    // Wake latency on the watch path, against the reference's 5 s sleep-poll, and at 100,000
    // messages against 1,000 (measured together, taking turns).
    const bigCount = 100_000;
    await makeChannel(root, "small", 1000);
    await makeChannel(root, "big", bigCount);
    const [wake1k, wakeBig] = await wakeLatencies(root, ["small", "big"], q ? 60 : 300);
    const poll = await pollLatency(ctx, q ? 8 : 12, q ? 1 : 2);
    const wakeStats = stats(wake1k!);
    rows.push({
      group: folder,
      figure: "wake latency: post (one process) → wait returns (another), 1,000 msgs",
      unit: "ms",
      stats: wakeStats,
      baseline: { name: "sleep-poll every 5 s (reference)", stats: stats(poll) },
      goal: "p50 ≤ 2 ms, p99 ≤ 10 ms",
      met: wakeStats.median <= 2 && wakeStats.p99 <= 10,
    });

    const wake100k = stats(wakeBig!);
    rows.push({
      group: folder,
      figure: `wake latency at ${bigCount.toLocaleString("en")} msgs`,
      unit: "ms",
      stats: wake100k,
      baseline: { name: "same at 1,000 msgs", stats: wakeStats },
      goal: "ratio ≤ 1.5",
      met: wake100k.median / wakeStats.median <= 1.5,
    });

    // Post, in-process, single writer, against the raw floor.
    const store = new FsStore(root);
    await store.init("post");
    const n = q ? 300 : 1500;
    const [floorTimes, postTimes] = await samplePair(n, rawFloor(join(ctx.tmp(), "floor")), () =>
      store.post("post", { from: "alice", title: "bench", body: "x" }),
    );
    const floor = stats(floorTimes);
    const post = stats(postTimes);
    rows.push({
      group: folder,
      figure: "post, library, single writer, in-process",
      unit: "ms",
      stats: post,
      baseline: {
        name: "raw floor: mkdir lock + counter + temp write + rename + rmdir",
        stats: floor,
      },
      goal: "≤ 1.5× the floor",
      met: post.median / floor.median <= 1.5,
    });

    // Post at 100,000 against post at 1,000 (both warm, in-process).
    const [smallTimes, bigTimes] = await samplePair(
      n,
      () => store.post("small", { from: "alice", to: "nobody", body: "x" }),
      () => store.post("big", { from: "alice", to: "nobody", body: "x" }),
    );
    const postSmall = stats(smallTimes);
    const postBig = stats(bigTimes);
    rows.push({
      group: folder,
      figure: `post at ${bigCount.toLocaleString("en")} msgs`,
      unit: "ms",
      stats: postBig,
      baseline: { name: "post at 1,000 msgs", stats: postSmall },
      goal: "ratio ≤ 2",
      met: postBig.median / postSmall.median <= 2,
    });

    // read of 10 new messages at 100,000 against 1,000 (a reader kept open, as an agent's is).
    const readTen = async (channel: string) => {
      const reader = new FsStore(root);
      await reader.read(channel, { as: "reader" });
      const times: number[] = [];
      for (let i = 0; i < (q ? 40 : 200); i++) {
        for (let k = 0; k < 10; k++) await store.post(channel, { from: "alice", body: `new ${k}` });
        const t0 = performance.now();
        const r = await reader.read(channel, { as: "reader" });
        times.push(performance.now() - t0);
        if (r.messages.length !== 10)
          throw new Error(`read got ${r.messages.length} messages, not 10`);
      }
      await reader.close();
      return stats(times.slice(3));
    };
    const readSmall = await readTen("small");
    const readBig = await readTen("big");
    rows.push({
      group: folder,
      figure: `read of 10 new messages at ${bigCount.toLocaleString("en")} msgs`,
      unit: "ms",
      stats: readBig,
      baseline: { name: "same at 1,000 msgs", stats: readSmall },
      goal: "ratio ≤ 3",
      met: readBig.median / readSmall.median <= 3,
    });
    await store.close();

    // Throughput: 8 processes at once against one.
    const total = q ? 800 : 2400;
    const tRoot = ctx.tmp();
    const setup = new FsStore(tRoot);
    await setup.init("one");
    await setup.init("eight");
    await setup.close();
    const one = await posters(tRoot, "one", 1, total);
    const eight = await posters(tRoot, "eight", 8, total / 8);
    const gapless = eight.seqs.sort((a, b) => a - b).every((s, i) => s === i + 1);
    rows.push({
      group: folder,
      figure: "post throughput, 8 processes at once",
      unit: "posts/s",
      stats: { n: total, median: eight.perSecond, p99: Number.NaN },
      baseline: {
        name: "single writer",
        stats: { n: total, median: one.perSecond, p99: Number.NaN },
      },
      ratio: eight.perSecond / one.perSecond,
      goal: "≥ 0.8×, zero duplicates",
      met: eight.perSecond / one.perSecond >= 0.8 && eight.duplicates === 0 && gapless,
      note: `${eight.duplicates} duplicates, ${gapless ? "gapless" : "GAPS"}`,
    });

    return rows;
  },
};
