#!/usr/bin/env node
import { Command, CommanderError, Option } from "commander";
import { registerCoreCommands } from "./commands/core.js";
import { CliContext, type GlobalOptions } from "./context.js";
import { EXIT } from "./exit-codes.js";
import { exitQuietlyOnBrokenPipe } from "./pipe.js";
import { runCommand, wantsJson } from "./run.js";
import { VERSION } from "./version.js";

type Register = (program: Command, ctx: CliContext) => void;

/**
 * Command groups beyond the reference's commands, each loaded only when one of its commands is
 * run (or for help and unknown commands): start-up then evaluates the code of one group, not of
 * all of them.
 */
const GROUPS: Array<{
  commands: readonly string[];
  load: () => Promise<Register>;
  /** Its command needs every other group's too (it reads the whole command tree). */
  needsAll?: true;
}> = [
  {
    commands: ["serve", "send", "info"],
    load: async () => (await import("./commands/daemon.js")).registerDaemonCommands,
  },
  {
    commands: ["export", "import", "bridge"],
    load: async () => (await import("./commands/nats.js")).registerNatsCommands,
  },
  {
    commands: ["nats"],
    load: async () => (await import("./commands/nats-cluster.js")).registerNatsClusterCommands,
  },
  {
    commands: ["view"],
    load: async () => (await import("./commands/viewer.js")).registerViewerCommands,
  },
  {
    commands: ["ws"],
    load: async () => (await import("./commands/workspace.js")).registerWorkspaceCommands,
  },
  {
    commands: ["govern", "request", "approve", "pending"],
    load: async () => (await import("../features/governance/cli.js")).registerGovernanceCommands,
  },
  {
    commands: ["lease", "leases", "guard"],
    load: async () => (await import("../features/leases/cli.js")).registerLeaseCommands,
  },
  {
    commands: ["receipts", "explain", "who"],
    load: async () => (await import("../features/delivery/cli.js")).registerDeliveryCommands,
  },
  {
    commands: ["policy", "unpause"],
    load: async () => (await import("../features/governance/cli-policy.js")).registerPolicyCommands,
  },
  {
    commands: ["lock", "check", "unlock", "recover"],
    load: async () => (await import("./commands/path-locks.js")).registerPathLockCommands,
  },
  {
    commands: ["state", "compact"],
    load: async () => (await import("./commands/state.js")).registerStateCommands,
  },
  {
    commands: ["recover-pending"],
    load: async () => (await import("./commands/recover-pending.js")).registerRecoverPendingCommand,
  },
  {
    commands: ["event"],
    load: async () => (await import("./commands/events.js")).registerEventCommands,
  },
  {
    commands: ["id"],
    load: async () => (await import("../features/trust/cli.js")).registerIdentityCommands,
  },
  {
    commands: ["slash"],
    load: async () => (await import("./commands/slash.js")).registerSlashCommands,
  },
  {
    commands: ["search", "thread", "archive", "prune"],
    load: async () => (await import("../features/search/cli.js")).registerFindCommands,
  },
  {
    commands: ["run"],
    load: async () => (await import("./commands/agent-run.js")).registerAgentRunCommands,
  },
  {
    commands: ["completion"],
    load: async () => (await import("./commands/completion.js")).registerCompletionCommand,
    needsAll: true,
  },
  {
    commands: ["mcp", "setup", "doctor", "hook"],
    load: async () => (await import("./commands/mcp.js")).registerMcpCommands,
  },
];

/** Global options that take a value, so that the value is not taken for the command's name. */
const VALUE_OPTIONS = new Set(["--root", "--max-body"]);

/** The words on the line that are neither options nor their values: the command first. */
function commandWords(argv: readonly string[]): string[] {
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (VALUE_OPTIONS.has(arg)) i++;
    else if (!arg.startsWith("-")) words.push(arg);
  }
  return words;
}

/** The command named on the line: the first word that is neither an option nor its value. */
function commandName(argv: readonly string[]): string | undefined {
  return commandWords(argv)[0];
}

/** chat.py 0.7's commands, whose usage errors exit 2 as its argparse's do (`task add` is ours). */
const REFERENCE_07_COMMANDS = new Set([
  "task",
  "lock",
  "check",
  "unlock",
  "recover",
  "recover-pending",
  "event",
  "state",
]);

function speaksReference07(argv: readonly string[]): boolean {
  const [name, sub] = commandWords(argv);
  return REFERENCE_07_COMMANDS.has(name ?? "") && !(name === "task" && sub === "add");
}

export async function main(argv: string[]): Promise<number> {
  exitQuietlyOnBrokenPipe();
  const program = new Command();
  const ctx = new CliContext(() => program.opts<GlobalOptions>());
  program
    .name("agent-chat")
    .description(
      // One paragraph, no line breaks of ours: commander wraps it to the terminal's width.
      "Channels of markdown messages for agent sessions and people: post, read, wait without " +
        "spending tokens, claim tasks atomically. Compatible with the reference chat.py.",
    )
    .option(
      "--root <dir>",
      "root folder of the channels (default: $AGENT_CHAT_ROOT or ~/agent-chat)",
    )
    .option("--json", "print one JSON document per command (NDJSON for streams)")
    .option(
      "--max-body <bytes>",
      "largest body this command posts or reads (default: the channel's limit, 1 MiB unless set); at init, the channel's limit",
    )
    .exitOverride()
    // Set before any command is added: each command copies them. commander's own errors take
    // the one-line form of every other error (README, "Exit codes").
    .configureOutput({ writeErr: (text) => process.stderr.write(text), outputError: oneLine })
    .addHelpText(
      "after",
      "\nExit codes: 0 ok, 1 error, 2 wait timed out, 3 claim lost, 4 rejected or vetoed,\n" +
        "5 a daemon already serves this root, 64 usage error, 130 interrupted,\n" +
        "141 stdout closed early (e.g. by head); chat.py 0.7's commands (task, lock,\n" +
        "check, unlock, recover, event, state) exit as chat.py's do: 2 on a task, lease\n" +
        "or event refusal or a usage error, 1 on any other error.\n" +
        "\nExamples:\n  agent-chat init review --members alice,bob\n" +
        "  agent-chat post review --from alice --to bob --title 'Hi' --body 'Ready?'\n" +
        "  agent-chat wait review --as bob --timeout 600\n  agent-chat read review --as bob",
    );
  registerCoreCommands(program, ctx);
  addVersion(program);
  const name = commandName(argv);
  const core = program.commands.some((c) => c.name() === name);
  if (!core && !VERSION_FLAGS.some((flag) => argv.includes(flag))) {
    const wanted = GROUPS.filter((g) => name !== undefined && g.commands.includes(name));
    const all = wanted.length === 0 || wanted.some((g) => g.needsAll);
    for (const group of all ? GROUPS : wanted) (await group.load())(program, ctx);
  }

  return runCommand(
    ctx,
    argv,
    () => program.parseAsync(argv, { from: "user" }),
    (err) => (err instanceof CommanderError ? commanderExit(err, ctx, argv) : undefined),
  );
}

const VERSION_FLAGS = ["-v", "--version", "-V"];

/** `-v`, `--version`, `-V` (commander's own, still taken) and the command `agent-chat version`. */
function addVersion(program: Command): void {
  const print = () => {
    process.stdout.write(`${VERSION}\n`);
  };
  program.version(VERSION, "-v, --version", "print the version (also: agent-chat version)");
  program.addOption(new Option("-V").hideHelp());
  program.on("option:V", () => {
    print();
    throw new CommanderError(0, "commander.version", VERSION);
  });
  program
    .command("version")
    .description("print the version")
    .addHelpText("after", "\nExample:\n  agent-chat version")
    .action(print);
}

/** A commander error (`error: unknown option '--x'\n`) as `agent-chat: unknown option '--x' …`. */
function oneLine(text: string, write: (text: string) => void): void {
  write(`agent-chat: ${text.replace(/^error: /, "").trimEnd()} (run with --help for usage)\n`);
}

/** Commander has already printed the message on stderr; --json gets it on stdout too. */
function commanderExit(err: CommanderError, ctx: CliContext, argv: readonly string[]): number {
  if (err.exitCode === 0) return EXIT.OK; // --help, --version
  if (wantsJson(ctx, argv)) {
    ctx.printJson({ error: { code: "USAGE", message: err.message.replace(/^error: /, "") } });
  }
  return speaksReference07(argv) ? 2 : EXIT.USAGE;
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
