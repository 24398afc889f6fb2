import type { Command } from "commander";
import { isRelevant } from "../../core/message.js";
import { safeLine } from "../../core/safe-text.js";
import {
  addGovernanceOptions,
  type GovernanceFlags,
  initGovernanceExtra,
} from "../../features/governance/cli.js";
import { type PolicyFlags, policyChange } from "../../features/governance/cli-policy.js";
import { policyMetaKeys } from "../../features/governance/index.js";
import { MAX_BODY_KEY, MAX_CHANNEL_BODY_BYTES, TASK_TTL_KEY } from "../../store/types.js";
import { readBody } from "../body.js";
import {
  type CliContext,
  channelCommand,
  type HolderFlags,
  parsePositiveInt,
  parseTtl,
  renewCommand,
  splitList,
  tokenOption,
  UsageError,
  WAIT_FLAG_DEFAULTS,
  withHolder,
} from "../context.js";
import { EXIT } from "../exit-codes.js";
import { formatMessageHuman, messageJson } from "../output.js";
import { HOT_ACTIONS, type HotOptions, leaseText, locate, stateText, taskName } from "./hot.js";
import { registerStructuredTaskCommands } from "./structured-tasks.js";

/** The reference's commands (same flags, output and exit codes) and ours beside them. */
export function registerCoreCommands(program: Command, ctx: CliContext): void {
  registerInit(program, ctx);
  registerChannels(program, ctx);
  registerRoster(program, ctx);
  registerPost(program, ctx);
  registerRead(program, ctx);
  registerWait(program, ctx);
  registerPeek(program, ctx);
  registerTail(program, ctx);
  registerClaim(program, ctx);
  registerRenew(program, ctx);
  registerDone(program, ctx);
  registerRelease(program, ctx);
  registerFence(program, ctx);
  registerTasks(program, ctx);
  registerTask(program, ctx);
}

function registerInit(program: Command, ctx: CliContext): void {
  addGovernanceOptions(
    program
      .command("init")
      .description("create a channel (fails if it exists)")
      .argument("<channel>", "channel name")
      .option("--members <list>", "comma-separated members; empty means open to everyone")
      .option("--topic <text>", "what the channel is for", "")
      .option("--task-ttl <duration>", "the default lease of claims and path leases: 45m, 2h")
      .option("--signatures <mode>", "off | warn | require (docs/signatures.md)")
      .option("--membership <mode>", "open | strict: posts by non-members refused")
      .option("--loop-guard", "pause an agent that posts 30 times a minute or ping-pongs"),
  )
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat init review --members alice,bob --topic 'schema v2'\n  agent-chat init lobby\n" +
        "  agent-chat init release --maintainer alice --band merge=approval --band '*'=auto",
    )
    .action(
      async (
        channel: string,
        opts: { members?: string; topic: string; taskTtl?: string } & GovernanceFlags & PolicyFlags,
      ) => {
        const ttl = opts.taskTtl === undefined ? undefined : parseTtl(opts.taskTtl, "--task-ttl");
        const extra = {
          ...bodyLimitExtra(ctx.maxBodyBytes),
          ...initGovernanceExtra(opts, channel),
          ...policyMetaKeys(policyChange(opts)),
          ...(ttl === undefined ? {} : { [TASK_TTL_KEY]: ttl / 1000 }),
        };
        const store = await ctx.open();
        const meta = await store.init(channel, {
          members: splitList(opts.members),
          topic: opts.topic,
          ...(Object.keys(extra).length > 0 ? { extra } : {}),
        });
        if (ctx.json) return ctx.printJson(meta);
        // chat.py's line, which scripts written for it parse.
        const who = meta.members.length > 0 ? meta.members.join(", ") : "(open)";
        ctx.out(
          `created channel '${channel}' at ${locate(store.location, channel)}  members=${who}\n`,
        );
      },
    );
}

function registerChannels(program: Command, ctx: CliContext): void {
  program
    .command("channels")
    .description("list the channels of the root")
    .addHelpText("after", "\nExamples:\n  agent-chat channels\n  agent-chat --json channels")
    .action(() => HOT_ACTIONS.channels(ctx, [], {}));
}

function registerRoster(program: Command, ctx: CliContext): void {
  channelCommand(program, ctx, {
    name: "roster",
    description: "show a channel's members, topic and message count (--json: all of _meta.json)",
    examples: ["agent-chat roster review"],
    run: async (store, channel) => {
      const meta = await store.roster(channel);
      if (ctx.json) return ctx.printJson(meta);
      const info = (await store.channels()).find((c) => c.name === channel);
      // chat.py's four lines, which scripts written for it parse; the topic and names come from
      // a file anyone can write, so each is shown on one line of plain text.
      ctx.out(
        `channel : ${channel}\n` +
          `topic   : ${safeLine(meta.topic) || "(none)"}\n` +
          `members : ${safeLine(meta.members.join(", ")) || "(open)"}\n` +
          `messages: ${info?.messages ?? info?.lastSeq ?? 0}\n`,
      );
    },
  });
}

/** A hot command whose one argument goes as is to its `HOT_ACTIONS` entry. */
interface HotCommand {
  name: "post" | "read" | "wait" | "peek";
  description: string;
  argument: [string, string?];
  /** Its flags, in the order `--help` lists them. */
  options: (command: Command) => Command;
  help: string;
}

function registerHot(program: Command, ctx: CliContext, spec: HotCommand): void {
  const head = program.command(spec.name).description(spec.description);
  spec
    .options(head.argument(...spec.argument))
    .addHelpText("after", spec.help)
    .action((first: string, opts: HotOptions) => HOT_ACTIONS[spec.name](ctx, [first], opts));
}

/** `--as`, for the commands that read as someone (their cursor, their addressed messages). */
function asReader(command: Command): Command {
  return command.option("--as <name>", "reader (default: $AGENT_CHAT_NAME)");
}

function registerPost(program: Command, ctx: CliContext): void {
  registerHot(program, ctx, {
    name: "post",
    description: "post a message (body from --body, --body-file or stdin)",
    argument: ["<channel>"],
    options: (c) =>
      c
        .option("--from <name>", "sender (default: $AGENT_CHAT_NAME)")
        .option("--title <text>", "title (default: the body's first line)")
        .option("--to <list>", "recipients, comma-separated; default all (broadcast)")
        .option("--reply <seq>", "the message number this answers")
        .option("--status <label>", "discussion | proposal | ack | done | …", "discussion")
        .option("--body <text>", "message body (markdown)")
        .option("--body-file <file>", "read the body from a file ('-' for stdin)")
        .option(
          "--wait-for <state>",
          "then park until every addressee has: notified | read | answered (exit 2 on timeout)",
        )
        .option(
          "--timeout <duration>",
          "with --wait-for: give up after this long (30s, 5m; default 15m)",
        ),
    help:
      "\nExamples:\n  agent-chat post review --from alice --to bob --title 'Draft ready' --body 'See PR 12.'\n" +
      "  agent-chat post review --from alice --to bob --body 'Ready?' --wait-for read --timeout 30s\n" +
      "  git diff | agent-chat post review --from alice --title 'Patch' --status proposal\n" +
      "  agent-chat post review --from bob --reply 3 --status ack --body 'Looks good'",
  });
}

function registerRead(program: Command, ctx: CliContext): void {
  registerHot(program, ctx, {
    name: "read",
    description: "print the messages for you since your cursor, then advance it",
    argument: ["<channel>"],
    options: (c) =>
      asReader(c)
        .option("--all", "the whole channel from the start, every message whoever it is for")
        .option("--peek", "do not advance the cursor")
        .option(
          "--thread <seq>",
          "only the thread of this message, whoever it is for (no cursor moves)",
        ),
    help:
      "\n--all is the reference chat.py's: every message from #1, not only those for you; the\n" +
      "cursor still moves to the end unless --peek.\n" +
      "\nExamples:\n  agent-chat read review --as bob\n  agent-chat read review --as bob --all --peek\n" +
      "  agent-chat read review --thread 12",
  });
}

function registerWait(program: Command, ctx: CliContext): void {
  registerHot(program, ctx, {
    name: "wait",
    description: "block, without spending tokens, until a message for you arrives; then read it",
    argument: ["<channels>", "one channel, or several separated by commas"],
    options: (c) =>
      asReader(c)
        .option(
          "--timeout <seconds>",
          "give up after this long (exit 2)",
          WAIT_FLAG_DEFAULTS.timeout,
        )
        .option(
          "--interval <seconds>",
          "safety-net poll behind the file watch",
          WAIT_FLAG_DEFAULTS.interval,
        ),
    help:
      "\nExits 0 with the messages, 2 on timeout, 130 on Ctrl-C.\n\nExamples:\n" +
      "  agent-chat wait review --as bob --timeout 600\n  agent-chat wait review,deploy --as bob",
  });
}

function registerPeek(program: Command, ctx: CliContext): void {
  registerHot(program, ctx, {
    name: "peek",
    description: "print the last messages of a channel, whoever they were for (no cursor moves)",
    argument: ["<channel>"],
    options: (c) =>
      c
        .option("-n, --count <n>", "how many", "3")
        .option("--archived", "reach back into archived messages when the channel has fewer"),
    help: "\nExample:\n  agent-chat peek review -n 5",
  });
}

function registerTail(program: Command, ctx: CliContext): void {
  program
    .command("tail")
    .description("print new messages as they arrive, until Ctrl-C (NDJSON with --json)")
    .argument("<channels>", "one channel, or several separated by commas")
    .option(
      "--as <name>",
      "only the messages relevant to this agent (no cursor moves; each is marked notified)",
    )
    .option("--from-start", "print the existing messages first")
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat tail review\n  agent-chat --json tail review,deploy",
    )
    .action((channels: string, opts: TailFlags) => tail(ctx, channels, opts));
}

/** `<channel> <task>`: the head of every command on one task. */
function taskCommand(program: Command, name: string, description: string): Command {
  return program
    .command(name)
    .description(description)
    .argument("<channel>")
    .argument(
      "<task>",
      "task-12.md, task-12 or 12; or the id of a chat.py 0.7 task, tasks/<id>.json",
    );
}

function registerClaim(program: Command, ctx: CliContext): void {
  taskCommand(
    program,
    "claim",
    "atomically take a task for a lease; prints its fencing token (losers exit 3)",
  )
    .option("--as <name>", "claimant (default: $AGENT_CHAT_NAME)")
    .option(
      "--ttl <duration>",
      "how long the lease lasts unrenewed: 90s, 30m, 2h, 1d (default: the channel's, else 30m)",
    )
    .addHelpText("after", "\nExample:\n  agent-chat claim review task-12 --as bob --ttl 1h")
    .action((channel: string, task: string, opts: HotOptions) =>
      HOT_ACTIONS.claim(ctx, [channel, task], opts),
    );
}

function registerRenew(program: Command, ctx: CliContext): void {
  renewCommand(
    taskCommand(
      program,
      "renew",
      "extend your lease on a task (only its holder, with a live lease)",
    ),
    ctx,
    {
      ttl: "the new lease from now (default: the channel's, else 30m)",
      example: "agent-chat renew review 12 --as bob --token 3",
      renew: (store, channel, task, as, options) => store.renew(channel, task, as, options),
      describe: (info) => [taskName(info), leaseText(info)],
    },
  );
}

function registerDone(program: Command, ctx: CliContext): void {
  withHolder(
    taskCommand(
      program,
      "done",
      "finish a task (only its holder, with a live lease); the task stays taken",
    ),
  )
    .option("--note <text>", "one line on how it ended")
    .addHelpText(
      "after",
      "\nExample:\n  agent-chat done review 12 --as bob --token 3 --note 'merged in #40'",
    )
    .action(async (channel: string, task: string, opts: HolderFlags & { note?: string }) => {
      const as = ctx.agent(opts.as);
      const options = {
        ...tokenOption(opts.token),
        ...(opts.note === undefined ? {} : { note: opts.note }),
      };
      const info = await (await ctx.open()).done(channel, task, as, options);
      if (ctx.json) return ctx.printJson(info);
      ctx.out(`done: ${taskName(info)} in ${channel} by ${info.holder}\n`);
    });
}

function registerRelease(program: Command, ctx: CliContext): void {
  withHolder(taskCommand(program, "release", "give a claimed task back (only its holder can)"))
    .addHelpText("after", "\nExample:\n  agent-chat release review 12 --as bob")
    .action(async (channel: string, task: string, opts: HolderFlags) => {
      const as = ctx.agent(opts.as);
      const info = await (await ctx.open()).release(channel, task, as, tokenOption(opts.token));
      if (ctx.json) return ctx.printJson(info);
      ctx.out(`released ${taskName(info)} in ${channel}\n`);
    });
}

function registerFence(program: Command, ctx: CliContext): void {
  taskCommand(
    program,
    "fence",
    "exit 0 only while TOKEN is the task's live grant, else exit 3 naming the holder",
  )
    .requiredOption("--token <n>", "the fencing token to check")
    .addHelpText(
      "after",
      "\nExample (a script acts only while its lease is live):\n" +
        "  agent-chat fence review 12 --token 3 && git push",
    )
    .action(async (channel: string, task: string, opts: { token: string }) => {
      const token = parsePositiveInt(opts.token, "--token");
      const { live, task: info } = await (await ctx.open()).fence(channel, task, token);
      if (ctx.json) ctx.printJson({ live, task: info });
      else if (live) ctx.out(`token ${token} is live on ${taskName(info)} (${leaseText(info)})\n`);
      if (live) return;
      if (!ctx.json) {
        ctx.err(
          `agent-chat: token ${token} is not the live grant of ${taskName(info)}: ${stateText(info)}\n`,
        );
      }
      ctx.exitCode = EXIT.CLAIM_LOST;
    });
}

function registerTasks(program: Command, ctx: CliContext): void {
  program
    .command("tasks")
    .description("list a channel's tasks: state, holder, title, token and time left")
    .argument("<channel>")
    .addHelpText("after", "\nExample:\n  agent-chat tasks review")
    .action((channel: string) => HOT_ACTIONS.tasks(ctx, [channel], {}));
}

function registerTask(program: Command, ctx: CliContext): void {
  const task = program
    .command("task")
    .description("manage tasks: our markers (task add) and chat.py 0.7's records (create, …)");
  task
    .command("add")
    .description("create task-<id>.md (fails if that task exists)")
    .argument("<channel>")
    .requiredOption("--title <text>", "what is to be done")
    .option("--id <id>", "task id (default: the next number)")
    .option("--as <name>", "who adds it (default: $AGENT_CHAT_NAME)")
    .option("--body <text>", "details (markdown)")
    .option("--body-file <file>", "read the details from a file")
    .addHelpText(
      "after",
      "\nExample:\n  agent-chat task add review --title 'Review the schema' --as alice",
    )
    .action(
      async (
        channel: string,
        opts: { title: string; id?: string; as?: string; body?: string; bodyFile?: string },
      ) => {
        const from = ctx.agent(opts.as);
        const body =
          opts.body === undefined && opts.bodyFile === undefined
            ? ""
            : await readBody({ body: opts.body, bodyFile: opts.bodyFile }, ctx.maxBodyBytes);
        const store = await ctx.open();
        const input: Parameters<typeof store.addTask>[1] = { title: opts.title, body, from };
        if (opts.id !== undefined) input.id = opts.id;
        const info = await store.addTask(channel, input);
        if (ctx.json) return ctx.printJson(info);
        ctx.out(`added ${taskName(info)} in ${channel}: ${info.title}\n`);
      },
    );
  registerStructuredTaskCommands(task, ctx);
}

/** `--max-body` at `init` is the channel's limit, recorded for every poster and reader. */
function bodyLimitExtra(bytes: number | undefined): Record<string, number> {
  if (bytes === undefined) return {};
  if (bytes > MAX_CHANNEL_BODY_BYTES) {
    throw new UsageError(`--max-body is at most ${MAX_CHANNEL_BODY_BYTES} for a channel (64 MiB)`);
  }
  return { [MAX_BODY_KEY]: bytes };
}

interface TailFlags {
  as?: string;
  fromStart?: boolean;
}

async function tail(ctx: CliContext, channels: string, opts: TailFlags): Promise<void> {
  const list = splitList(channels);
  if (list.length === 0) throw new UsageError("name at least one channel");
  const store = await ctx.open();
  const watchOptions: Parameters<typeof store.watch>[1] = { signal: ctx.abort.signal };
  if (opts.fromStart) watchOptions.after = 0;
  for await (const message of store.watch(list, watchOptions)) {
    if (opts.as && !isRelevant(message, opts.as)) continue;
    if (ctx.json) ctx.printJson(messageJson(message));
    else ctx.out(formatMessageHuman(message));
    // Shown to the agent's tail: that is its "notified" step (docs/delivery.md).
    if (opts.as) await store.notify(message.channel, opts.as, message.seq).catch(() => {});
  }
}
