#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { AgentChatError } from "../core/errors.js";
import { registerCoreCommands } from "./commands/core.js";
import { registerDaemonCommands } from "./commands/daemon.js";
import { registerGovernanceCommands } from "./commands/governance.js";
import { registerMcpCommands } from "./commands/mcp.js";
import { registerNatsCommands } from "./commands/nats.js";
import { registerSlashCommands } from "./commands/slash.js";
import { registerViewerCommands } from "./commands/viewer.js";
import { registerWorkspaceCommands } from "./commands/workspace.js";
import { CliContext, type GlobalOptions, UsageError } from "./context.js";
import { EXIT, exitCodeFor } from "./exit-codes.js";

declare const __VERSION__: string | undefined;
const VERSION = typeof __VERSION__ === "string" ? __VERSION__ : "0.0.0-dev";

export async function main(argv: string[]): Promise<number> {
  const program = new Command();
  const ctx = new CliContext(() => program.opts<GlobalOptions>());
  program
    .name("agent-chat")
    .description(
      "Channels of markdown messages for agent sessions and people: post, read, wait without\n" +
        "spending tokens, claim tasks atomically. Compatible with the reference chat.py.",
    )
    .version(VERSION, "-V, --version")
    .option(
      "--root <dir>",
      "root folder of the channels (default: $AGENT_CHAT_ROOT or ~/agent-chat)",
    )
    .option("--json", "print one JSON document per command (NDJSON for streams)")
    .option("--max-body <bytes>", "largest accepted message body (default 1 MiB)")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) })
    .addHelpText(
      "after",
      "\nExit codes: 0 ok, 1 error, 2 wait timed out, 3 claim lost, 4 rejected or vetoed,\n" +
        "5 a daemon already serves this root, 64 usage error, 130 interrupted.\n" +
        "\nExamples:\n  agent-chat init review --members alice,bob\n" +
        "  agent-chat post review --from alice --to bob --title 'Hi' --body 'Ready?'\n" +
        "  agent-chat wait review --as bob --timeout 600\n  agent-chat read review --as bob",
    );
  registerCoreCommands(program, ctx);
  registerDaemonCommands(program, ctx);
  registerNatsCommands(program, ctx);
  registerViewerCommands(program, ctx);
  registerWorkspaceCommands(program, ctx);
  registerGovernanceCommands(program, ctx);
  registerSlashCommands(program, ctx);
  registerMcpCommands(program, ctx);

  const onSignal = () => ctx.abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await program.parseAsync(argv, { from: "user" });
    return ctx.exitCode ?? EXIT.OK;
  } catch (err) {
    return report(err, ctx);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await ctx.close().catch(() => {});
  }
}

function report(err: unknown, ctx: CliContext): number {
  if (err instanceof CommanderError) {
    if (err.exitCode === 0) return EXIT.OK; // --help, --version
    return EXIT.USAGE; // commander has already printed the message
  }
  let code: number;
  let kind: string;
  let message: string;
  if (err instanceof UsageError) {
    code = EXIT.USAGE;
    kind = "USAGE";
    message = err.message;
  } else if (err instanceof AgentChatError) {
    code = exitCodeFor(err.code);
    kind = err.code;
    message = err.message;
  } else {
    code = EXIT.ERROR;
    kind = "INTERNAL";
    message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  }
  if (safeJson(ctx)) ctx.printJson({ error: { code: kind, message } });
  process.stderr.write(`agent-chat: ${message}\n`);
  return code;
}

function safeJson(ctx: CliContext): boolean {
  try {
    return ctx.json;
  } catch {
    return false;
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
