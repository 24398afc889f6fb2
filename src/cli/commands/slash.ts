import { spawn } from "node:child_process";
import { promises as fsp } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import type { Command } from "commander";
import { AgentChatError } from "../../core/errors.js";
import {
  chatVerbs,
  commandKey,
  implicitDownloadNote,
  isAllowed,
  parseSlash,
  programOf,
  type SlashCommand,
  type SlashContext,
  slashAllowlist,
  slashJson,
  toCliArgs,
} from "../../core/slash.js";
import { type CliContext, UsageError } from "../context.js";

export function registerSlashCommands(program: Command, ctx: CliContext): void {
  const verbs = chatVerbs()
    .map(
      (v) =>
        `  /chat ${v.usage}${v.aliases.length > 0 ? `   (also: ${v.aliases.join(", ")})` : ""}`,
    )
    .join("\n");
  program
    .command("slash")
    .description("parse a slash command line (/b00t …, /chat …) and print its command line")
    .argument("<line>", "the slash line, quoted, e.g. '/chat claim task-7'")
    .option("--channel <name>", "the channel a /chat line acts on when it names none (#name)")
    .option("--as <name>", "who acts, added as --as/--from to /chat commands")
    .option(
      "--exec",
      "run it, only if its command is in the slash.exec allowlist of the config file",
    )
    .addHelpText(
      "after",
      "\n/b00t follows b00t: /b00t (= model list), /b00t model list|ls, install|add|load|download M,\n" +
        "remove|rm|unload M (adds --yes), env|export [M], serve [M], stop [C], /b00t model M (download;\n" +
        "shown with a note and never run with --exec: a typo reads the same; write download M).\n" +
        `\n/chat sub-commands (a first argument #CHANNEL names the channel):\n${verbs}\n` +
        "\n--exec reads the allowlist from $AGENT_CHAT_CONFIG, else ~/.config/agent-chat/config.json\n" +
        "($XDG_CONFIG_HOME/agent-chat/config.json), never from the root (whoever writes messages can\n" +
        "write the root):\n" +
        '  {"slash": {"exec": ["chat read", "chat claim", "b00t model list"]}}\n' +
        'An entry admits every command that starts with its words ("chat" admits all /chat).\n' +
        "Nothing is ever run from a message: read --json only describes a message's slash line.\n" +
        "\nExamples:\n  agent-chat slash '/b00t model rm llava'\n" +
        "  agent-chat --json slash '/chat claim task-7' --channel review --as bob\n" +
        "  agent-chat slash '/chat read' --channel review --as bob --exec",
    )
    .action(async (line: string, opts: { channel?: string; as?: string; exec?: boolean }) => {
      const parse = parseSlash(line);
      if (!parse.ok) throw new AgentChatError("INVALID_ARGUMENT", parse.error);
      const context: SlashContext = {};
      if (opts.channel !== undefined) context.channel = opts.channel;
      if (opts.as !== undefined) context.as = opts.as;
      const argv = toCliArgs(parse.command, context);
      const program = programOf(parse.command);
      const note = implicitDownloadNote(parse.command);
      if (opts.exec) return execSlash(ctx, parse.command, program, argv);
      if (ctx.json) return ctx.printJson(slashJson(parse, context));
      if (note !== undefined) ctx.err(`agent-chat: note: ${note}\n`);
      ctx.out(
        `command: ${commandKey(parse.command)}\nprogram: ${program}\n` +
          `argv: ${argv.map(quote).join(" ")}\n`,
      );
    });
}

/** `--exec`: runs the command line, if the allowlist admits it and it is not a guess. */
async function execSlash(
  ctx: CliContext,
  command: SlashCommand,
  program: string,
  argv: string[],
): Promise<void> {
  const note = implicitDownloadNote(command);
  if (note !== undefined) throw new UsageError(`not run: ${note}`);
  await assertAllowed(ctx, command);
  if (!ctx.json) ctx.err(`agent-chat: running: ${program} ${argv.map(quote).join(" ")}\n`);
  ctx.exitCode = await run(ctx, program, argv);
}

/**
 * The config file: `$AGENT_CHAT_CONFIG`, else the user's own, `$XDG_CONFIG_HOME/agent-chat/
 * config.json` (`~/.config/...`). Never a file in the root: the allowlist decides which lines
 * from messages may run, and the root is written by the same people who write the messages.
 */
function configPath(ctx: CliContext): string {
  const fromEnv = ctx.env.AGENT_CHAT_CONFIG;
  if (fromEnv && fromEnv.trim() !== "") return fromEnv;
  // A relative XDG_CONFIG_HOME is to be ignored (XDG Base Directory spec): it would resolve in
  // the working folder, which may be the root.
  const xdg = ctx.env.XDG_CONFIG_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : join(ctx.env.HOME || homedir(), ".config");
  return join(base, "agent-chat", "config.json");
}

async function assertAllowed(ctx: CliContext, command: SlashCommand): Promise<void> {
  const path = configPath(ctx);
  const text = await readConfig(path);
  let allowlist: string[] = [];
  if (text !== undefined) {
    let config: unknown;
    try {
      config = JSON.parse(text);
    } catch (err) {
      throw new AgentChatError("CORRUPT_FILE", `${path} is not valid JSON`, { cause: err });
    }
    allowlist = slashAllowlist(config, path);
  }
  if (isAllowed(command, allowlist)) return;
  const key = commandKey(command);
  throw new AgentChatError(
    "NOT_ALLOWED",
    `${key} may not be run: it is not in the slash.exec allowlist of ${path} ` +
      `(add "${key}" there to allow it)`,
  );
}

/** The largest config file read: an allowlist is a few lines. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Reads the config (undefined when there is none), never a FIFO (which would block for good)
 * and never more than the cap.
 */
async function readConfig(path: string): Promise<string | undefined> {
  const st = await fsp.stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw new AgentChatError("IO_ERROR", `cannot read ${path}`, { cause: err });
  });
  if (st === undefined) return undefined;
  if (!st.isFile()) {
    throw new AgentChatError("UNSAFE_FILE", `${path} is not a regular file`);
  }
  if (st.size > MAX_CONFIG_BYTES) {
    throw new AgentChatError("TOO_LARGE", `${path} is larger than ${MAX_CONFIG_BYTES} bytes`);
  }
  return fsp.readFile(path, "utf8");
}

/** Runs the program with the terminal's stdio and resolves with its exit code. */
function run(ctx: CliContext, program: string, argv: string[]): Promise<number> {
  const [file, args] =
    program === "agent-chat"
      ? [
          process.execPath,
          [process.argv[1]!, "--root", ctx.rootArg, ...(ctx.json ? ["--json"] : []), ...argv],
        ]
      : [program, argv];
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: "inherit", env: ctx.env });
    const forward = () => child.kill("SIGTERM");
    ctx.abort.signal.addEventListener("abort", forward, { once: true });
    child.on("error", (err: NodeJS.ErrnoException) => {
      ctx.abort.signal.removeEventListener("abort", forward);
      reject(
        err.code === "ENOENT"
          ? new AgentChatError("BACKEND_UNAVAILABLE", `${program} is not on PATH`, { cause: err })
          : new AgentChatError("IO_ERROR", `cannot run ${program}: ${err.message}`, { cause: err }),
      );
    });
    child.on("close", (code, signal) => {
      ctx.abort.signal.removeEventListener("abort", forward);
      resolve(code ?? (signal ? 128 + (signalNumber(signal) ?? 1) : 1));
    });
  });
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  return ({ SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[signal];
}

/** Shell-style quoting for display, so a printed argv can be pasted back. */
function quote(arg: string): string {
  return /^[A-Za-z0-9_./:=@,+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
