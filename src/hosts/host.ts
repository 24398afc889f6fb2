import type { Harness } from "../store/types.js";

/**
 * The contract every agent tool (harness) fulfils, one module each (claude-code.ts, codex.ts,
 * gemini-cli.ts, ...), listed in index.ts. Setup, doctor, the hook and the wake are written once
 * over it; a host says only what is its own: where its configuration lives and what setup merges
 * into it, what its first run asks and how setup answers that without a bypass, its hooks and
 * the form it reads their output in, what doctor reads back, and how an idle session is woken.
 */
export interface Host {
  /** Its name in `setup TOOL`, `doctor --tool` and the docs' tables. */
  tool: string;
  /** What its users call it. */
  title: string;
  hooks: HookDialect;
  /** Its one line of `setup --help`: the files setup writes. */
  filesHelp: string;
  /** Where its user files are, found as the tool itself finds them (its variables, the home). */
  locate(env: Readonly<Record<string, string | undefined>>, home: string): HostHomes;
  /** Project files (relative to the project folder) that name one user: kept out of git. */
  personalFiles: readonly string[];
  /** What setup writes for it, and what is left for the user (its first run's questions). */
  plan(o: SetupOptions): HostPlan;
  /** What an earlier setup left in its files, read the way {@link plan} writes them. */
  inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles>;
  /**
   * How its idle session is woken, given the hooks its files hold (doctor says it). Unset: under
   * `agent-chat run`, as {@link runWake} says ({@link wakePathOf}).
   */
  wakePath?(hooks: Json, missingHooks: readonly string[]): string;
  /**
   * How its idle session is woken when it starts a turn only on input: typed into under
   * `agent-chat run` (setup `--wake` then says how to start it). Unset: setup's own plan says.
   */
  runWake?: RunWake;
  /** Doctor's fix for what the tool still waits for ({@link HostFiles.pending}). */
  answerPending?(setupCommand: string): string;
  /** What its user meets, as the docs' per-harness tables give it. */
  profile: HostProfile;
}

/**
 * What a user of a host meets, for the per-harness tables in docs/first-run.md and
 * docs/delivery.md (scripts/harness-tables.ts writes them, with what setup writes, the wake
 * path doctor reads back and the agent-wake bench's figures).
 */
export interface HostProfile {
  /** Its npm package, pinned in our dev dependencies (the tables name that version). */
  npm: string;
  /**
   * The questions its first interactive run asks after `setup --write`, in order; none is
   * skipped by a flag. test/agents/first-run.test.ts waits for each on the real binary's screen,
   * answers it and notes its name; the names noted must be these.
   */
  asks: readonly string[];
  /** What lets the chat tools run without an approval prompt. */
  unaskedBy: string;
  /** Who runs our hooks and at which of its events, when not the host itself by its own. */
  hooksRunBy?: string;
}

/** The three moments a host runs our hook: a session starts, a prompt is sent, a turn ends. */
export type HookEvent = "session-start" | "prompt" | "stop";
export const HOOK_EVENTS: readonly HookEvent[] = ["session-start", "prompt", "stop"];

/**
 * How a host runs hooks and reads what they print: data only, for the hook runs on every prompt
 * and loads nothing of setup (index.ts lists the dialects apart from the hosts).
 */
export interface HookDialect {
  /** The `hook --format` value that prints in this form. */
  format: string;
  /** The host, as presence names the harness a session runs in. */
  harness: Harness;
  /** The host's name for each of our events. */
  events: Readonly<Record<HookEvent, string>>;
  /**
   * How the notice at session start and prompt reaches the model: plain stdout, or JSON
   * (`hookSpecificOutput.additionalContext`) when the host reads a hook's stdout as JSON, or
   * `flat`: JSON with `additionalContext` at the top (Copilot CLI).
   */
  context: "plain" | "json" | "flat";
  /** The stop hook's decision that makes the agent go on and read (`--block`). */
  keepGoing: "block" | "deny";
}

/** A host that starts a turn only on input, woken under `agent-chat run`. */
export interface RunWake {
  /** The command that starts it. */
  command: string;
  /** Its event that ends a turn, which marks the session idle for run. */
  stop: string;
}

export type HostHomes = Readonly<Record<string, string>>;

/** Where the tools keep the files setup writes. */
export interface SetupLocations {
  /** Where project-level files go (untrusted: nothing below it is followed through a link). */
  projectDir: string;
  /** Every host's user folders, by the keys its {@link Host.locate} gives. */
  homes: HostHomes;
}

export interface SetupOptions extends SetupLocations {
  tool: string;
  agent: string;
  /** Absolute root of the channels. */
  root: string;
  /** The executable that runs agent-chat (default `agent-chat`, found on PATH). */
  command: string;
  /** Also mark projectDir as trusted in the tool's own list (the user asked, with `--trust`). */
  trust?: boolean;
  /**
   * The wake path: true adds it (`--wake`), false takes it out (`--no-wake`), unset keeps what
   * an earlier setup wrote.
   */
  wake?: boolean;
  /** Codex: `default_tools_approval_mode` for the agent-chat server (unset: Codex's default). */
  toolsApproval?: CodexToolsApproval;
  /** The git repository projectDir is in, if it is in one: its files setup keeps out of git. */
  git?: GitExclude;
}

/** Where a repository's own ignore list is, and where the project folder is in its tree. */
export interface GitExclude {
  /** The absolute path of its `info/exclude` (never committed, never shared). */
  excludeFile: string;
  /** projectDir relative to the top of the work tree: "" or "sub/dir/". */
  prefix: string;
}

/** Codex's `AppToolApproval` values (codex-rs/config/src/mcp_types.rs). */
export type CodexToolsApproval = "auto" | "prompt" | "approve";
export const CODEX_TOOLS_APPROVALS: readonly CodexToolsApproval[] = ["auto", "prompt", "approve"];

export interface SetupFile {
  path: string;
  format: "json" | "toml" | "text";
  /** What this file needs from us, as a document of its own. */
  snippet: string;
  /** The file's new text, given its current text (undefined when it does not exist). */
  merge(existing: string | undefined): string;
  /** Only edited when it already exists (a shared file we clean up, never create). */
  onlyIfExists?: boolean;
}

/** What a host's plan says; setup adds where the project is and the notes every host shares. */
export interface HostPlan {
  files: SetupFile[];
  /** The tool's own one-command way to add the server; "" when it has none. */
  oneCommand: string;
  notes: string[];
  /** What the user must still do after `--write`, in order (its first run's questions). */
  todo: string[];
}

export interface SetupPlan extends HostPlan {
  tool: string;
  /** The project folder (untrusted: nothing below it is followed through a link). */
  projectDir: string;
}

export type Json = Record<string, unknown>;

/** Reads a tool's files, never through a link below the project folder. */
export interface SetupFileReader {
  /** The file's text; undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
  /** The file's JSON object; `{}` when it does not exist. */
  json(path: string): Promise<Json>;
}

/** What one tool's files say: where its server and hooks are, and what it still lacks. */
export interface HostFiles {
  /** The file that names the MCP server, and its servers (by name) as the file holds them. */
  serverFile: string;
  servers: unknown;
  /** The file that holds the hooks (under `hooks`, by the host's event names). */
  hooksFile: string;
  /** The hooks, by the host's event names, when the file is not JSON (read by the host). */
  hooks?: Json;
  /** The file that names the identity and the root, when not the server file. */
  identityFile?: string;
  /** The environment the tool gives agent-chat, when not in the server entry. */
  env?: unknown;
  /** An approval the tool is still waiting for, as far as its files show. */
  pending?: string;
  /** What else setup writes that the files lack, said as what the user will meet. */
  gaps: string[];
}

/** The MCP server's name in every tool's configuration. */
export const SERVER_NAME = "agent-chat";

/**
 * The tools an agent may call without asking: every tool but chat_workspace, whose delete and
 * overwrite actions remove content (its annotations say destructive), so a tool may still ask.
 */
export const UNASKED_TOOLS = [
  "chat_channels",
  "chat_create_channel",
  "chat_post",
  "chat_read",
  "chat_wait",
  "chat_tasks",
] as const;

/** Long waits need more than the 60 s that Codex and others allow a tool call by default. */
export const TOOL_TIMEOUT_SECONDS = 960;
/** Hooks count unread messages in milliseconds; the host's timeout only guards a stuck disk. */
export const HOOK_TIMEOUT_SECONDS = 10;

/** A host's folder from {@link SetupLocations.homes}, which the CLI fills from every host. */
export function homeOf(at: SetupLocations, key: string): string {
  const home = at.homes[key];
  if (home === undefined) throw new Error(`no ${key} among the hosts' folders`);
  return home;
}

/** The server line with the identity, for files that belong to one user. */
export function serverArgs(o: SetupOptions): string[] {
  return ["mcp", "--as", o.agent];
}

/** Quotes for POSIX sh, the shell every one of these tools runs hook commands with. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The shell command a host runs for one hook event. */
export function hookCommand(o: SetupOptions, event: HookEvent, format: string): string {
  return [o.command, "--root", o.root, "hook", event, "--as", o.agent, "--format", format]
    .map(shellQuote)
    .join(" ");
}

/** Our hook groups, keyed by the host's event names. */
export type HookGroups = Record<string, Json[]>;

/** One group per event, each with the entry the host's form gives the command. */
export function hookGroups(
  o: SetupOptions,
  dialect: HookDialect,
  entry: (event: HookEvent, command: string) => Json,
): HookGroups {
  const groups: HookGroups = {};
  for (const event of HOOK_EVENTS) {
    groups[dialect.events[event]] = [
      { hooks: [entry(event, hookCommand(o, event, dialect.format))] },
    ];
  }
  return groups;
}

/**
 * `<tool> mcp add --scope user -e … agent-chat <command> mcp`: the one command of Gemini CLI and
 * of Qwen Code, its fork, which read the same flags.
 */
export function userScopeMcpAdd(tool: string, o: SetupOptions): string {
  return [
    `${tool} mcp add --scope user`,
    `-e ${shellQuote(`AGENT_CHAT_NAME=${o.agent}`)}`,
    `-e ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
    SERVER_NAME,
    shellQuote(o.command),
    "mcp",
  ].join(" ");
}

/** The command line that starts `tool` under `agent-chat run` as the agent, for the user to use. */
export function runWakeCommand(
  o: Pick<SetupOptions, "command" | "root" | "agent">,
  tool: string,
): string {
  return [o.command, "--root", o.root, "run", "--as", o.agent, "--", tool]
    .map(shellQuote)
    .join(" ");
}

/**
 * The wake path of a host woken under `agent-chat run` (docs/delivery.md, "Waking an idle
 * session, per harness"), as doctor says it.
 */
export function runWakePath(wake: RunWake, missingHooks: readonly string[]): string {
  const idle = missingHooks.includes(wake.stop)
    ? `idle after a quiet screen (no ${wake.stop} hook)`
    : `idle when its ${wake.stop} hook ends a turn`;
  return `the agent-chat run wrapper, when started as \`agent-chat run --as NAME -- ${wake.command}\` (${idle})`;
}

/** How `host`'s idle session is woken, as doctor says it: its own path, else under `run`. */
export function wakePathOf(host: Host, hooks: Json, missingHooks: readonly string[]): string {
  if (host.wakePath) return host.wakePath(hooks, missingHooks);
  if (host.runWake) return runWakePath(host.runWake, missingHooks);
  throw new Error(`${host.tool} declares no wake path: give it wakePath or runWake`);
}
