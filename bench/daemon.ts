import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { LineSplitter } from "../src/core/ndjson.js";
import { DEFAULT_MAX_RESPONSE_BYTES } from "../src/daemon/client.js";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type BenchContext, type BenchModule, type Row, stats } from "./lib.js";

/**
 * The daemon's figures (issue 4): wake latency from a post to a parked `wait` (and to a
 * `subscribe` stream) returning through the daemon, beside the folder store's own wake latency
 * measured in the same run; envelope ingest over 1 and 8 connections, beside direct folder
 * posts; the daemon's RSS idle and with 100 idle subscribers.
 */
const bench: BenchModule = {
  name: "daemon",
  async run(ctx) {
    const dir = ctx.tmp();
    const daemon = await startDaemon(ctx, dir);
    const idle = rssMb(daemon.child.pid!);
    try {
      const rows: Row[] = [];
      const samples = ctx.quick ? 30 : 300;
      const folderWake = await folderWakeLatency(join(dir, "root"), samples);
      const waitWake = await daemonWakeLatency(daemon.socket, samples, "wait");
      const subWake = await daemonWakeLatency(daemon.socket, samples, "subscribe");
      const baseline = { name: "folder store wait (fs.watch), same run", stats: stats(folderWake) };
      rows.push({
        group: "daemon",
        figure: "wake latency: post → parked wait returns (through the daemon)",
        unit: "ms",
        stats: stats(waitWake),
        baseline,
        goal: "p50 ≤ 1 ms (issue 3)",
        met: stats(waitWake).median <= 1,
      });
      rows.push({
        group: "daemon",
        figure: "wake latency: post → subscribe event arrives",
        unit: "ms",
        stats: stats(subWake),
        baseline,
        goal: "p50 ≤ 1 ms (issue 3)",
        met: stats(subWake).median <= 1,
      });

      const total = ctx.quick ? 200 : 2000;
      const runs = ctx.quick ? 2 : 5;
      const direct: number[] = [];
      const one: number[] = [];
      const eight: number[] = [];
      for (let r = 0; r < runs; r++) {
        direct.push(await folderPostRate(join(dir, "root"), `direct${r}`, total / 4));
        one.push(await ingestRate(daemon.socket, `one${r}`, total, 1));
        eight.push(await ingestRate(daemon.socket, `eight${r}`, total, 8));
      }
      const directStats = stats(direct);
      rows.push({
        group: "daemon",
        figure: "envelope ingest, 1 connection",
        unit: "msg/s",
        stats: stats(one),
        baseline: { name: "folder store post, one writer in-process", stats: directStats },
        goal: "≥ 0.8 × direct folder posts (the daemon adds no bottleneck)",
        met: stats(one).median >= 0.8 * directStats.median,
      });
      rows.push({
        group: "daemon",
        figure: "envelope ingest, 8 connections",
        unit: "msg/s",
        stats: stats(eight),
        baseline: { name: "folder store post, one writer in-process", stats: directStats },
        goal: "≥ 0.8 × direct folder posts (the daemon adds no bottleneck)",
        met: stats(eight).median >= 0.8 * directStats.median,
      });

      // Memory on a fresh daemon, so that the runs above (heap grown by thousands of posts) do
      // not count against the subscribers.
      const fresh = await startDaemon(ctx, ctx.tmp());
      try {
        await sleep(300);
        const idleFresh = rssMb(fresh.child.pid!);
        const subscribers = await holdSubscribers(fresh.socket, 100);
        await sleep(300);
        const busy = rssMb(fresh.child.pid!);
        for (const s of subscribers) s.destroy();
        rows.push({
          group: "daemon",
          figure: "daemon RSS with 100 idle subscribers",
          unit: "MB",
          stats: { n: 1, median: busy, p99: busy },
          baseline: {
            name: "the same daemon idle, just started",
            stats: { n: 1, median: idleFresh, p99: idleFresh },
          },
          goal: "≤ 80 MB (issue 3)",
          met: busy <= 80,
          note: `the daemon that served the runs above: ${rssMb(daemon.child.pid!).toFixed(0)} MB (started at ${idle.toFixed(0)} MB)`,
        });
      } finally {
        await fresh.stop();
      }
      return rows;
    } finally {
      await daemon.stop();
    }
  },
};

export default bench;

export interface RunningDaemon {
  child: ChildProcess;
  socket: string;
  stop(): Promise<void>;
}

export async function startDaemon(ctx: BenchContext, dir: string): Promise<RunningDaemon> {
  // Refusals only: a line per envelope would bury the report in the inherited stderr (the
  // default log costs one write to stderr per envelope; docs/daemon.md, "What serve logs").
  const child = spawn(process.execPath, [ctx.cli, "--json", "serve", "--log", "warn"], {
    env: {
      ...process.env,
      AGENT_CHAT_ROOT: join(dir, "root"),
      XDG_RUNTIME_DIR: join(dir, "run"),
      AGENT_CHAT_SOCKET: "",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((resolve, reject) => {
    const lines = new LineSplitter({
      maxLineBytes: 64 * 1024,
      onLine: (first) => {
        lines.close();
        resolve(first.toString());
      },
      onTooLong: () => reject(new Error("serve's first line is longer than 64 KiB")),
    });
    child.stdout!.on("data", (d: Buffer) => lines.push(d));
    child.once("exit", (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const socket = (JSON.parse(line) as { sockets: string[] }).sockets[0]!;
  return {
    child,
    socket,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** A minimal NDJSON connection: requests by id, stream events by id. */
class Conn {
  private readonly handlers = new Map<unknown, (value: Record<string, unknown>) => void>();
  private next = 1;
  private readonly lines = new LineSplitter({
    maxLineBytes: DEFAULT_MAX_RESPONSE_BYTES,
    onLine: (line) => {
      const value = JSON.parse(line.toString()) as Record<string, unknown>;
      this.handlers.get(value.id)?.(value);
    },
    onTooLong: () => {
      throw new Error(`the daemon sent a line longer than ${DEFAULT_MAX_RESPONSE_BYTES} bytes`);
    },
  });

  private constructor(readonly socket: Socket) {
    socket.on("data", (d: Buffer) => this.lines.push(d));
  }

  static open(path: string): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const s = connect(path, () => resolve(new Conn(s)));
      s.once("error", reject);
    });
  }

  request(fields: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.handlers.set(id, (value) => {
        if (value.event === undefined) this.handlers.delete(id);
        resolve(value);
      });
      this.socket.write(`${JSON.stringify({ id, ...fields })}\n`);
    });
  }

  /** Subscribes; `onMessage` is called for every streamed message. */
  async subscribe(channels: string[], onMessage: () => void): Promise<void> {
    const id = this.next++;
    await new Promise<void>((resolve) => {
      this.handlers.set(id, (value) => {
        if (value.event === "message") onMessage();
        else resolve();
      });
      this.socket.write(`${JSON.stringify({ id, op: "subscribe", channels })}\n`);
    });
  }

  write(text: string): void {
    this.socket.write(text);
  }

  close(): void {
    this.socket.destroy();
  }
}

async function daemonWakeLatency(
  socket: string,
  n: number,
  kind: "wait" | "subscribe",
): Promise<number[]> {
  const channel = `wake-${kind}`;
  const waiter = await Conn.open(socket);
  const poster = await Conn.open(socket);
  await poster.request({ op: "init", channel });
  let arrived: (() => void) | undefined;
  if (kind === "subscribe") await waiter.subscribe([channel], () => arrived?.());
  const out: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    let woke: Promise<unknown>;
    if (kind === "wait") {
      woke = waiter.request({ op: "wait", channels: [channel], as: "bob", timeoutMs: 10_000 });
      // Let the daemon park the wait before the post, as a real waiter would be parked.
      await waiter.request({ op: "cursor", channel, as: "bob" });
    } else {
      woke = new Promise<void>((resolve) => {
        arrived = resolve;
      });
    }
    const t0 = process.hrtime.bigint();
    await Promise.all([
      woke,
      poster.request({ op: "post", channel, from: "alice", body: `ping ${i}` }),
    ]);
    if (i >= 5) out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  waiter.close();
  poster.close();
  return out;
}

async function folderWakeLatency(root: string, n: number): Promise<number[]> {
  const waiterStore = new FsStore(root);
  const posterStore = new FsStore(root);
  await posterStore.init("wake-folder");
  const out: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const woke = waiterStore.wait(["wake-folder"], { as: "bob", timeoutMs: 10_000 });
    await sleep(1);
    const t0 = process.hrtime.bigint();
    await Promise.all([woke, posterStore.post("wake-folder", { from: "alice", body: `p${i}` })]);
    if (i >= 5) out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  await waiterStore.close();
  await posterStore.close();
  return out;
}

/** Envelopes per second, `total` spread over `connections`, until the daemon has written all. */
async function ingestRate(
  socket: string,
  channel: string,
  total: number,
  connections: number,
): Promise<number> {
  const conns = await Promise.all(Array.from({ length: connections }, () => Conn.open(socket)));
  await conns[0]!.request({ op: "init", channel });
  const t0 = process.hrtime.bigint();
  await Promise.all(
    conns.map(async (c, k) => {
      const lines: string[] = [];
      for (let i = k; i < total; i += connections) {
        lines.push(
          JSON.stringify({
            channel,
            sender: `agent${k}`,
            body: `envelope ${i}`,
            timestamp: new Date().toISOString(),
          }),
        );
      }
      c.write(`${lines.join("\n")}\n`);
      // Answered once every envelope before it on this connection is written.
      await c.request({ op: "cursor", channel, as: "x" });
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  for (const c of conns) c.close();
  return total / seconds;
}

async function folderPostRate(root: string, channel: string, total: number): Promise<number> {
  const store = new FsStore(root);
  await store.init(channel);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < total; i++) await store.post(channel, { from: "a", body: `post ${i}` });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await store.close();
  return total / seconds;
}

async function holdSubscribers(socket: string, n: number): Promise<Socket[]> {
  const first = await Conn.open(socket);
  await first.request({ op: "init", channel: "idle-subs" });
  first.close();
  const out: Socket[] = [];
  for (let i = 0; i < n; i++) {
    const c = await Conn.open(socket);
    await c.subscribe(["idle-subs"], () => {});
    out.push(c.socket);
  }
  return out;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
