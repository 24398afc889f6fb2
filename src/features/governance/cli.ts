import type { Command } from "commander";
import { readBody } from "../../cli/body.js";
import {
  type CliContext,
  channelCommand,
  formatDuration,
  parsePositiveInt,
  parseSeconds,
  parseTtl,
  UsageError,
  WAIT_FLAG_DEFAULTS,
} from "../../cli/context.js";
import { AgentChatError } from "../../core/errors.js";
import type { ChannelMeta } from "../../core/meta.js";
import { type Store, TASK_TTL_KEY } from "../../store/types.js";
import { hasPrivateKey } from "../trust/index.js";
import { policyWarnings } from "./cli-policy.js";
import {
  decide,
  type GovernanceEvent,
  govern,
  pendingRequests,
  type RequestInput,
  type RequestOutcome,
  requestAction,
} from "./governance.js";
import { announcePolicy } from "./policy.js";
import {
  type Band,
  changeProfile,
  type GovernanceChange,
  type GovernanceProfile,
  governanceOf,
  parseBandAssignment,
  profileMetaKeys,
  type Verdict,
  validateAction,
} from "./rules.js";
import { setTaskTtl } from "./task-ttl.js";

/** Repeatable `--band a=b` (and `--band a=b,c=d`). */
function collect(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(",").filter((v) => v.trim() !== "")];
}

export interface GovernanceFlags {
  maintainer?: string;
  band?: string[];
  vetoWindow?: string;
}

/** The change that `--maintainer`, `--band` and `--veto-window` describe. */
export function governanceChange(flags: GovernanceFlags, removed: string[] = []): GovernanceChange {
  const change: GovernanceChange = {};
  if (flags.maintainer !== undefined) change.maintainer = flags.maintainer;
  const bands: Record<string, Band | null> = {};
  for (const assignment of flags.band ?? []) {
    const [action, band] = parseBandAssignment(assignment);
    bands[action] = band;
  }
  for (const action of removed) bands[validateAction(action)] = null;
  if (Object.keys(bands).length > 0) change.bands = bands;
  if (flags.vetoWindow !== undefined) {
    const ms = parseSeconds(flags.vetoWindow, "--veto-window");
    if (ms <= 0) throw new UsageError("--veto-window must be more than 0 seconds");
    change.vetoWindowSeconds = ms / 1000;
  }
  return change;
}

/** The `_meta.json` keys for `init --maintainer … --band …`, or undefined without such flags. */
export function initGovernanceExtra(
  flags: GovernanceFlags,
  channel: string,
): Record<string, unknown> | undefined {
  const change = governanceChange(flags);
  if (Object.keys(change).length === 0) return undefined;
  return profileMetaKeys(changeProfile(undefined, change, channel));
}

/** Adds the governance flags to a command (`init` and `govern` share them). */
export function addGovernanceOptions(command: Command): Command {
  return command
    .option("--maintainer <name>", "the one agent or person whose verdicts count")
    .option(
      "--band <action=band>",
      "approval band of an action: auto | notify | approval; '*' is every other action (repeatable)",
      collect,
    )
    .option("--veto-window <seconds>", "how long a notify request waits for a veto (default 300)");
}

/** `govern --task-ttl`: the channel's default lease, validated as `--ttl` is. */
async function changeTaskTtl(
  ctx: CliContext,
  store: Store,
  channel: string,
  value: string,
  as: string | undefined,
): Promise<void> {
  const ttlMs = parseTtl(value, "--task-ttl");
  await setTaskTtl(store, channel, ttlMs, as);
  if (!ctx.json) ctx.out(`default lease of ${channel}: ${formatDuration(ttlMs)}\n`);
}

export function registerGovernanceCommands(program: Command, ctx: CliContext): void {
  registerGovern(program, ctx);
  registerRequest(program, ctx);
  registerApprove(program, ctx);
  registerPending(program, ctx);
}

function registerGovern(program: Command, ctx: CliContext): void {
  addGovernanceOptions(
    program
      .command("govern")
      .description("show or change a channel's governance profile (maintainer, approval bands)")
      .argument("<channel>"),
  )
    .option("--remove-band <action>", "drop an action's band (repeatable)", collect)
    .option(
      "--task-ttl <duration>",
      "the default lease of claims and path leases here: 90s, 45m, 2h (at most 7d)",
    )
    .option(
      "--as <name>",
      "who changes it: the current maintainer, once one is set (default: $AGENT_CHAT_NAME)",
    )
    .addHelpText(
      "after",
      "\nWith no change it prints the profile. The profile is kept in _meta.json after the\n" +
        "reference's keys, so chat.py still reads the channel. Once a maintainer is set, only\n" +
        "they change it (--as). Names are not authenticated: see docs/governance.md.\n\nExamples:\n" +
        "  agent-chat govern review\n" +
        "  agent-chat govern review --as alice --maintainer alice --band merge=approval --band deploy=approval \\\n" +
        "      --band refactor=notify --band '*'=auto --veto-window 120\n" +
        "  agent-chat govern review --as alice --remove-band refactor\n" +
        "  agent-chat govern review --as alice --task-ttl 45m",
    )
    .action(
      async (
        channel: string,
        opts: GovernanceFlags & { removeBand?: string[]; as?: string; taskTtl?: string },
      ) => {
        const change = governanceChange(opts, opts.removeBand ?? []);
        const store = await ctx.open();
        const changed = Object.keys(change).length > 0;
        // Optional: a channel without a maintainer yet may be governed by anyone.
        const as = opts.as ?? (ctx.env.AGENT_CHAT_NAME || undefined);
        if (opts.taskTtl !== undefined) await changeTaskTtl(ctx, store, channel, opts.taskTtl, as);
        const meta = changed
          ? await governSigned(ctx, store, channel, change, as)
          : await store.roster(channel);
        const profile = governanceOf(meta);
        if (ctx.json) {
          return ctx.printJson({
            channel,
            governed: profile !== undefined,
            ...profileJson(profile),
            ...(meta[TASK_TTL_KEY] === undefined ? {} : { taskTtlSeconds: meta[TASK_TTL_KEY] }),
          });
        }
        if (!profile) {
          ctx.out(
            `channel ${channel} has no governance profile\n` +
              `(set one with: agent-chat govern ${channel} --maintainer NAME --band ACTION=approval)\n`,
          );
          return;
        }
        ctx.out(formatProfile(channel, profile));
      },
    );
}

function registerRequest(program: Command, ctx: CliContext): void {
  program
    .command("request")
    .description("ask to do an action; waits for the maintainer when its band says so")
    .argument("<channel>")
    .requiredOption("--action <name>", "the action, as named in the channel's bands (e.g. merge)")
    .requiredOption("--title <text>", "what exactly you want to do")
    .option("--as <name>", "requester (default: $AGENT_CHAT_NAME)")
    .option("--body <text>", "details for the maintainer (markdown)")
    .option("--body-file <file>", "read the details from a file ('-' for stdin)")
    .option(
      "--timeout <seconds>",
      "how long an approval request waits for a verdict",
      WAIT_FLAG_DEFAULTS.timeout,
    )
    .option(
      "--interval <seconds>",
      "safety-net poll behind the file watch",
      WAIT_FLAG_DEFAULTS.interval,
    )
    .addHelpText(
      "after",
      "\nBands: auto → exit 0 at once; notify → posts 'status: notify', waits the veto window,\n" +
        "exit 0 unless the maintainer vetoes (exit 4); approval → posts 'status: needs-approval'\n" +
        "to the maintainer and waits for the reply: approved exit 0, rejected or vetoed exit 4,\n" +
        "no verdict within --timeout exit 2 (the request is then marked expired).\n" +
        "Verdicts from anyone but the maintainer never count; they are reported on stderr.\n" +
        "Waiting watches the channel (no tokens, wakes in milliseconds) and moves no read cursor.\n" +
        "\nExamples:\n" +
        "  agent-chat request review --as bob --action merge --title 'Merge PR 12' && git merge pr-12\n" +
        "  agent-chat request review --as bob --action deploy --title 'Deploy 1.4' --timeout 3600",
    )
    .action(async (channel: string, opts: RequestFlags) => {
      const as = ctx.agent(opts.as);
      const input: RequestInput = {
        as,
        action: opts.action,
        title: opts.title,
        timeoutMs: parseSeconds(opts.timeout, "--timeout"),
        intervalMs: Math.max(10, parseSeconds(opts.interval, "--interval")),
        signal: ctx.abort.signal,
        onEvent: (event) => reportEvent(ctx, channel, event),
      };
      if (opts.body !== undefined || opts.bodyFile !== undefined) {
        input.body = await readBody({ body: opts.body, bodyFile: opts.bodyFile }, ctx.maxBodyBytes);
      }
      const store = await ctx.openFor(input.as);
      const warnings = await policyWarnings(ctx, store, channel);
      const outcome = await requestAction(store, channel, input);
      if (outcome.band !== "auto" && !outcome.proceed) {
        // Exit 4; the message (and the JSON error document) say who decided and why.
        throw new AgentChatError(
          "REJECTED",
          `request #${outcome.seq} (${outcome.action}) was ${outcome.result} by ${outcome.by} ` +
            `in #${outcome.decisionSeq}${verdictNote(outcome)}`,
        );
      }
      if (ctx.json) return ctx.printJson({ channel, ...outcome, warnings });
      ctx.out(`${goAheadText(channel, outcome)}\n`);
    });
}

/** The first line of the maintainer's note, when there is one. */
function verdictNote(outcome: { note?: string }): string {
  return outcome.note ? `: ${outcome.note.split("\n")[0]}` : "";
}

/** Why a request may go ahead: its band is auto, no veto came, or the maintainer approved. */
function goAheadText(channel: string, outcome: RequestOutcome): string {
  if (outcome.band === "auto") return `${outcome.action} is auto in ${channel}: go ahead`;
  if (outcome.result === "no-veto") {
    return `no veto on #${outcome.seq} (${outcome.action}) within the window: go ahead`;
  }
  return `#${outcome.seq} (${outcome.action}) approved by ${outcome.by} in #${outcome.decisionSeq}${verdictNote(outcome)}`;
}

function registerApprove(program: Command, ctx: CliContext): void {
  program
    .command("approve")
    .description("the maintainer's verdict on a request: approved (default), --reject or --veto")
    .argument("<channel>")
    .argument("<seq>", "the request's message number")
    .option("--as <name>", "the maintainer (default: $AGENT_CHAT_NAME)")
    .option("--reject", "reject the request (the requester exits 4)")
    .option("--veto", "veto a notify request inside its window (the requester exits 4)")
    .option("--note <text>", "why; becomes the reply's body")
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat approve review 12 --as alice\n" +
        "  agent-chat approve review 12 --as alice --reject --note 'not before the release'\n" +
        "  agent-chat approve review 14 --as alice --veto",
    )
    .action(
      async (
        channel: string,
        seqText: string,
        opts: { as?: string; reject?: boolean; veto?: boolean; note?: string },
      ) => {
        if (opts.reject && opts.veto) throw new UsageError("give --reject or --veto, not both");
        const as = ctx.agent(opts.as);
        const seq = parsePositiveInt(seqText.replace(/^#/, ""), "SEQ");
        const verdict: Verdict = opts.reject ? "rejected" : opts.veto ? "vetoed" : "approved";
        const input: Parameters<typeof decide>[3] = { as, verdict };
        if (opts.note !== undefined) input.note = opts.note;
        const store = await ctx.openFor(input.as);
        await policyWarnings(ctx, store, channel);
        const result = await decide(store, channel, seq, input);
        if (ctx.json) return ctx.printJson(result);
        ctx.out(
          `${verdict} #${seq} (${result.request.action}: ${result.request.title}); posted #${result.seq}\n`,
        );
      },
    );
}

function registerPending(program: Command, ctx: CliContext): void {
  channelCommand(program, ctx, {
    name: "pending",
    description: "list the requests that still wait for the maintainer's verdict",
    examples: ["agent-chat pending review", "agent-chat --json pending review"],
    run: async (store, channel) => {
      await policyWarnings(ctx, store, channel);
      const { profile, requests } = await pendingRequests(store, channel);
      if (ctx.json) {
        return ctx.printJson({
          channel,
          maintainer: profile.maintainer ?? null,
          pending: requests,
        });
      }
      if (requests.length === 0) {
        ctx.err(`no open requests in ${channel}\n`);
        return;
      }
      for (const r of requests) {
        const until = r.vetoUntil ? `\tveto until ${r.vetoUntil}` : "";
        ctx.out(`#${r.seq}\t${r.action}\t${r.band}\t${r.from}\t${r.title}${until}\n`);
      }
    },
  });
}

interface RequestFlags {
  as?: string;
  action: string;
  title: string;
  body?: string;
  bodyFile?: string;
  timeout: string;
  interval: string;
}

function reportEvent(ctx: CliContext, channel: string, event: GovernanceEvent): void {
  switch (event.type) {
    case "fallback":
      ctx.err(
        `agent-chat: ${event.lookup.action} has no band of its own in ${channel}; ` +
          `the default '*' = ${event.lookup.band} applies\n`,
      );
      return;
    case "posted":
      ctx.err(
        event.band === "approval"
          ? `agent-chat: posted #${event.seq} (needs-approval); waiting for ${event.maintainer}…\n`
          : `agent-chat: posted #${event.seq} (notify); ${event.maintainer} may veto within the window…\n`,
      );
      return;
    case "ignored":
      ctx.err(
        `agent-chat: ignored #${event.judgement.seq} '${event.judgement.status}' from ` +
          `${event.judgement.by}: ${event.judgement.reason}\n`,
      );
      return;
    case "comment":
      ctx.err(
        `agent-chat: #${event.judgement.seq} from ${event.judgement.by} ` +
          `(${event.judgement.status}): ${event.judgement.title}\n`,
      );
      return;
  }
}

function profileJson(profile: GovernanceProfile | undefined): Record<string, unknown> {
  if (!profile) return {};
  return {
    maintainer: profile.maintainer ?? null,
    bands: profileMetaKeys(profile).bands,
    veto_window_seconds: profile.vetoWindowSeconds,
  };
}

function formatProfile(channel: string, profile: GovernanceProfile): string {
  const bands = profileMetaKeys(profile).bands as Record<string, Band>;
  const width = Math.max(6, ...Object.keys(bands).map((k) => k.length));
  const lines = [
    `channel: ${channel}`,
    `maintainer: ${profile.maintainer ?? "(none)"}`,
    `veto window: ${profile.vetoWindowSeconds} s`,
    "bands:",
    ...(Object.keys(bands).length > 0
      ? Object.entries(bands).map(([action, band]) => `  ${action.padEnd(width)}  ${band}`)
      : ["  (none: every request fails until a band is set)"]),
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * Changes the profile and, when `as` is the maintainer holding its key, posts the change signed:
 * that is what moves the pins of readers who pinned the profile before (docs/signatures.md).
 */
async function governSigned(
  ctx: CliContext,
  store: Store,
  channel: string,
  change: GovernanceChange,
  as: string | undefined,
): Promise<ChannelMeta> {
  const before = await store.roster(channel);
  const meta = await govern(store, channel, change, as);
  if (as !== undefined && hasPrivateKey(ctx.configDir, as)) {
    await announcePolicy(await ctx.openFor(as), channel, as, before, meta);
  }
  return meta;
}
