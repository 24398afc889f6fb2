import { homedir } from "node:os";
import { resolveRoot } from "../client/open.js";
import { runHook } from "./hook.js";
import type { HookLine } from "./hook-line.js";
import { exitWhenWritten, writeStderr, writeStdout } from "./stdio.js";
import { hookStateDir, userConfigDir } from "./user-dirs.js";

/**
 * The hook's own entry, bundled alone into `dist/hook.cjs`: `agent-chat hook …` runs on every
 * prompt of an agent tool, so it loads one file instead of the full CLI.
 */
export async function run(line: HookLine): Promise<void> {
  const code = await runHook(line, {
    root: resolveRoot({ flag: line.root, env: process.env.AGENT_CHAT_ROOT, home: homedir() }),
    env: process.env,
    stateDir: hookStateDir(process.env, homedir()),
    configDir: userConfigDir(process.env, homedir()),
    out: writeStdout,
    err: writeStderr,
  });
  exitWhenWritten(code);
}
