import { AgentChatError } from "./errors.js";
import { parseTaskId, validateName } from "./names.js";

/**
 * Slash commands: one line that a person types in a chat front-end (the viewer, a chat UI) and
 * that maps to a command line. Two verbs:
 *
 * - `/b00t …` follows b00t's `parse_b00t_command` / `BootCommand::to_cli_args` exactly (seed
 *   002): `/b00t` alone is `model list`; `model|models` then `list|ls`,
 *   `install|add|load|download <t>`, `remove|rm|unload <t>` (adds `--yes`), `env|export [t]`,
 *   `serve [t]`, `stop [c]`; any other word after `model` is a model name to download. Like
 *   b00t, words after the ones a sub-command takes are ignored, and words are case-sensitive.
 * - `/chat …` maps to agent-chat's own commands (`/chat claim task-7` → `claim CH task-7`).
 *
 * Parsing never runs anything: executing is the CLI's opt-in `slash --exec`, behind an allowlist.
 */

export type ModelAction = "list" | "download" | "remove" | "env" | "serve" | "stop";

export interface B00tCommand {
  verb: "b00t";
  action: ModelAction;
  target?: string;
  /**
   * A download b00t reads from a bare word (`/b00t model llava`), not from `download`: a typo
   * of a sub-command reads the same way, so it is shown with a note and never run.
   */
  implicit?: true;
}

export type ChatVerb =
  | "read"
  | "wait"
  | "post"
  | "reply"
  | "peek"
  | "claim"
  | "release"
  | "tasks"
  | "task"
  | "roster"
  | "channels"
  | "focus"
  | "approve"
  | "reject"
  | "veto"
  | "pending"
  | "govern"
  | "request";

export interface ChatCommand {
  verb: "chat";
  sub: ChatVerb;
  /** `#channel` given as the first argument; otherwise the caller's channel applies. */
  channel?: string;
  /** Positional arguments the sub-command takes (a task, a seq, a number…). */
  args: string[];
  /** `@name` recipients of `post`. */
  to?: string[];
  /** The free text that ends the line (a body, a title, a note), as typed. */
  text?: string;
}

export type SlashCommand = B00tCommand | ChatCommand;

export type SlashParse =
  | { ok: true; line: string; command: SlashCommand }
  | { ok: false; line: string; verb: string; error: string };

export const SLASH_VERBS = ["b00t", "chat"] as const;

/** Where a parsed command is run: `b00t-cli` for /b00t, `agent-chat` for /chat. */
export function programOf(command: SlashCommand): "b00t-cli" | "agent-chat" {
  return command.verb === "b00t" ? "b00t-cli" : "agent-chat";
}

interface Token {
  text: string;
  /** Index of the token's first character in the line. */
  start: number;
}

function tokenize(line: string): Token[] {
  const out: Token[] = [];
  for (const m of line.matchAll(/\S+/g)) out.push({ text: m[0], start: m.index });
  return out;
}

/** Parses one slash line (only its first line counts). */
export function parseSlash(input: string): SlashParse {
  const line = (input.split(/\r?\n/).find((l) => l.trim() !== "") ?? "").trim();
  const fail = (verb: string, error: string): SlashParse => ({ ok: false, line, verb, error });
  if (!line.startsWith("/")) {
    return fail("", `not a slash command: a slash line starts with '/', e.g. /chat read`);
  }
  const tokens = tokenize(line);
  const verb = tokens[0]!.text.slice(1);
  const rest = tokens.slice(1);
  try {
    if (verb === "b00t") {
      const command = parseB00t(rest.map((t) => t.text));
      if (!command) return fail(verb, b00tError(rest.map((t) => t.text)));
      return { ok: true, line, command };
    }
    if (verb === "chat") return { ok: true, line, command: parseChat(line, rest) };
  } catch (err) {
    return fail(verb, (err as Error).message);
  }
  return fail(
    verb,
    `unknown slash command /${verb}: known are ${SLASH_VERBS.map((v) => `/${v}`).join(", ")}`,
  );
}

/** The parsed slash line that starts a message body, when it names a known verb. */
export function slashOfBody(body: string): SlashParse | undefined {
  const first =
    body
      .split(/\r?\n/)
      .find((l) => l.trim() !== "")
      ?.trim() ?? "";
  const verb = /^\/(\S+)/.exec(first)?.[1];
  if (verb === undefined || !(SLASH_VERBS as readonly string[]).includes(verb)) return undefined;
  return parseSlash(first);
}

// ---- /b00t (b00t's grammar) ----------------------------------------------------------------

function parseB00t(words: string[]): B00tCommand | undefined {
  const sub = words[0] ?? "model";
  if (sub !== "model" && sub !== "models") return undefined;
  const action = words[1] ?? "list";
  const target = words[2];
  switch (action) {
    case "list":
    case "ls":
      return { verb: "b00t", action: "list" };
    case "install":
    case "add":
    case "load":
    case "download":
      return target === undefined ? undefined : { verb: "b00t", action: "download", target };
    case "remove":
    case "rm":
    case "unload":
      return target === undefined ? undefined : { verb: "b00t", action: "remove", target };
    case "env":
    case "export":
    case "serve":
    case "stop": {
      const canonical: ModelAction = action === "export" ? "env" : action;
      return target === undefined
        ? { verb: "b00t", action: canonical }
        : { verb: "b00t", action: canonical, target };
    }
    default:
      // b00t: any other word after `model` is the name of a model to download.
      return { verb: "b00t", action: "download", target: action, implicit: true };
  }
}

const B00T_ACTIONS = ["list", "install", "download", "remove", "env", "export", "serve", "stop"];

/**
 * What to tell the person about a download read from a bare word: that it is one, how to ask
 * for it on purpose, and the sub-command a typo was probably meant to be.
 */
export function implicitDownloadNote(command: SlashCommand): string | undefined {
  if (command.verb !== "b00t" || command.implicit !== true) return undefined;
  const word = command.target!;
  const near = B00T_ACTIONS.find((a) => editDistance(a, word.toLowerCase()) <= 2);
  return (
    `"${word}" is no /b00t model sub-command, so b00t reads it as a model to download` +
    `${near === undefined ? "" : ` (did you mean /b00t model ${near}?)`}; ` +
    `to download it, write /b00t model download ${word}`
  );
}

/** Levenshtein distance, for the short words of a command line. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + cost));
    }
    row = next;
  }
  return row[b.length]!;
}

/** Why b00t's parser would return None, in words. */
function b00tError(words: string[]): string {
  const sub = words[0] ?? "model";
  if (sub !== "model" && sub !== "models") {
    return `unknown /b00t sub-command ${JSON.stringify(sub)}: b00t knows "model" (e.g. /b00t model list)`;
  }
  return `/b00t model ${words[1]} needs a model name (e.g. /b00t model ${words[1]} llava)`;
}

// ---- /chat (agent-chat's verbs) ------------------------------------------------------------

interface ChatSpec {
  sub: ChatVerb;
  aliases: string[];
  /** Its grammar as the help shows it: the positional arguments are read from it. */
  usage: string;
  /** Whether the rest of the line (the usage's last word) is free text, and whether required. */
  text?: "required" | "optional";
  /** Whether `@name` recipients may precede the text. */
  recipients?: boolean;
  help: string;
}

const CHAT_SPECS: ChatSpec[] = [
  { sub: "read", aliases: ["r"], usage: "read [all]", help: "new messages" },
  { sub: "wait", aliases: ["w"], usage: "wait [SECONDS]", help: "wait" },
  {
    sub: "post",
    aliases: ["say", "send", "p"],
    usage: "post [@NAME…] TEXT",
    text: "required",
    recipients: true,
    help: "post a message",
  },
  {
    sub: "reply",
    aliases: ["re"],
    usage: "reply SEQ TEXT",
    text: "required",
    help: "reply to a message",
  },
  { sub: "peek", aliases: [], usage: "peek [N]", help: "last messages" },
  { sub: "claim", aliases: ["take"], usage: "claim TASK", help: "claim" },
  { sub: "release", aliases: ["drop"], usage: "release TASK", help: "release" },
  { sub: "tasks", aliases: ["todo"], usage: "tasks", help: "list tasks" },
  { sub: "task", aliases: ["add-task"], usage: "task TITLE", text: "required", help: "add a task" },
  { sub: "roster", aliases: ["who"], usage: "roster", help: "members" },
  { sub: "channels", aliases: [], usage: "channels", help: "channels" },
  { sub: "focus", aliases: ["cd"], usage: "focus FOLDER", help: "workspace" },
  {
    sub: "approve",
    aliases: ["ok"],
    usage: "approve SEQ [NOTE]",
    text: "optional",
    help: "approve a request",
  },
  {
    sub: "reject",
    aliases: [],
    usage: "reject SEQ [NOTE]",
    text: "optional",
    help: "reject a request",
  },
  {
    sub: "veto",
    aliases: [],
    usage: "veto SEQ [NOTE]",
    text: "optional",
    help: "veto a notify request",
  },
  { sub: "pending", aliases: [], usage: "pending", help: "open requests" },
  { sub: "govern", aliases: [], usage: "govern", help: "show the profile" },
  {
    sub: "request",
    aliases: ["ask"],
    usage: "request ACTION TITLE",
    text: "required",
    help: "ask the maintainer",
  },
];

const BY_NAME = new Map<string, ChatSpec>();
for (const spec of CHAT_SPECS) {
  for (const name of [spec.sub, ...spec.aliases]) BY_NAME.set(name, spec);
}

/** Every /chat sub-command with its aliases and usage, for help texts and docs. */
export function chatVerbs(): ReadonlyArray<{ sub: ChatVerb; aliases: string[]; usage: string }> {
  return CHAT_SPECS.map(({ sub, aliases, usage }) => ({ sub, aliases, usage }));
}

function usageError(spec: ChatSpec, problem: string): AgentChatError {
  return new AgentChatError("INVALID_ARGUMENT", `${problem}: /chat ${spec.usage}`);
}

function parseChat(line: string, tokens: Token[]): ChatCommand {
  const spec = chatSpec(tokens[0]?.text);
  const command: ChatCommand = { verb: "chat", sub: spec.sub, args: [] };
  let i = 1;
  const first = tokens[i]?.text;
  if (first?.startsWith("#") && first.length > 1 && !/^#\d+$/.test(first)) {
    command.channel = validateName("channel", first.slice(1));
    i += 1;
  }
  const [required, optional] = positionalOf(spec);
  for (let n = 0; n < required + optional && i < tokens.length; n += 1) {
    command.args.push(tokens[i]!.text);
    i += 1;
  }
  if (command.args.length < required) throw usageError(spec, `/chat ${spec.sub} needs more`);
  if (spec.recipients) i = takeRecipients(tokens, i, command);
  takeText(spec, line, tokens.slice(i), command);
  checkArgs(spec, command.args);
  return command;
}

/** [required, optional] positional arguments, as its usage shows them (the text and `[@NAME…]` aside). */
function positionalOf(spec: ChatSpec): [number, number] {
  const words = spec.usage.split(" ").slice(1);
  const args = words.filter((w) => !w.startsWith("[@")).slice(0, spec.text ? -1 : undefined);
  const optional = args.filter((w) => w.startsWith("[")).length;
  return [args.length - optional, optional];
}

function chatSpec(name: string | undefined): ChatSpec {
  const known = CHAT_SPECS.map((s) => s.sub).join(", ");
  if (name === undefined) {
    throw new AgentChatError("INVALID_ARGUMENT", `/chat needs a sub-command: ${known}`);
  }
  const spec = BY_NAME.get(name.toLowerCase());
  if (!spec) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `unknown /chat sub-command ${JSON.stringify(name)}: known are ${known}`,
    );
  }
  return spec;
}

/** The `@name`s from token `i` on, into `command.to`; returns the index after them. */
function takeRecipients(tokens: Token[], i: number, command: ChatCommand): number {
  const to: string[] = [];
  while (i < tokens.length && /^@./.test(tokens[i]!.text)) {
    to.push(validateName("agent", tokens[i]!.text.slice(1)));
    i += 1;
  }
  if (to.length > 0) command.to = to;
  return i;
}

/** The rest of the line is the command's text, for a sub-command that takes one. */
function takeText(spec: ChatSpec, line: string, rest: Token[], command: ChatCommand): void {
  if (!spec.text) {
    if (rest.length > 0) {
      throw usageError(spec, `/chat ${spec.sub} takes no ${JSON.stringify(rest[0]!.text)}`);
    }
    return;
  }
  const text = rest.length > 0 ? line.slice(rest[0]!.start).trim() : "";
  if (text === "" && spec.text === "required") {
    throw usageError(spec, `/chat ${spec.sub} needs text`);
  }
  if (text !== "") command.text = text;
}

function checkArgs(spec: ChatSpec, args: string[]): void {
  const arg = args[0];
  if (arg === undefined) return;
  switch (spec.sub) {
    case "read":
      if (arg !== "all")
        throw usageError(spec, `/chat read takes "all", not ${JSON.stringify(arg)}`);
      return;
    case "wait":
      if (!(Number(arg) >= 0)) throw usageError(spec, `${JSON.stringify(arg)} is not seconds`);
      return;
    case "peek":
      if (!/^[1-9]\d*$/.test(arg)) throw usageError(spec, `${JSON.stringify(arg)} is not a count`);
      return;
    case "reply":
    case "approve":
    case "reject":
    case "veto":
      if (!/^#?[1-9]\d*$/.test(arg)) {
        throw usageError(spec, `${JSON.stringify(arg)} is not a message number`);
      }
      args[0] = arg.replace(/^#/, "");
      return;
    case "claim":
    case "release":
      parseTaskId(arg);
      return;
    case "request":
      if (!/^[a-z0-9][a-z0-9._-]*$/i.test(arg)) {
        throw usageError(spec, `${JSON.stringify(arg)} is not an action name`);
      }
      return;
    case "focus":
      // It becomes `ws focus ARG`: an option such as `--root=/elsewhere` must not pass as one.
      if (arg.startsWith("-")) throw usageError(spec, `${JSON.stringify(arg)} is not a folder`);
      return;
    default:
      return;
  }
}

export interface SlashContext {
  /** The channel a /chat command acts on when the line names none. */
  channel?: string;
  /** Who acts (`--as`/`--from`); without it the command falls back to $AGENT_CHAT_NAME. */
  as?: string;
}

/**
 * The argv for the command's program (without the program name). For /b00t this is exactly
 * b00t's `to_cli_args()`; for /chat it is an agent-chat command line.
 */
export function toCliArgs(command: SlashCommand, context: SlashContext = {}): string[] {
  if (command.verb === "b00t") {
    const args = ["model", command.action];
    if (command.target !== undefined) args.push(command.target);
    if (command.action === "remove") args.push("--yes");
    return args;
  }
  return chatArgs(command, context);
}

/** `approve` takes the verdict as a flag (none for approval) and the text as its note. */
function verdictFlags(sub: "approve" | "reject" | "veto", note: string | undefined): string[] {
  return [
    ...(sub === "approve" ? [] : [`--${sub}`]),
    ...(note === undefined ? [] : ["--note", note]),
  ];
}

function chatArgs(command: ChatCommand, context: SlashContext): string[] {
  const channel = command.channel ?? context.channel;
  const needChannel = (): string => {
    if (channel === undefined) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `/chat ${command.sub} needs a channel: write /chat ${command.sub} #CHANNEL … or give one`,
      );
    }
    return channel;
  };
  const as = (flag = "--as"): string[] => (context.as === undefined ? [] : [flag, context.as]);
  const [arg] = command.args;
  const text = command.text;
  switch (command.sub) {
    case "read":
      return ["read", needChannel(), ...as(), ...(arg === "all" ? ["--all"] : [])];
    case "wait":
      return ["wait", needChannel(), ...as(), ...(arg ? ["--timeout", arg] : [])];
    case "post": {
      const to = command.to ? ["--to", command.to.join(",")] : [];
      return ["post", needChannel(), ...as("--from"), ...to, "--body", text!];
    }
    case "reply":
      return ["post", needChannel(), ...as("--from"), "--reply", arg!, "--body", text!];
    case "peek":
      return ["peek", needChannel(), ...(arg ? ["-n", arg] : [])];
    case "claim":
    case "release":
      return [command.sub, needChannel(), arg!, ...as()];
    case "tasks":
    case "roster":
    case "pending":
    case "govern":
      return [command.sub, needChannel()];
    case "task":
      return ["task", "add", needChannel(), "--title", text!, ...as()];
    case "channels":
      return ["channels"];
    case "focus":
      return ["ws", "focus", arg!, ...(channel === undefined ? [] : ["--channel", channel])];
    case "approve":
    case "reject":
    case "veto":
      return ["approve", needChannel(), arg!, ...as(), ...verdictFlags(command.sub, text)];
    case "request":
      return ["request", needChannel(), ...as(), "--action", arg!, "--title", text!];
  }
}

/** The allowlist key of a command: `chat claim`, `b00t model list`. */
export function commandKey(command: SlashCommand): string {
  return command.verb === "b00t" ? `b00t model ${command.action}` : `chat ${command.sub}`;
}

/**
 * Whether an allowlist admits a command. An entry admits every command whose key starts with
 * its words: `chat` admits all /chat sub-commands, `chat read` only that one, `b00t model list`
 * only listing; `*` admits everything.
 */
export function isAllowed(command: SlashCommand, allowlist: readonly string[]): boolean {
  const key = commandKey(command).split(" ");
  return allowlist.some((entry) => {
    const words = entry.trim().toLowerCase().split(/\s+/).filter(Boolean);
    if (words.length === 1 && words[0] === "*") return true;
    return words.length > 0 && words.every((w, i) => key[i] === w);
  });
}

/** Reads the `slash.exec` allowlist out of a parsed config document. */
export function slashAllowlist(config: unknown, where: string): string[] {
  if (typeof config !== "object" || config === null || Array.isArray(config)) {
    throw new AgentChatError("CORRUPT_FILE", `${where}: the config must be a JSON object`);
  }
  const slash = (config as Record<string, unknown>).slash;
  if (slash === undefined) return [];
  const exec =
    typeof slash === "object" && slash !== null ? (slash as Record<string, unknown>).exec : slash;
  if (exec === undefined) return [];
  if (!Array.isArray(exec) || exec.some((e) => typeof e !== "string")) {
    throw new AgentChatError(
      "CORRUPT_FILE",
      `${where}: "slash.exec" must be a list of commands such as ["chat read", "chat claim"]`,
    );
  }
  return exec as string[];
}

/** The JSON form of a parse, as `read --json` and `slash --json` show it. */
export function slashJson(parse: SlashParse, context: SlashContext = {}): Record<string, unknown> {
  if (!parse.ok) return { line: parse.line, verb: parse.verb, error: parse.error };
  const out: Record<string, unknown> = {
    line: parse.line,
    verb: parse.command.verb,
    command: parse.command,
    key: commandKey(parse.command),
    program: programOf(parse.command),
  };
  const note = implicitDownloadNote(parse.command);
  if (note !== undefined) out.note = note;
  try {
    out.argv = toCliArgs(parse.command, context);
  } catch (err) {
    out.argv = null;
    out.error = (err as Error).message;
  }
  return out;
}
