import type { Command } from "commander";
import { AgentChatError, referenceError } from "../../core/errors.js";
import { validateName } from "../../core/names.js";
import type { NewStructuredTask, StructuredTaskUpdate, TaskInfo } from "../../store/types.js";
import { type CliContext, parsePositiveInt, speaksReference07 } from "../context.js";
import { parseReferenceLease } from "../usage.js";
import { leaseText, stateText } from "./hot.js";
import { recoverPendingCommand } from "./recover-pending.js";

/**
 * chat.py 0.7's task grammar (`task create|list|show|claim|renew|done|block|release|recover`),
 * on its structured tasks (`tasks/<id>.json`, docs/leases.md), with our options on top: a
 * fencing `--token`, `--ttl` as a duration, `--json`. `claim`, `renew`, `done` and `release`
 * are the top-level commands of the same names, which take our markers too.
 */
export function registerStructuredTaskCommands(task: Command, ctx: CliContext): void {
  const ours = new Set(task.commands);
  registerCreate(task, ctx);
  registerUpdate(task, ctx);
  registerRecoverPending(task, ctx);
  task
    .command("list")
    .description("list the channel's tasks (chat.py's and ours) in chat.py's table")
    .argument("<channel>")
    .addHelpText("after", "\nLeases and tokens: `agent-chat tasks CH`, or --json.\n")
    .action(async (channel: string) => {
      const tasks = await (await ctx.open()).tasks(channel, {
        onWarning: (w) => ctx.err(`agent-chat: ${w}\n`),
      });
      if (ctx.json) return ctx.printJson({ channel, tasks });
      ctx.out(listTable(tasks));
    });
  task
    .command("show")
    .description("one task: every field of chat.py's record, its lease and our token")
    .argument("<channel>")
    .argument("<task>")
    .action(async (channel: string, id: string) => {
      const tasks = await (await ctx.open()).tasks(channel);
      const info = tasks.find((t) => t.id === id.trim());
      if (!info) throw new AgentChatError("TASK_NOT_FOUND", `no task ${id} in ${channel}`);
      if (ctx.json) return ctx.printJson(info);
      ctx.out(showText(info, tasks));
    });
  registerLeaseVerbs(task, ctx);
  for (const command of task.commands) {
    if (ours.has(command)) continue;
    speaksReference07(command, ctx);
    command.hook("preAction", (_task, action) => taskChannel(action.args[0]));
  }
  answerUnknownTaskCommands(task, ctx);
}

/**
 * chat.py refuses a channel name off the rules as a task error (`TASK_INVALID_CHANNEL`, exit 2),
 * before it reads anything; so do its commands here, where ours call it a usage error (64).
 */
function taskChannel(channel: string | undefined): void {
  try {
    validateName("channel", channel);
  } catch (err) {
    if (!(err instanceof AgentChatError)) throw err;
    throw referenceError(err.code, "TASK_INVALID_CHANNEL", err.message);
  }
}

/**
 * `task <unknown>`: chat.py answers `TASK_INVALID_COMMAND` with exit 2, where commander would
 * give its usage error (64). `task` alone still prints the help, as a usage error.
 */
function answerUnknownTaskCommands(task: Command, ctx: CliContext): void {
  task
    .allowExcessArguments()
    .allowUnknownOption()
    .action((_opts: unknown, command: Command) => {
      if (command.args.length === 0) command.help({ error: true });
      ctx.speaksReference07 = true;
      throw referenceError(
        "INVALID_ARGUMENT",
        "TASK_INVALID_COMMAND",
        `unknown task command '${command.args[0]}' (agent-chat task --help lists them)`,
      );
    });
}

/** A repeatable option whose values may also be comma lists (chat.py's `--depends-on a,b`). */
const many = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean),
];

function registerCreate(task: Command, ctx: CliContext): void {
  task
    .command("create")
    .description("create chat.py 0.7's tasks/<id>.json (status open), which both CLIs lease")
    .argument("<channel>")
    .argument("<task>", "its id: letters, digits, '.', '_' and '-'")
    // Checked in the action, not by commander: chat.py refuses a missing title as a task error
    // (TASK_INVALID_ARGUMENT, exit 2), not as a usage error.
    .option("--title <text>", "what is to be done (required)")
    .option("--as <name>", "who creates it (default: $AGENT_CHAT_NAME)")
    .option("--from <name>", "chat.py's name for --as")
    .option("--created-by <name>", "chat.py's other name for --as")
    .option("--owner <name>", "who it is assigned to (only they may claim it)")
    .option("--depends-on <ids>", "tasks to be done first (repeat, or a comma list)", many, [])
    .option(
      "--files-hint <paths>",
      "workspace paths it touches (repeat, or a comma list)",
      many,
      [],
    )
    .option("--acceptance <text>", "an acceptance criterion (repeat, or a comma list)", many, [])
    .option("--branch <name>", "its git branch")
    .addHelpText(
      "after",
      "\nExample:\n  agent-chat task create review T1 --title 'Review the schema' --as alice --depends-on T0",
    )
    .action(async (channel: string, id: string, opts: CreateFlags) => {
      if (opts.title === undefined) {
        throw referenceError(
          "INVALID_ARGUMENT",
          "TASK_INVALID_ARGUMENT",
          "the following arguments are required: --title",
        );
      }
      const input: NewStructuredTask = {
        id: id.trim(),
        title: opts.title,
        from: ctx.agent(opts.as ?? opts.from ?? opts.createdBy),
        dependsOn: opts.dependsOn,
        filesHint: opts.filesHint,
        acceptance: opts.acceptance,
      };
      if (opts.owner !== undefined) input.owner = opts.owner;
      if (opts.branch !== undefined) input.branch = opts.branch;
      report(ctx, "created", await (await ctx.open()).createStructuredTask(channel, input));
    });
}

interface UpdateFlags {
  as?: string;
  from?: string;
  title?: string;
  owner?: string;
  clearOwner?: boolean;
  dependsOn?: string[];
  filesHint?: string[];
  acceptance?: string[];
  branch?: string;
  clearBranch?: boolean;
  status?: string;
}

/** chat.py's `task update`: each option given replaces that field; `--clear-*` empties one. */
function registerUpdate(task: Command, ctx: CliContext): void {
  task
    .command("update")
    .description(
      "change a chat.py 0.7 task's fields (a leased one: its holder, lease fields excepted)",
    )
    .argument("<channel>")
    .argument("<task>")
    .option("--as <name>", "who updates it (default: $AGENT_CHAT_NAME)")
    .option("--from <name>", "chat.py's name for --as")
    .option("--title <text>", "its new title")
    .option("--owner <name>", "who it is assigned to (not while it is leased)")
    .option("--clear-owner", "assign it to nobody")
    .option(
      "--depends-on <ids>",
      "its dependencies, replacing them (repeat, or a comma list; '' for none)",
      many,
    )
    .option(
      "--files-hint <paths>",
      "its workspace paths, replacing them (repeat, or a comma list)",
      many,
    )
    .option(
      "--acceptance <text>",
      "its acceptance criteria, replacing them (repeat, or a comma list)",
      many,
    )
    .option("--branch <name>", "its git branch")
    .option("--clear-branch", "remove its branch")
    .option(
      "--status <status>",
      "open, in_progress, blocked, done or cancelled (not while it is leased)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat task update review T1 --as alice --title 'Review the schema again'\n  agent-chat task update review T2 --as alice --depends-on T1,T3\n  agent-chat task update review T3 --as alice --status cancelled",
    )
    .action(async (channel: string, id: string, opts: UpdateFlags) => {
      const fields: StructuredTaskUpdate = {
        title: opts.title,
        owner: opts.clearOwner ? null : opts.owner,
        dependsOn: opts.dependsOn,
        filesHint: opts.filesHint,
        acceptance: opts.acceptance,
        branch: opts.clearBranch ? null : opts.branch,
        status: opts.status,
      };
      for (const key of Object.keys(fields) as (keyof StructuredTaskUpdate)[]) {
        if (fields[key] === undefined) delete fields[key];
      }
      const agent = ctx.agent(opts.as ?? opts.from);
      const change = { op: "update" as const, agent, fields };
      report(ctx, "updated", await (await ctx.open()).changeStructuredTask(channel, id, change));
    });
}

/** chat.py's `task recover-pending`: mends a channel whose lease change died half-way. */
function registerRecoverPending(task: Command, ctx: CliContext): void {
  recoverPendingCommand(task, ctx, "task")
    .description("undo (or finish) a lease change that died half-way, which blocks every other")
    .addHelpText(
      "after",
      "\nA change refused with LEASE_TRANSACTION_PENDING names this command.\nExample:\n  agent-chat task recover-pending review --as alice",
    );
}

interface CreateFlags {
  title?: string;
  as?: string;
  from?: string;
  createdBy?: string;
  owner?: string;
  dependsOn: string[];
  filesHint: string[];
  acceptance: string[];
  branch?: string;
}

interface VerbFlags {
  as?: string;
  from?: string;
  token?: string;
  ttl?: string;
  leaseSeconds?: string;
  lease?: string;
  reason?: string;
}

type Run = (channel: string, id: string, as: string, o: VerbFlags) => Promise<TaskInfo>;

/** claim, renew, done, block, release and recover: each acts as `--as` (chat.py: `--from`). */
function registerLeaseVerbs(task: Command, ctx: CliContext): void {
  const verb = (name: string, description: string, done: string, run: Run) =>
    task
      .command(name)
      .description(description)
      .argument("<channel>")
      .argument("<task>")
      .option("--as <name>", "who acts (default: $AGENT_CHAT_NAME)")
      .option("--from <name>", "chat.py's name for --as")
      .action(async (channel: string, id: string, opts: VerbFlags) => {
        report(ctx, done, await run(channel, id, ctx.agent(opts.as ?? opts.from), opts));
      });
  const store = () => ctx.open();
  withTtl(
    verb(
      "claim",
      "take a ready task for a lease (exit 2, as chat.py, when another holds it)",
      "claimed",
      async (c, id, as, o) => (await store()).claim(c, id, as, ttl(o)),
    ),
  );
  withTtl(
    verb("renew", "extend your lease from now", "renewed", async (c, id, as, o) =>
      (await store()).renew(c, id, as, { ...ttl(o), ...token(o) }),
    ),
  ).option(...TOKEN);
  verb("done", "finish your task (its lease ends, status done)", "done", async (c, id, as, o) =>
    (await store()).done(c, id, as, token(o)),
  ).option(...TOKEN);
  verb("release", "give your task back (status open)", "released", async (c, id, as, o) =>
    (await store()).release(c, id, as, token(o)),
  ).option(...TOKEN);
  verb("block", "mark a task nobody leases blocked", "blocked", async (c, id, as) =>
    (await store()).changeStructuredTask(c, id, { op: "block", agent: as }),
  );
  withTtl(
    verb(
      "recover",
      "take over a lease that ended (past the 5 s skew grace), saying why",
      "recovered",
      async (c, id, as, o) =>
        (await store()).changeStructuredTask(c, id, {
          op: "recover",
          agent: as,
          reason: o.reason ?? "",
          ...ttl(o),
        }),
    ),
  ).requiredOption("--reason <text>", "why the lease is taken over (kept in the claim record)");
}

/** `--ttl`, and chat.py's names for it. */
function withTtl(command: Command): Command {
  return command
    .option(
      "--ttl <duration>",
      "the lease: seconds (300, 0.5) or 90s, 30m, 2h (default: the channel's task_ttl, else 300 s)",
    )
    .option("--lease-seconds <seconds>", "chat.py's name for --ttl")
    .option("--lease <seconds>", "chat.py's other name for --ttl");
}
const TOKEN = ["--token <n>", "the fencing token you hold; refused (exit 3) when stale"] as const;

/** chat.py's `--lease-seconds` is any positive float (`LEASE_INVALID_DURATION`); ours also a duration. */
function ttl(o: VerbFlags): { ttlMs?: number } {
  const value = o.ttl ?? o.leaseSeconds ?? o.lease;
  if (value === undefined) return {};
  const flag = o.ttl !== undefined ? "--ttl" : "--lease-seconds";
  return {
    ttlMs: parseReferenceLease({ value, flag, code: "LEASE_INVALID_DURATION", noun: "lease" }),
  };
}

function token(o: VerbFlags): { token?: number } {
  return o.token === undefined ? {} : { token: parsePositiveInt(o.token, "--token") };
}

/**
 * chat.py's line exactly (`claimed task T1 [in_progress]`), which scripts written for it compare;
 * the token and time left are in `--json`, `tasks` and the top-level `claim`'s line. A marker of
 * ours, which chat.py has no line for, gets the lease in brackets.
 */
function report(ctx: CliContext, action: string, info: TaskInfo): void {
  if (ctx.json) {
    ctx.printJson(info);
    return;
  }
  const lease = !info.structured && info.state === "claimed" ? ` (${leaseText(info)})` : "";
  ctx.out(`${action} task ${info.id} [${info.structured?.status ?? info.state}]${lease}\n`);
}

function statusText(t: TaskInfo): string {
  const base = stateText(t);
  return t.state === "open" ? base : `${base}, ${leaseText(t)}`;
}

/** A cell of chat.py's table: at most 60 characters. */
const cell = (text: string) => (text.length > 60 ? `${text.slice(0, 57)}...` : text);

/**
 * chat.py's `task list`: ID, STATUS, OWNER, DEPENDS_ON and TITLE in padded columns. A marker of
 * ours is a row too: its state as the status, its holder as the owner.
 */
function listTable(tasks: TaskInfo[]): string {
  const header = ["ID", "STATUS", "OWNER", "DEPENDS_ON", "TITLE"];
  if (tasks.length === 0) return `${header.join("  ")}\n(no tasks)\n`;
  const rows = tasks.map((t) => [
    t.id,
    t.structured?.status ?? t.state,
    cell((t.structured ? t.structured.owner : t.holder) ?? "-"),
    cell(t.structured?.dependsOn.join(", ") || "-"),
    cell(t.title),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] as string).length)),
  );
  const line = (r: string[]) =>
    r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i] as number) : c)).join("  ");
  return `${[header, ...rows].map(line).join("\n")}\n`;
}

/** chat.py's summary of a task's `depends_on`: `ready`, or `blocked (T1=open, T2=blocked)`. */
function dependencyText(dependsOn: string[], tasks: TaskInfo[]): string {
  const status = new Map(tasks.map((t) => [t.id, t.structured?.status]));
  const waiting = dependsOn
    .map((d) => [d, status.get(d) ?? "missing"])
    .filter(([, s]) => s !== "done");
  if (waiting.length === 0) return "ready";
  return `blocked (${waiting.map(([d, s]) => `${d}=${s}`).join(", ")})`;
}

/** chat.py's `task show` lines, then ours. */
function showText(t: TaskInfo, tasks: TaskInfo[]): string {
  const s = t.structured;
  const list = (v: string[], sep = ", ") => (v.length > 0 ? v.join(sep) : "-");
  const lines = s
    ? [
        `id: ${t.id}`,
        `channel: ${t.channel}`,
        `title: ${t.title}`,
        `status: ${s.status}`,
        `owner: ${s.owner ?? "-"}`,
        `created_by: ${s.createdBy}`,
        `depends_on: ${list(s.dependsOn)}`,
        `dependencies: ${dependencyText(s.dependsOn, tasks)}`,
        `files_hint: ${list(s.filesHint)}`,
        `acceptance: ${list(s.acceptance, "; ")}`,
        `lease_expires_at: ${s.leaseExpiresAt ?? "-"}`,
        `branch: ${s.branch ?? "-"}`,
        `updated_at: ${s.updatedAt}`,
      ]
    : [`id: ${t.id}`, `channel: ${t.channel}`, `title: ${t.title}`, `file: ${t.file}`];
  lines.push(`state: ${statusText(t)}`);
  return `${lines.join("\n")}\n`;
}
