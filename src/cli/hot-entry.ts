import { HOT_ACTIONS } from "./commands/hot.js";
import { CliContext } from "./context.js";
import type { HotLine } from "./hot-line.js";
import { runCommand } from "./run.js";
import { exitWhenWritten } from "./stdio.js";

/**
 * The lean entry, bundled alone into one CommonJS file, `dist/hot.cjs`: the commands agents run
 * all the time (hot-line.ts), run by the very actions and context the full CLI uses, without
 * commander, the command groups or ES-module loading of the CLI's chunks.
 */
export async function run(line: HotLine, argv: readonly string[]): Promise<void> {
  const ctx = new CliContext(() => line.globals);
  // Only a wait, or a post that waits for its receipts, outlives its answer.
  ctx.watchFolders = line.command === "wait" || line.options.waitFor !== undefined;
  // A one-off post, read or peek is cheaper on the folder than through a running daemon.
  ctx.folderFirst = !ctx.watchFolders && line.oneOff;
  exitWhenWritten(
    await runCommand(ctx, argv, () => HOT_ACTIONS[line.command](ctx, line.operands, line.options)),
  );
}
