import { type Command, Option } from "commander";
import type { PendingRecovery, RecoverPendingOptions } from "../../store/types.js";
import { type CliContext, speaksReference07 } from "../context.js";

interface Flags {
  as?: string;
  from?: string;
  owner?: string;
  resolvePublication?: "rollback" | "published";
}

const WHAT = { task: "lease", path: "path-lock" } as const;

/**
 * chat.py 0.7's `recover-pending` (path locks) and `task recover-pending` (task leases): the
 * change that died half-way, its journal left behind, is undone or, if its message was posted,
 * its journal cleaned up (docs/leases.md). Through a daemon the folder is mended directly, as
 * chat.py mends it.
 */
export function recoverPendingCommand(
  parent: Command,
  ctx: CliContext,
  kind: RecoverPendingOptions["kind"],
): Command {
  const command = parent.command("recover-pending");
  speaksReference07(command, ctx);
  return command
    .argument("<channel>")
    .option("--as <name>", "who recovers it (default: $AGENT_CHAT_NAME)")
    .option("--from <name>", "chat.py's name for --as")
    .addOption(
      new Option(
        "--resolve-publication <how>",
        "when its message cannot be looked up: it was posted (published) or not (rollback)",
      ).choices(["rollback", "published"]),
    )
    .action(async (channel: string, opts: Flags) => {
      const agent = ctx.agent(opts.as ?? opts.from ?? opts.owner);
      const options: RecoverPendingOptions = { kind, agent };
      if (opts.resolvePublication) options.resolve = opts.resolvePublication;
      const store = await ctx.openWith(
        "chatpy07",
        "recover-pending mends chat.py 0.7's journals in a channel folder: it needs a folder root",
      );
      const done = await store.chatpy07.recoverPending(channel, options);
      if (ctx.json) return ctx.printJson({ channel, ...done });
      ctx.out(`recovered pending ${WHAT[kind]} transaction in ${channel}${detail(done)}\n`);
    });
}

function detail(done: PendingRecovery): string {
  if (done.recovery === "none") return " (none was pending)";
  const how = done.recovery === "rollback" ? "undone" : "had happened; journal cleaned up";
  const of = done.task !== undefined ? `task ${done.task}` : `lock ${done.lock}`;
  return ` (${done.event} of ${of}: ${how})`;
}

/** The top-level `recover-pending`: chat.py's path-lock journal. */
export function registerRecoverPendingCommand(program: Command, ctx: CliContext): void {
  recoverPendingCommand(program, ctx, "path")
    .description("undo (or finish) a path-lock change that died half-way, which blocks every other")
    .option("--owner <name>", "chat.py's other name for --as")
    .addHelpText(
      "after",
      "\nA lock refused with PATH_LOCK_TRANSACTION_PENDING needs this.\nExample:\n  agent-chat recover-pending review --as alice",
    );
}
