import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import type { Command } from "commander";
import { type CliContext, parseSeconds } from "../context.js";
import { UsageError } from "../usage.js";

/** Quiet time after which a session counts as idle when nothing says so sooner. */
const DEFAULT_IDLE_AFTER_S = "2";

/** `agent-chat run`: any agent CLI under a pseudo-terminal that is woken when a message comes. */
export function registerAgentRunCommands(program: Command, ctx: CliContext): void {
  program
    .command("run")
    .description(
      "run an agent CLI in this terminal and type one notice into it when a message arrives while it is idle",
    )
    .argument("<command...>", "the agent's command line, after --")
    .option("--as <name>", "the agent whose messages wake it (default: $AGENT_CHAT_NAME)")
    .option(
      "--idle-after <seconds>",
      "idle once neither the agent printed nor you typed for this long (sooner when the tool's stop hook from setup marks its turn ended)",
      DEFAULT_IDLE_AFTER_S,
    )
    .addHelpText(
      "after",
      "\nThe notice is a fixed line of agent-chat's (it never contains a message's text), typed\n" +
        "with Enter only while the session is idle and your input line is empty; one notice per\n" +
        "batch of messages. Exits with the command's exit code.\n\nExamples:\n" +
        "  agent-chat run --as bob -- codex\n  agent-chat run --as carol --idle-after 3 -- gemini",
    )
    .action(async (command: string[], opts: { as?: string; idleAfter: string }) => {
      const agent = ctx.agent(opts.as);
      const quietMs = parseSeconds(opts.idleAfter, "--idle-after");
      if (quietMs <= 0) throw new UsageError("--idle-after must be more than 0 seconds");
      const store = await ctx.open();
      // Loaded here only: the native module stays off every other command's start-up.
      const [{ spawn }, { IdleGate, runUnderPty, watchTurnMarks }, { TURN_MARK_ENV }] =
        await Promise.all([
          import("@lydell/node-pty"),
          import("../agent-run.js"),
          import("../turn-mark.js"),
        ]);
      const [name, ...args] = command as [string, ...string[]];
      const file = executable(name, process.env.PATH ?? "");
      const { stdout } = process;
      const gate = new IdleGate(quietMs);
      const marks = watchTurnMarks(gate);
      try {
        const pty = spawnChecked(() =>
          spawn(file, args, {
            name: process.env.TERM ?? "xterm-256color",
            cols: stdout.columns || 80,
            rows: stdout.rows || 24,
            cwd: process.cwd(),
            env: { ...process.env, [TURN_MARK_ENV]: marks.path },
          }),
        );
        ctx.exitCode = await runUnderPty(store, agent, pty, gate, {
          stdin: process.stdin,
          stdout,
        });
      } finally {
        marks.close();
      }
    });
}

/**
 * The program `name` names, as a shell finds it: a path as given, else the first match on PATH.
 * Checked here because a pseudo-terminal's child that cannot start only prints an exec error.
 */
function executable(name: string, path: string): string {
  const candidates = name.includes("/")
    ? [resolve(name)]
    : path.split(delimiter).map((dir) => join(isAbsolute(dir) ? dir : resolve(dir), name));
  const found = candidates.find(isExecutableFile);
  if (!found) throw new UsageError(`run: no such command: ${name}`);
  return found;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function spawnChecked<T>(start: () => T): T {
  try {
    return start();
  } catch (err) {
    throw new UsageError(`cannot start the command: ${(err as Error).message}`);
  }
}
