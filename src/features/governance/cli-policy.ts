import type { Command } from "commander";
import { type CliContext, UsageError } from "../../cli/context.js";
import type { Store } from "../../store/types.js";
import { hasPinnedPolicy, hasPrivateKey } from "../trust/index.js";
import { pausesOf, unpause } from "./loop-guard.js";
import { announcePolicy, setPolicy } from "./policy.js";
import {
  DEFAULT_PING_PONG,
  DEFAULT_RATE_LIMIT,
  type PolicyChange,
  policyOf,
} from "./policy-rules.js";

export interface PolicyFlags {
  signatures?: string;
  membership?: string;
  rateLimit?: string;
  pingPong?: string;
  loopGuard?: boolean;
}

/** The policy change the flags describe (shared with `init`). */
export function policyChange(flags: PolicyFlags): PolicyChange {
  const change: PolicyChange = {};
  if (flags.signatures !== undefined) change.signatures = flags.signatures;
  if (flags.membership !== undefined) change.membership = flags.membership;
  if (flags.loopGuard) {
    change.rateLimit = DEFAULT_RATE_LIMIT;
    change.pingPong = DEFAULT_PING_PONG;
  }
  if (flags.rateLimit !== undefined) change.rateLimit = whole(flags.rateLimit, "--rate-limit");
  if (flags.pingPong !== undefined) change.pingPong = whole(flags.pingPong, "--ping-pong");
  return change;
}

function whole(value: string, flag: string): number {
  if (!/^\d{1,6}$/.test(value)) throw new UsageError(`${flag} is a whole number, 0 for off`);
  return Number(value);
}

/** `agent-chat policy` and `agent-chat unpause` (docs/signatures.md). */
export function registerPolicyCommands(program: Command, ctx: CliContext): void {
  program
    .command("policy")
    .description("show or set a channel's policy on signatures, membership and loop guards")
    .argument("<channel>", "channel name")
    .option("--signatures <mode>", "off | warn | require")
    .option("--membership <mode>", "open | strict (posts by non-members refused)")
    .option("--rate-limit <n>", "posts per agent per minute before a pause (0 = off)")
    .option("--ping-pong <n>", "messages alternating between two agents before a pause (0 = off)")
    .option(
      "--loop-guard",
      `both guards at their defaults (${DEFAULT_RATE_LIMIT}/min, ${DEFAULT_PING_PONG})`,
    )
    .option("--as <name>", "who changes it: the maintainer, when the channel has one")
    .option("--accept", "pin the policy the channel's _meta.json states now, weaker or not")
    .addHelpText(
      "after",
      "\nA reader keeps the strictest policy it has seen for a channel: a _meta.json edited to a\n" +
        "weaker one is reported, not obeyed, until the pinned maintainer signs the change (this\n" +
        "command posts it, signed, when you are the maintainer and hold its key) or you accept it.\n" +
        "\nExamples:\n  agent-chat policy review\n" +
        "  agent-chat policy review --signatures require --membership strict --as maintainer\n" +
        "  agent-chat policy review --loop-guard\n  agent-chat policy review --accept",
    )
    .action(async (channel: string, opts: PolicyFlags & { as?: string; accept?: boolean }) => {
      // The root's own store: a daemon's socket does not change a channel's meta.
      // Closed here: a NATS connection left open would keep the command from exiting.
      const store = await ctx.openFolder();
      try {
        const change = policyChange(opts);
        const as = opts.as ?? ctx.env.AGENT_CHAT_NAME;
        if (opts.accept && hasPinnedPolicy(store)) await store.acceptPolicy(channel);
        if (Object.keys(change).length > 0) await changePolicy(ctx, store, channel, change, as);
        await printPolicy(ctx, store, channel);
      } finally {
        await store.close();
      }
    });

  program
    .command("unpause")
    .description("lift a loop guard's pause: the agent may post in the channel again")
    .argument("<channel>", "channel name")
    .requiredOption("--agent <name>", "the paused agent")
    .addHelpText("after", "\nExamples:\n  agent-chat unpause review --agent bob")
    .action(async (channel: string, opts: { agent: string }) => {
      const store = await ctx.openFolder();
      const had = await unpause(store, channel, opts.agent).finally(() => store.close());
      if (ctx.json) {
        ctx.printJson({ channel, agent: opts.agent, unpaused: had });
        return;
      }
      ctx.out(
        had
          ? `${opts.agent} may post in ${channel} again\n`
          : `${opts.agent} was not paused in ${channel}\n`,
      );
    });
}

/** Writes the change and, when `as` is the maintainer holding its key, posts it signed. */
async function changePolicy(
  ctx: CliContext,
  store: Store,
  channel: string,
  change: PolicyChange,
  as: string | undefined,
): Promise<void> {
  const before = await store.roster(channel);
  await setPolicy(store, channel, {
    change,
    as,
    holdsKey: (name) => hasPrivateKey(ctx.configDir, name),
  });
  if (as === undefined || !hasPrivateKey(ctx.configDir, as)) return;
  await announcePolicy(await ctx.openFor(as), channel, as, before, await store.roster(channel));
}

/** The policy this reader obeys, and the warning when `_meta.json` states a weaker one. */
async function printPolicy(ctx: CliContext, store: Store, channel: string): Promise<void> {
  const standing = hasPinnedPolicy(store) ? await store.policyStanding(channel) : undefined;
  const meta = standing?.meta ?? (await store.roster(channel));
  const policy = policyOf(meta);
  const paused = Object.keys(pausesOf(meta));
  const warnings = standing?.warning ? [standing.warning] : [];
  if (ctx.json) {
    ctx.printJson({ channel, ...policy, paused, weaker: standing?.weaker ?? [], warnings });
    return;
  }
  for (const w of warnings) ctx.warn(w);
  ctx.out(
    `${channel}: signatures ${policy.signatures}, membership ${policy.membership}, ` +
      `rate limit ${policy.rateLimit || "off"}, ping-pong ${policy.pingPong || "off"}` +
      `${paused.length > 0 ? `, paused: ${paused.join(", ")}` : ""}\n`,
  );
}

/**
 * Says on stderr when the channel's `_meta.json` states a weaker policy than the one this reader
 * pinned (and so obeys); returns the warnings for a command's `--json` document. A daemon's
 * store says it with its read results instead.
 */
export async function policyWarnings(
  ctx: CliContext,
  store: Store,
  channel: string,
): Promise<string[]> {
  if (!hasPinnedPolicy(store)) return [];
  const { warning } = await store.policyStanding(channel).catch(() => ({ warning: undefined }));
  if (warning === undefined) return [];
  ctx.warn(warning);
  return [warning];
}
