import { spawn } from "node:child_process";
import { existsSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type BenchContext, type BenchModule, type Row, stats } from "./lib.js";

/**
 * The Claude Code rewake, measured with the hook as a process (docs/mcp.md, "Waking an idle
 * agent"): `agent-chat hook wait` parked as Claude Code parks it after a turn, the bench posts a
 * message for the agent in process, and times from the start of the post to the hook's exit
 * with its notice (exit 2): what Claude Code then turns into a new turn. Beside it, in the same
 * rounds, a parked `agent-chat wait` woken the same way (the plain wake of a waiting process).
 */

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether the process holds an inotify instance (it has set up its file watch). */
function watching(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === "anon_inode:inotify";
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

interface Waiter {
  args: string[];
  env: NodeJS.ProcessEnv;
  input?: string;
  /** Parked: a condition this process polls before it posts. */
  ready(pid: number): boolean;
  channel: string;
  code: number;
}

/** A wake: post → exit, and the waiter's first output byte → its exit, in ms. */
interface Wake {
  total: number;
  printToExit: number;
}

async function wakeOnce(ctx: BenchContext, store: FsStore, w: Waiter): Promise<Wake> {
  const child = spawn(process.execPath, [ctx.cli, ...w.args], {
    env: w.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  let printedAt: number | undefined;
  const printed = () => {
    printedAt ??= performance.now();
  };
  child.stdout.on("data", printed);
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    printed();
    stderr += d;
  });
  child.stdin.end(w.input ?? "");
  let exitedAt = 0;
  const exited = new Promise<number | null>((r) =>
    child.on("exit", (code) => {
      exitedAt = performance.now();
      r(code);
    }),
  );
  const deadline = Date.now() + 30_000;
  while (!w.ready(child.pid!)) {
    if (Date.now() > deadline) throw new Error(`${w.args.join(" ")} never parked: ${stderr}`);
    await pause(5);
  }
  const t0 = performance.now();
  await store.post(w.channel, { from: "alice", to: "bob", body: "wake" });
  const code = await exited;
  if (code !== w.code) throw new Error(`${w.args.join(" ")} exited ${code}: ${stderr}`);
  // A warning printed while parked would count as the answer: the bench's waits have none.
  return { total: exitedAt - t0, printToExit: exitedAt - (printedAt ?? exitedAt) };
}

/** Node's own print → exit: a process that writes one byte and ends, seen the same way. */
function nodePrintToExit(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", "require('node:fs').writeSync(1, 'x')"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    let printedAt: number | undefined;
    child.stdout.on("data", () => {
      printedAt ??= performance.now();
    });
    child.on("error", reject);
    child.on("exit", () => {
      const exitedAt = performance.now();
      resolve(exitedAt - (printedAt ?? exitedAt));
    });
  });
}

export const wakeBench: BenchModule = {
  name: "wake",
  async run(ctx) {
    const root = ctx.tmp();
    const state = ctx.tmp();
    const store = new FsStore(root);
    await store.init("rewake", { members: ["alice", "bob"] });
    await store.init("wake", { members: ["alice", "bob"] });
    const env = { ...process.env, AGENT_CHAT_ROOT: root, XDG_STATE_HOME: state };
    const sessions = join(state, "agent-chat", "hook-sessions");
    const parkedHook = (pid: number) =>
      existsSync(sessions) &&
      readdirSync(sessions).some((name) => name.endsWith(".waiter")) &&
      watching(pid);
    // One session throughout, as after each turn of one Claude Code session: each wake records
    // what it told, so the next one parks for the next message (the cursor never moves).
    const hook: Waiter = {
      args: ["hook", "wait", "--as", "bob", "--timeout", "60"],
      env: { ...env, CLAUDE_PID: String(process.pid) },
      input: JSON.stringify({ session_id: "bench", hook_event_name: "Stop" }),
      ready: parkedHook,
      channel: "rewake",
      code: 2,
    };
    const plain: Waiter = {
      args: ["wait", "wake", "--as", "bob", "--timeout", "60"],
      env,
      ready: watching,
      channel: "wake",
      code: 0,
    };
    const ours: Wake[] = [];
    const base: Wake[] = [];
    const node: number[] = [];
    const n = ctx.quick ? 10 : 30;
    // Alternating, so that load on the (shared) machine falls on both alike; two warm-up rounds.
    for (let i = 0; i < n + 2; i++) {
      const a = await wakeOnce(ctx, store, hook);
      const b = await wakeOnce(ctx, store, plain);
      const c = await nodePrintToExit();
      if (i >= 2) {
        ours.push(a);
        base.push(b);
        node.push(c);
      }
    }
    await store.close();
    const row: Row = {
      group: "wake",
      figure: "Claude Code rewake: post → parked `hook wait` exits 2 with its notice",
      unit: "ms",
      stats: stats(ours.map((w) => w.total)),
      baseline: {
        name: "parked `agent-chat wait` woken (same rounds)",
        stats: stats(base.map((w) => w.total)),
      },
      note: "the hook as a process; Claude Code then starts the turn",
    };
    const handOver = (figure: string, wakes: Wake[]): Row => {
      const printToExit = stats(wakes.map((w) => w.printToExit));
      return {
        group: "wake",
        figure,
        unit: "ms",
        stats: printToExit,
        baseline: { name: "node -e writing one byte (same rounds)", stats: stats(node) },
        goal: "≤ 3 ms",
        met: printToExit.median <= 3,
        note: "as this process sees them: the first byte on the waiter's pipe, then its exit",
      };
    };
    return [
      row,
      handOver("woken `agent-chat wait`: its first output → its exit", base),
      handOver("woken `hook wait`: its notice → its exit", ours),
    ];
  },
};

export default wakeBench;
