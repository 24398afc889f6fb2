import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatTimestamp, messageFileName, serializeMessage } from "../src/core/message.js";
import { DaemonClient } from "../src/daemon/client.js";
import { DaemonServer } from "../src/daemon/server.js";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type BenchContext, type BenchModule, type Row, stats } from "./lib.js";

/**
 * Search, threads and retention (issue 20): the first search over a big channel against `grep
 * -rl` over the same files; later searches through a daemon (whose store keeps the index);
 * `thread` of a 50-message thread against `peek -n 50`; and `post`, `read` and a cold
 * `channels` on a channel of which 90 % was archived against a channel of that 10 % size.
 */
const WORDS = ["postgres", "deploy", "schema", "rollback", "latency", "review", "budget", "cache"];

/** `count` messages written directly (fast, as if posted); the last 50 form one thread. */
export function fillChannel(root: string, channel: string, count: number): void {
  const dir = join(root, channel);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "_meta.json"),
    `${JSON.stringify({ channel, members: [], topic: "", created: formatTimestamp() }, null, 2)}\n`,
  );
  const ts = formatTimestamp(new Date(Date.now() - 40 * 86_400_000));
  const threadFrom = count - 49;
  for (let seq = 1; seq <= count; seq++) {
    const word = WORDS[seq % WORDS.length]!;
    const title = `note ${seq} on ${word}`;
    const text = serializeMessage({
      seq,
      from: `agent${seq % 7}`,
      to: "all",
      channel,
      ts,
      title,
      body: `Some words about ${word} and item ${seq}, with a number ${seq * 7919}.`,
      ...(seq > threadFrom ? { replyTo: seq === threadFrom + 1 ? threadFrom : seq - 1 } : {}),
    });
    writeFileSync(join(dir, messageFileName(seq, `agent${seq % 7}`, title)), text);
  }
  writeFileSync(join(dir, ".seq"), String(count));
}

export function timeCli(ctx: BenchContext, root: string, args: string[]): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [ctx.cli, ...args], {
    env: { ...process.env, AGENT_CHAT_ROOT: root, AGENT_CHAT_SOCKET: join(root, ".no-daemon") },
    encoding: "utf8",
    // A first read of 10,000 messages prints more than spawnSync's default 1 MiB.
    maxBuffer: 1 << 28,
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
  return ms;
}

export function timeGrep(dir: string, word: string): number {
  const t0 = process.hrtime.bigint();
  try {
    execFileSync("grep", ["-rli", word, dir], { maxBuffer: 1 << 28 });
  } catch {
    // grep exits 1 when nothing matched
  }
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** `n` alternating pairs of CLI runs (a, then b), so load on the machine falls on both. */
function pairs(n: number, a: () => number, b: () => number): [number[], number[]] {
  const as: number[] = [];
  const bs: number[] = [];
  a();
  b();
  for (let i = 0; i < n; i++) {
    as.push(a());
    bs.push(b());
  }
  return [as, bs];
}

const bench: BenchModule = {
  name: "search",
  async run(ctx) {
    const size = ctx.quick ? 10_000 : 100_000;
    const label = size.toLocaleString("en");
    const runs = ctx.quick ? 3 : 7;
    const root = ctx.tmp();
    fillChannel(root, "big", size);
    const rows: Row[] = [];

    // 1. The first query of a process against grep over the same files. The very first search
    //    of the channel builds its stored index (CH/.search/): timed once on its own.
    const build = timeCli(ctx, root, ["search", "rollback", "--channel", "big"]);
    let w = 0;
    const [first, grep] = pairs(
      runs,
      () => timeCli(ctx, root, ["search", WORDS[w++ % WORDS.length]!, "--channel", "big"]),
      () => timeGrep(join(root, "big"), WORDS[w % WORDS.length]!),
    );
    rows.push({
      group: "search",
      figure: `search, a process's first query over ${label} messages (CLI, folder store)`,
      unit: "ms",
      stats: stats(first),
      baseline: { name: "grep -rli over the same files", stats: stats(grep) },
      goal: "≤ 1 s",
      met: stats(first).median <= 1_000,
      note: `the channel's first search ever, which built the stored index: ${Math.round(build)} ms`,
    });

    // 2. Later queries through a daemon, whose store keeps the index in memory.
    const store = new FsStore(root);
    const daemon = new DaemonServer({ store, root, version: "bench" });
    const socket = join(ctx.tmp(), "d.sock");
    await daemon.listen(socket);
    const client = await DaemonClient.connect(socket);
    try {
      const t0 = process.hrtime.bigint();
      await client.search("postgres", { channels: ["big"] });
      const scan = Number(process.hrtime.bigint() - t0) / 1e6;
      await client.search("schema", { channels: ["big"] }); // builds the index
      const later: number[] = [];
      const queries = ctx.quick ? 30 : 200;
      for (let i = 0; i < queries; i++) {
        const q = i % 3 === 0 ? `"item ${(i * 37) % size}"` : i % 3 === 1 ? "roll*" : "latency";
        const s0 = process.hrtime.bigint();
        await client.search(q, { channels: ["big"] });
        later.push(Number(process.hrtime.bigint() - s0) / 1e6);
      }
      rows.push({
        group: "search",
        figure: `search, later queries through the daemon (${label} messages)`,
        unit: "ms",
        stats: stats(later),
        baseline: { name: "the daemon's first query (a scan)", stats: stats([scan]) },
        goal: "median ≤ 20 ms",
        met: stats(later).median <= 20,
      });
    } finally {
      await client.close();
      await daemon.close();
      await store.close();
    }

    // 3. A thread of 50 against peek -n 50.
    const [thread, peek] = pairs(
      runs,
      () => timeCli(ctx, root, ["thread", "big", String(size - 10)]),
      () => timeCli(ctx, root, ["peek", "big", "-n", "50"]),
    );
    const threadStats = stats(thread);
    const peekStats = stats(peek);
    rows.push({
      group: "search",
      figure: `thread of 50 messages in a ${label}-message channel (CLI)`,
      unit: "ms",
      stats: threadStats,
      baseline: { name: "peek -n 50, same channel", stats: peekStats },
      goal: "≤ 3 × peek -n 50",
      met: threadStats.median <= 3 * peekStats.median,
    });

    // 4. After archiving 90 %: post, read and a cold channels against a 10 %-size channel.
    const small = ctx.tmp();
    fillChannel(small, "big", size / 10);
    const archived = timeCli(ctx, root, [
      "archive",
      "big",
      "--before",
      String(size - size / 10 + 1),
    ]);
    for (const [figure, args] of [
      ["post", ["post", "big", "--from", "bench", "--body", "x"]],
      ["read (nothing new)", ["read", "big", "--as", "bench"]],
      ["channels (a cold process)", ["channels"]],
    ] as const) {
      const [after, base] = pairs(
        runs * 2,
        () => timeCli(ctx, root, [...args]),
        () => timeCli(ctx, small, [...args]),
      );
      const r = stats(after).median / stats(base).median;
      rows.push({
        group: "search",
        figure: `${figure} after archiving 90 % of ${label}`,
        unit: "ms",
        stats: stats(after),
        baseline: {
          name: `a ${(size / 10).toLocaleString("en")}-message channel`,
          stats: stats(base),
        },
        goal: "ratio ≤ 1.2",
        met: r <= 1.2,
        ...(figure === "post" ? { note: `archiving took ${(archived / 1000).toFixed(1)} s` } : {}),
      });
    }
    return rows;
  },
};

export default bench;
