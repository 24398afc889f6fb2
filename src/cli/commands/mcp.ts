import { execFileSync } from "node:child_process";
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import type { Command } from "commander";
import { FOOTER_STYLES } from "../../client/unread.js";
import { HOOK_EVENTS, HOOK_FORMATS } from "../../hosts/hook.js";
import {
  CODEX_TOOLS_APPROVALS,
  type CodexToolsApproval,
  type GitExclude,
  type HostHomes,
  type SetupOptions,
  type SetupPlan,
} from "../../hosts/host.js";
import { HOSTS } from "../../hosts/index.js";
import { applySetup, planSetup } from "../../hosts/setup.js";
import { DEFAULT_WAKE_TIMEOUT_S, WAKE_EVENT } from "../../hosts/wake.js";
import { type CliContext, parsePositiveInt, parseSeconds } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { type HookArgs, runHook } from "../hook.js";
import { oneOf } from "../usage.js";
import { hookStateDir } from "../user-dirs.js";
import { VERSION } from "../version.js";

/** The tools' names, as `setup TOOL` and `doctor --tool` take them. */
const SETUP_TOOLS = HOSTS.map((host) => host.tool);

/** `mcp` (the server), `setup` (configuration for agent tools) and `hook` (their hooks). */
export function registerMcpCommands(program: Command, ctx: CliContext): void {
  registerMcp(program, ctx);
  registerSetup(program, ctx);
  registerDoctor(program, ctx);
  registerHook(program, ctx);
}

function registerMcp(program: Command, ctx: CliContext): void {
  program
    .command("mcp")
    .description("run the MCP server over stdio for one agent identity")
    .option(
      "--as <name>",
      "the agent's identity (default: $AGENT_CHAT_NAME; without one, tools say how to set it)",
    )
    .option(
      "--footer <style>",
      `unread footer on every tool result: ${FOOTER_STYLES.join(" | ")}`,
      "agent-chat",
    )
    .option(
      "--channel-push",
      "Claude Code channels (research preview): push each new message for you as notifications/claude/channel",
    )
    .addHelpText(
      "after",
      "\nTools: chat_channels, chat_create_channel, chat_post, chat_read, chat_wait, chat_tasks, chat_workspace.\n" +
        'Every result ends with <agent-chat>{"chat":{"msgs":N,"channels":{...}}}</agent-chat>\n' +
        '(or, with --footer b00t, <🥾>{ "chat": { "msgs": N } }</🥾>).\n\nExamples:\n' +
        "  agent-chat mcp --as bob\n  AGENT_CHAT_NAME=bob agent-chat --root ./chat mcp --footer b00t\n" +
        "  claude mcp add agent-chat -- agent-chat mcp --as bob",
    )
    .action(async (opts: { as?: string; footer: string; channelPush?: boolean }) => {
      // Started anyway without one: every tool call then says how to set it, where exiting
      // would show only "Failed to connect" in the agent tool.
      const agent = opts.as || ctx.env.AGENT_CHAT_NAME || undefined;
      const footer = oneOf(opts.footer, FOOTER_STYLES, "--footer");
      // chat_wait's sleep-poll in ms; tests set it beyond their limit to test the wake-up alone.
      const pollMs = ctx.env.AGENT_CHAT_WAIT_POLL_MS;
      const waitIntervalMs = pollMs
        ? parsePositiveInt(pollMs, "AGENT_CHAT_WAIT_POLL_MS")
        : undefined;
      // Presence says "mcp" (the session's host tool starts the server; its env may say which).
      if (!ctx.env.AGENT_CHAT_HARNESS) ctx.harness = "mcp";
      // Bound to the session's agent: it posts only as that agent, signed when its key is here.
      const store = agent ? await ctx.openFor(agent) : await ctx.open();
      // Loaded only here: the rest of the CLI never pays for the MCP SDK.
      const { runMcpServer } = await import("../../mcp/server.js");
      const { mcpTools } = await import("../plugins/mcp-tools.js");
      const { DEFAULT_MAX_MESSAGE_BYTES } = await import("../../mcp/stdio-transport.js");
      // A body at --max-body, every byte escaped as \u00XX, must still fit in one line.
      const maxBody = ctx.maxBodyBytes;
      await runMcpServer({
        store,
        agent,
        footer,
        version: VERSION,
        input: process.stdin,
        output: process.stdout,
        signal: ctx.abort.signal,
        tools: mcpTools,
        maxMessageBytes:
          maxBody === undefined
            ? DEFAULT_MAX_MESSAGE_BYTES
            : Math.max(DEFAULT_MAX_MESSAGE_BYTES, 6 * maxBody + 65536),
        warn: (message) => ctx.warn(message),
        ...(waitIntervalMs !== undefined ? { waitIntervalMs } : {}),
        channelPush: opts.channelPush === true,
      });
    });
}

function registerSetup(program: Command, ctx: CliContext): void {
  program
    .command("setup")
    .description("print (or --write) the MCP server and hook configuration for an agent tool")
    .argument("<tool>", `${SETUP_TOOLS.join(" | ")} | git-hook`)
    .argument("[channels]", "git-hook: the channels whose path leases guard commits (default: all)")
    .option("--as <name>", "the agent's identity (default: $AGENT_CHAT_NAME)")
    .option("--write", "merge the configuration into the tool's files instead of printing it")
    .option("--dir <path>", "project folder for project-level files (default: current folder)")
    .option(
      "--command <path>",
      "how the tool starts agent-chat (default: agent-chat; this CLI's path when that name on PATH is chat.py's)",
    )
    .option("--trust", "gemini: also add the project folder to Gemini CLI's trusted folders")
    .option(
      "--wake",
      "wake an idle session when a message arrives: claude-code an async Stop hook (hook wait); codex, gemini the `agent-chat run` line to start the tool with",
    )
    .option("--no-wake", "claude-code: take that hook out (by default an earlier one is kept)")
    .option(
      "--tools-approval <mode>",
      `codex: default_tools_approval_mode for agent-chat's tools: ${CODEX_TOOLS_APPROVALS.join(" | ")}`,
    )
    .addHelpText(
      "after",
      `\nFiles: ${HOSTS.map((host) => host.filesHelp).join(";\n       ")}.\n` +
        "Every chat tool but chat_workspace (it can delete) is allowed to run without asking.\n" +
        "--write keeps every other entry of those files and replaces only agent-chat's, then\n" +
        "lists what is left for you to do.\n\nExamples:\n" +
        "  agent-chat setup claude-code --as alice\n  agent-chat setup codex --as bob --write\n" +
        "  agent-chat setup git-hook review   (pre-commit: `agent-chat guard review`)\n" +
        "  agent-chat --root ~/team-chat setup gemini --as carol --write --dir ~/src/app",
    )
    .action(setupAction(ctx));
}

interface SetupFlags {
  as?: string;
  write?: boolean;
  dir?: string;
  command?: string;
  trust?: boolean;
  wake?: boolean;
  toolsApproval?: string;
}

function setupAction(ctx: CliContext) {
  return async (tool: string, channels: string | undefined, opts: SetupFlags) => {
    if (tool === "git-hook") {
      return (await import("../../features/leases/cli-guard.js")).setupGitHook(ctx, channels, opts);
    }
    const plan = planSetup(await setupOptions(ctx, tool, opts));
    if (opts.write) return printWritten(ctx, plan, await applySetup(plan));
    printPlan(ctx, plan);
  };
}

async function setupOptions(
  ctx: CliContext,
  tool: string,
  opts: SetupFlags,
): Promise<SetupOptions> {
  const projectDir = resolve(opts.dir ?? ".");
  const git = gitExcludeOf(projectDir);
  return {
    tool: oneOf(tool, SETUP_TOOLS, "tool"),
    agent: ctx.agent(opts.as),
    root: ctx.rootArg,
    command: opts.command ?? (await ourCommand(ctx)),
    projectDir,
    homes: toolHomes(ctx),
    trust: opts.trust === true,
    ...(git && { git }),
    ...(opts.wake !== undefined && { wake: opts.wake }),
    ...(opts.toolsApproval !== undefined && {
      toolsApproval: oneOf(
        opts.toolsApproval,
        CODEX_TOOLS_APPROVALS,
        "--tools-approval",
      ) as CodexToolsApproval,
    }),
  };
}

/** Where each tool keeps its user configuration, as the tool itself finds it. */
function toolHomes(ctx: CliContext): HostHomes {
  const home = homedir();
  return Object.assign({}, ...HOSTS.map((host) => host.locate(ctx.env, home)));
}

/** `setup --write`: what changed, what did not, and what is left for the user to do. */
function printWritten(ctx: CliContext, plan: SetupPlan, written: string[]): void {
  if (ctx.json) {
    ctx.printJson({ tool: plan.tool, written, notes: plan.notes, todo: plan.todo });
    return;
  }
  for (const path of written) ctx.out(`updated ${path}\n`);
  for (const file of plan.files) {
    if (!written.includes(file.path) && !file.onlyIfExists) {
      ctx.out(`unchanged ${file.path}\n`);
    }
  }
  for (const note of plan.notes) ctx.out(`note: ${note}\n`);
  ctx.out("Left for you to do:\n");
  for (const step of plan.todo) ctx.out(`  - ${step}\n`);
}

/** `setup` without --write: the snippets to paste, or the one command that adds the server. */
function printPlan(ctx: CliContext, plan: SetupPlan): void {
  if (ctx.json) {
    ctx.printJson({
      tool: plan.tool,
      files: plan.files
        .filter((f) => !f.onlyIfExists)
        .map((f) => ({ path: f.path, format: f.format, snippet: f.snippet })),
      oneCommand: plan.oneCommand,
      notes: plan.notes,
      todo: plan.todo,
    });
    return;
  }
  for (const file of plan.files) {
    if (file.snippet !== "") ctx.out(`# ${file.path}\n${file.snippet}\n`);
  }
  if (plan.oneCommand !== "") {
    ctx.out(`# or add the server in one command:\n${plan.oneCommand}\n\n`);
  }
  for (const note of plan.notes) ctx.out(`# ${note}\n`);
  ctx.out("# --write merges this into the files above.\n");
}

function registerDoctor(program: Command, ctx: CliContext): void {
  program
    .command("doctor")
    .description("check this machine end to end: root, identity, each tool's setup, server, hook")
    .option("--as <name>", "the agent's identity (default: $AGENT_CHAT_NAME)")
    .option("--tool <tool>", `check only this tool: ${SETUP_TOOLS.join(" | ")}`)
    .option("--dir <path>", "the project folder setup wrote to (default: current folder)")
    .option("--timeout <seconds>", "how long the server and the hook each get to answer", "15")
    .addHelpText(
      "after",
      "\nEach check prints ok, warn or fail, with what to do on warn and fail. A tool that is not\n" +
        "set up only warns (you may use one tool), unless named with --tool or none is set up.\n" +
        "Exit 0 when nothing failed, 1 otherwise.\n\nExamples:\n" +
        "  agent-chat doctor --as alice\n  agent-chat doctor --as bob --tool codex\n" +
        "  agent-chat --json doctor --as carol --dir ~/src/app",
    )
    .action(async (opts: { as?: string; tool?: string; dir?: string; timeout: string }) => {
      const { runDoctor } = await import("../../hosts/doctor.js");
      const tools =
        opts.tool === undefined ? SETUP_TOOLS : [oneOf(opts.tool, SETUP_TOOLS, "--tool")];
      const report = await runDoctor({
        root: ctx.rootArg,
        rootGiven: program.opts().root !== undefined || Boolean(ctx.env.AGENT_CHAT_ROOT),
        agent: opts.as || ctx.env.AGENT_CHAT_NAME || undefined,
        tools,
        toolsChosen: opts.tool !== undefined,
        projectDir: resolve(opts.dir ?? "."),
        homes: toolHomes(ctx),
        // The CLI that is running: the one the user is checking, whatever PATH holds.
        command: [process.execPath, process.argv[1]!],
        env: ctx.env,
        timeoutMs: parseSeconds(opts.timeout, "--timeout"),
      });
      ctx.exitCode = report.ok ? EXIT.OK : EXIT.ERROR;
      if (ctx.json) return ctx.printJson(report);
      for (const c of report.checks) {
        ctx.out(`${c.status.padEnd(4)}  ${c.check}: ${c.message}${c.fix ? ` (${c.fix})` : ""}\n`);
      }
    });
}

function registerHook(program: Command, ctx: CliContext): void {
  program
    .command("hook")
    .description("print the unread notice an agent tool's hook shows (never moves a cursor)")
    .argument("<event>", [...HOOK_EVENTS, WAKE_EVENT].join(" | "))
    .option("--as <name>", "the agent's identity (default: $AGENT_CHAT_NAME)")
    .option("--format <tool>", `output form: ${HOOK_FORMATS.join(" | ")} (default: from the input)`)
    .option("--block", "at stop, keep the agent going to read its messages (once)")
    .option(
      "--timeout <seconds>",
      `wait: how long to stay parked (default ${DEFAULT_WAKE_TIMEOUT_S})`,
    )
    .addHelpText(
      "after",
      "\nReads the tool's hook JSON on stdin (none or invalid is fine), prints one line when\n" +
        "messages are unread and nothing otherwise, and always exits 0.\n" +
        "`hook wait` (Claude Code's async Stop hook, written by setup claude-code --wake) parks\n" +
        "instead, and exits 2 with a notice on stderr when a message arrives that the session\n" +
        "has neither read nor been told of, which wakes the idle session; 0 on its timeout.\n\nExamples:\n" +
        "  agent-chat hook session-start --as bob\n" +
        '  echo \'{"hook_event_name":"Stop"}\' | agent-chat hook stop --as bob --format claude',
    )
    .action(async (event: string, opts: Omit<HookArgs, "event">) => {
      ctx.exitCode = await runHook(
        { event, ...opts },
        {
          root: ctx.root,
          ...(ctx.rootSpec.kind === "nats" && { nats: ctx.natsOptions() }),
          env: ctx.env,
          stateDir: hookStateDir(ctx.env, homedir()),
          configDir: ctx.configDir,
          out: (text) => ctx.out(text),
          err: (text) => ctx.err(text),
        },
      );
    });
}

/**
 * The git repository `dir` is in: its `info/exclude` (shared by every worktree of it) and where
 * `dir` is in the work tree; undefined outside a repository or without git.
 */
function gitExcludeOf(dir: string): GitExclude | undefined {
  let out: string;
  try {
    out = execFileSync("git", ["rev-parse", "--git-path", "info/exclude", "--show-prefix"], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return undefined;
  }
  const [path, prefix = ""] = out.split("\n");
  if (!path) return undefined;
  return { excludeFile: isAbsolute(path) ? path : resolve(dir, path), prefix };
}

/**
 * What hooks and MCP entries start: `agent-chat`, unless that name on PATH is chat.py 0.7's
 * console script (which would answer in ours' place): then the path of this CLI, said on stderr.
 */
async function ourCommand(ctx: CliContext): Promise<string> {
  const { agentChatsOnPath } = await import("../../hosts/which-cli.js");
  const first = (await agentChatsOnPath(ctx.env.PATH))[0];
  if (first?.kind !== "reference") return "agent-chat";
  const self = resolve(process.argv[1]!);
  ctx.err(
    `agent-chat: the agent-chat on PATH (${first.path}) is chat.py's: the entries start ${self} (--command to choose)\n`,
  );
  return self;
}
