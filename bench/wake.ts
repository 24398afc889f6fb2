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

async function wakeOnce(ctx: BenchContext, store: FsStore, w: Waiter): Promise<number> {
  const child = spawn(process.execPath, [ctx.cli, ...w.args], {
    env: w.env,
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  child.stdin.end(w.input ?? "");
  const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
  const deadline = Date.now() + 30_000;
  while (!w.ready(child.pid!)) {
    if (Date.now() > deadline) throw new Error(`${w.args.join(" ")} never parked: ${stderr}`);
    await pause(5);
  }
  const t0 = performance.now();
  await store.post(w.channel, { from: "alice", to: "bob", body: "wake" });
  const code = await exited;
  const ms = performance.now() - t0;
  if (code !== w.code) throw new Error(`${w.args.join(" ")} exited ${code}: ${stderr}`);
  return ms;
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
    const ours: number[] = [];
    const base: number[] = [];
    const n = ctx.quick ? 10 : 30;
    // Alternating, so that load on the (shared) machine falls on both alike; two warm-up rounds.
    for (let i = 0; i < n + 2; i++) {
      const a = await wakeOnce(ctx, store, hook);
      const b = await wakeOnce(ctx, store, plain);
      if (i >= 2) {
        ours.push(a);
        base.push(b);
      }
    }
    await store.close();
    const row: Row = {
      group: "wake",
      figure: "Claude Code rewake: post → parked `hook wait` exits 2 with its notice",
      unit: "ms",
      stats: stats(ours),
      baseline: { name: "parked `agent-chat wait` woken (same rounds)", stats: stats(base) },
      note: "the hook as a process; Claude Code then starts the turn",
    };
    return [row];
  },
};

export default wakeBench;
