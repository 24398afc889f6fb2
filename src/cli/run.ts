import { AgentChatError } from "../core/errors.js";
import type { CliContext } from "./context.js";
import { asReference07, EXIT, exitCodeFor } from "./exit-codes.js";
import { UsageError } from "./usage.js";

/**
 * How a command runs, for the full CLI (main.ts) and the lean entry (hot-entry.ts) alike:
 * Ctrl-C aborts it, an error becomes its message and exit code, the store is closed at the end.
 * No commander here: the lean entry must not load it.
 */
export async function runCommand(
  ctx: CliContext,
  argv: readonly string[],
  body: () => Promise<unknown>,
  /** The caller's own reading of an error (commander's), or undefined for the common one. */
  ownError: (err: unknown) => number | undefined = () => undefined,
): Promise<number> {
  const onSignal = () => ctx.abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await body();
    return ctx.exitCode ?? EXIT.OK;
  } catch (err) {
    return ownError(err) ?? reportError(err, ctx, argv);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await ctx.close().catch(() => {});
  }
}

/** Prints an error (and its JSON form under `--json`); its exit code. */
export function reportError(err: unknown, ctx: CliContext, argv: readonly string[]): number {
  let code: number;
  let kind: string;
  let message: string;
  if (err instanceof UsageError) {
    // chat.py's argparse refuses a bad argument with 2, in its grammar.
    code = ctx.speaksReference07 ? 2 : EXIT.USAGE;
    kind = "USAGE";
    message = err.message;
  } else if (err instanceof AgentChatError) {
    kind = err.code;
    ({ exit: code, message } = ctx.speaksReference07
      ? asReference07(err, exitCodeFor(err.code))
      : { exit: exitCodeFor(err.code), message: err.message });
  } else {
    code = EXIT.ERROR;
    kind = "INTERNAL";
    message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  }
  if (wantsJson(ctx, argv)) ctx.printJson({ error: { code: kind, message } });
  ctx.err(`agent-chat: ${message}\n`);
  return code;
}

/** Whether `--json` was asked for, even when parsing stopped before commander set it. */
export function wantsJson(ctx: CliContext, argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  if ((end === -1 ? argv : argv.slice(0, end)).includes("--json")) return true;
  try {
    return ctx.json;
  } catch {
    return false;
  }
}
