// Fan-out of parked CLI waiters, on the folder store and through a running daemon, and what a
// one-off CLI call costs with the daemon running against the same call without one.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { FsStore } from "../src/store/fs/fs-store.js";
import { startDaemon } from "./daemon.js";
import { type BenchContext, type BenchModule, type Row, stats } from "./lib.js";
import { environments, type Figure, rounds, spawnTime } from "./startup.js";

const WAITERS = 50;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The kinds of descriptor a process holds (`anon_inode:inotify`, `socket:[…]`, paths). */
function descriptors(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return "";
      }
    });
  } catch {
    return [];
  }
}

/** Parked on the folder: its file watch is set. Through the daemon: connected to its socket. */
const parked = (viaDaemon: boolean) => (pid: number) =>
  descriptors(pid).some((d) => (viaDaemon ? d.startsWith("socket:") : d === "anon_inode:inotify"));

/** 50 `wait` processes parked, one post for all, and the time until the last one exited. */
async function fanOutOnce(
  ctx: BenchContext,
  env: NodeJS.ProcessEnv,
  store: FsStore,
  viaDaemon: boolean,
): Promise<number> {
  const children: ChildProcess[] = [];
  let started = false;
  const exits: Array<Promise<number | null>> = [];
  for (let i = 0; i < WAITERS; i++) {
    const child = spawn(
      process.execPath,
      [ctx.cli, "wait", "fan", "--as", `w${i}`, "--timeout", "900"],
      { env, stdio: ["ignore", "ignore", "inherit"] },
    );
    children.push(child);
    exits.push(new Promise((r) => child.on("exit", (code) => r(code))));
    child.on("exit", (code) => {
      if (!started) process.stderr.write(`waiter w${i} exited ${code} before the post\n`);
    });
  }
  const isParked = parked(viaDaemon);
  const deadline = Date.now() + 180_000;
  while (!children.every((c) => isParked(c.pid!))) {
    if (Date.now() > deadline) {
      const n = children.filter((c) => isParked(c.pid!)).length;
      throw new Error(`${n} of ${WAITERS} waiters parked in three minutes (daemon: ${viaDaemon})`);
    }
    await pause(20);
  }
  // Connected is not yet parked: a moment for the daemon to register the waits.
  if (viaDaemon) await pause(300);
  started = true;
  const t0 = performance.now();
  await store.post("fan", { from: "alice", to: "all", body: "wake up" });
  const codes = await Promise.all(exits);
  const ms = performance.now() - t0;
  if (codes.some((c) => c !== 0)) throw new Error(`a waiter exited ${codes.join(",")}`);
  return ms;
}

async function fanOut(ctx: BenchContext, env: NodeJS.ProcessEnv, root: string, daemon: boolean) {
  const store = new FsStore(root);
  const times: number[] = [];
  for (let i = 0; i < (ctx.quick ? 3 : 7) + 1; i++) {
    const ms = await fanOutOnce(ctx, env, store, daemon);
    if (i > 0) times.push(ms);
  }
  await store.close();
  return stats(times);
}

/** A root with the channels the figures use: `fan` for the waiters, `calls` for the CLI calls. */
async function prepare(root: string): Promise<void> {
  mkdirSync(root, { recursive: true });
  const store = new FsStore(root);
  await store.init("fan");
  await store.init("calls");
  for (let i = 0; i < 100; i++) await store.post("calls", { from: "alice", body: `m ${i}` });
  await store.close();
}

const fanoutBench: BenchModule = {
  name: "fan-out",
  async run(ctx) {
    const plainDir = ctx.tmp();
    const daemonDir = ctx.tmp();
    const plainRoot = join(plainDir, "root");
    await prepare(plainRoot);
    await prepare(join(daemonDir, "root"));
    const daemon = await startDaemon(ctx, daemonDir);
    try {
      const { clean } = environments(process.env, plainRoot, ctx.tmp());
      const plainEnv = { ...clean, AGENT_CHAT_ROOT: plainRoot };
      // The environment the daemon was started with: the CLI finds its socket from it.
      const daemonEnv = {
        ...clean,
        AGENT_CHAT_ROOT: join(daemonDir, "root"),
        XDG_RUNTIME_DIR: join(daemonDir, "run"),
        AGENT_CHAT_SOCKET: "",
      };
      const rows: Row[] = [];
      const folder = await fanOut(ctx, plainEnv, plainRoot, false);
      const viaDaemon = await fanOut(ctx, daemonEnv, join(daemonDir, "root"), true);
      rows.push(
        {
          group: "fan-out",
          figure: `${WAITERS} parked \`agent-chat wait\` processes, one post: all exited (folder)`,
          unit: "ms",
          stats: folder,
          goal: "≤ 200 ms",
          met: folder.median <= 200,
        },
        {
          group: "fan-out",
          figure: `the same through a running daemon`,
          unit: "ms",
          stats: viaDaemon,
          baseline: { name: "the folder, same run", stats: folder },
        },
      );
      rows.push(...(await daemonCalls(ctx, plainEnv, daemonEnv)));
      return rows;
    } finally {
      await daemon.stop();
    }
  },
};

/** One-off CLI calls with the daemon running against the same calls without one, same rounds. */
async function daemonCalls(
  ctx: BenchContext,
  plainEnv: NodeJS.ProcessEnv,
  daemonEnv: NodeJS.ProcessEnv,
): Promise<Row[]> {
  const cli = (env: NodeJS.ProcessEnv, args: string[]) => () =>
    spawnTime(process.execPath, [ctx.cli, ...args], env);
  const post = ["post", "calls", "--from", "alice", "--to", "nobody", "--body", "x"];
  const read = ["read", "calls", "--as", "bob", "--peek"];
  const figures: Figure[] = [
    { name: "post", run: cli(plainEnv, post) },
    { name: "post (daemon)", run: cli(daemonEnv, post) },
    { name: "read", run: cli(plainEnv, read) },
    { name: "read (daemon)", run: cli(daemonEnv, read) },
  ];
  const s = await rounds(figures, ctx.quick ? 10 : 30);
  return (["post", "read"] as const).map((name) => {
    const withDaemon = s.get(`${name} (daemon)`)!;
    const without = s.get(name)!;
    return {
      group: "fan-out",
      figure: `\`agent-chat ${name === "read" ? "read --peek" : "post"}\` with the daemon running`,
      unit: "ms",
      stats: withDaemon,
      baseline: { name: "the same without a daemon", stats: without },
      goal: "≤ 1.0× without",
      met: withDaemon.median <= without.median,
    };
  });
}

export default fanoutBench;
