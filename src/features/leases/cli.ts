import type { Command } from "commander";
import {
  type CliContext,
  channelCommand,
  formatDuration,
  type HolderFlags,
  parseTtl,
  renewCommand,
  tokenOption,
  withHolder,
} from "../../cli/context.js";
import type { PathLeaseInfo } from "../../store/types.js";
import { registerGuardCommand } from "./cli-guard.js";

/** `lease add|renew|release`, `leases` and the git `guard`: path reservations (docs/leases.md). */
export function registerLeaseCommands(program: Command, ctx: CliContext): void {
  registerGuardCommand(program, ctx);
  registerLease(program, ctx);
  registerLeases(program, ctx);
}

function registerLease(program: Command, ctx: CliContext): void {
  const lease = program
    .command("lease")
    .description("reserve paths of the repository for a while (add, renew, release)");
  lease
    .command("add")
    .description("reserve the paths a glob covers; refused (exit 3) over another agent's lease")
    .argument("<channel>")
    .argument(
      "<pattern>",
      "a repository-relative glob (* ** ? [abc] {a,b}), e.g. 'src/store/**' (quote it)",
    )
    .option("--as <name>", "the holder (default: $AGENT_CHAT_NAME)")
    .option(
      "--ttl <duration>",
      "how long unrenewed: 90s, 30m, 2h (default: the channel's, else 30m)",
    )
    .option("--shared", "compatible with other shared leases (readers), not with exclusive ones")
    .option("--reason <text>", "one line on why, shown to whoever it conflicts with")
    .option("--force", "record it despite overlapping leases of others (and name them)")
    .addHelpText(
      "after",
      "\nYour post, read or wait in the channel renews it; `agent-chat guard` (a git pre-commit\n" +
        "hook: `agent-chat setup git-hook CH`) refuses other agents' commits under it.\n" +
        "\nExamples:\n  agent-chat lease add review 'src/store/**' --as bob --ttl 2h --reason 'backend core'\n" +
        "  agent-chat lease add review README.md --as carol --shared",
    )
    .action(async (channel: string, pattern: string, opts: AddFlags) => {
      const as = ctx.agent(opts.as);
      const options = {
        ...(opts.ttl === undefined ? {} : { ttlMs: parseTtl(opts.ttl) }),
        ...(opts.shared ? { shared: true } : {}),
        ...(opts.reason === undefined ? {} : { reason: opts.reason }),
        ...(opts.force ? { force: true } : {}),
      };
      const store = await ctx.open();
      // Its lock record, on a folder root, is posted `path.locked` by the store, journaled.
      const info = await store.addPathLease(channel, pattern, as, options);
      if (ctx.json) return ctx.printJson(info);
      ctx.out(`leased ${info.pattern} in ${channel} (${pathLeaseText(info)})\n`);
      for (const over of info.forced ?? []) ctx.warn(`forced over: ${over}`);
    });
  renewCommand(
    lease
      .command("renew")
      .description("extend your path lease (by its token or its pattern)")
      .argument("<channel>")
      .argument("<lease>", "the lease's token (its id) or its pattern"),
    ctx,
    {
      ttl: "the new lease from now (default: its length)",
      example: "agent-chat lease renew review 'src/store/**' --as bob",
      renew: (store, channel, target, as, options) =>
        store.renewPathLease(channel, target, as, options),
      describe: (info) => [info.pattern, pathLeaseText(info)],
    },
  );
  withHolder(
    lease
      .command("release")
      .description("give a path lease back (only its holder, while it is live)")
      .argument("<channel>")
      .argument("<lease>", "the lease's token (its id) or its pattern"),
  )
    .addHelpText("after", "\nExample:\n  agent-chat lease release review 4 --as bob")
    .action(async (channel: string, target: string, opts: HolderFlags) => {
      const as = ctx.agent(opts.as);
      const store = await ctx.open();
      // Its lock record, on a folder root, is posted `path.lock.unlocked` by the store.
      const info = await store.releasePathLease(channel, target, as, tokenOption(opts.token));
      if (ctx.json) return ctx.printJson(info);
      ctx.out(`released ${info.pattern} in ${channel} (token ${info.token})\n`);
    });
}

function registerLeases(program: Command, ctx: CliContext): void {
  channelCommand(program, ctx, {
    name: "leases",
    description: "list a channel's path leases: pattern, holder, token, time left",
    examples: ["agent-chat leases review"],
    run: async (store, channel) => {
      const leases = await store.pathLeases(channel);
      // An object, as every command prints: a list alone could never gain a field.
      if (ctx.json) return ctx.printJson({ channel, leases });
      if (leases.length === 0) return ctx.out(`no path leases in ${channel}\n`);
      for (const l of leases) {
        ctx.out(
          `${l.pattern}  ${l.holder}  ${pathLeaseText(l)}${l.reason ? `  (${l.reason})` : ""}\n`,
        );
      }
    },
  });
}

interface AddFlags {
  as?: string;
  ttl?: string;
  shared?: boolean;
  reason?: string;
  force?: boolean;
}

/** `exclusive, token 3, 1h 59m left`, `shared, token 4, expired 2m ago`, `chat.py path lock 9f…, 4m left`. */
export function pathLeaseText(l: PathLeaseInfo): string {
  const kind = l.lock
    ? `chat.py path lock ${l.lock}`
    : `${l.exclusive ? "exclusive" : "shared"}, token ${l.token}`;
  const left = Date.parse(l.expiresAt) - Date.now();
  if (l.state === "released") return `${kind}, released`;
  return left >= 0 && l.state === "live"
    ? `${kind}, ${formatDuration(left)} left`
    : `${kind}, expired ${formatDuration(Math.max(0, -left))} ago`;
}
