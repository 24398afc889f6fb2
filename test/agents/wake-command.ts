import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { runTool, type Sandbox, toolBinary } from "./sandbox.js";

/*
 * The vitest-free part of the wake sessions: what the wake tests (wake-session.ts) and the
 * agent wake bench (bench/agent-wake.ts) both run. The bench imports no vitest.
 */

/** What every wake notice says (Claude Code's hook, `agent-chat run`'s line): the mark to key on. */
export const NOTICE_MARK = "arrived while you were idle";

/** `agent-chat run --as bob -- <tool…>` as the user types it in the project folder. */
export function runCommand(sandbox: Sandbox, tool: string[]): string[] {
  return [
    join(sandbox.dir, "bin", "agent-chat"),
    "--root",
    sandbox.root,
    "run",
    "--as",
    "bob",
    "--",
    ...tool,
  ];
}

/**
 * Codex's TUI starts a shared background server from CODEX_HOME that outlives it: stopped the
 * way Codex says, then any process of it still running from that CODEX_HOME.
 */
export async function stopCodexDaemon(
  sandbox: Sandbox,
  env: Record<string, string>,
): Promise<void> {
  await runTool(sandbox, toolBinary("codex"), ["app-server", "daemon", "stop"], { env });
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let command: string;
    try {
      command = readFileSync(join("/proc", pid, "cmdline"), "utf8");
    } catch {
      continue;
    }
    if (command.startsWith(join(env.CODEX_HOME!, "packages"))) process.kill(Number(pid));
  }
}

/** The processes whose working folder is the sandbox's project folder. */
function processesIn(sandbox: Sandbox): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readlinkSync(join("/proc", pid, "cwd")) === sandbox.project;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Copilot CLI's npm loader runs its native binary as a child, which outlives `agent-chat run`'s
 * pseudo-terminal for a moment and writes its session state into HOME as it ends: it is ended
 * (SIGTERM, then SIGKILL after 5 s) and waited for, so the sandbox is removed after it.
 */
export async function stopCopilot(sandbox: Sandbox): Promise<void> {
  for (const pid of processesIn(sandbox)) process.kill(pid, "SIGTERM");
  for (let i = 0; i < 50 && processesIn(sandbox).length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const pid of processesIn(sandbox)) process.kill(pid, "SIGKILL");
}
