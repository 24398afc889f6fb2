import { promises as fsp } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { parse as parseToml } from "smol-toml";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { validateName } from "../core/names.js";
import { ensureRealDir, entryKind } from "../fsutil/root-files.js";
import { isNatsUrl, parseRoot, printableRoot } from "../store/roots.js";
import { HOOK_EVENTS, type HookEvent, type HookFormat, hostEventName } from "./hook.js";
import { DEFAULT_WAKE_TIMEOUT_S, WAKE_EVENT } from "./wake.js";

export type SetupTool = "claude-code" | "codex" | "gemini";
export const SETUP_TOOLS: readonly SetupTool[] = ["claude-code", "codex", "gemini"];

export interface SetupOptions {
  tool: SetupTool;
  agent: string;
  /** Absolute root of the channels. */
  root: string;
  /** The executable that runs agent-chat (default `agent-chat`, found on PATH). */
  command: string;
  /** Where project-level files go (Claude Code, Gemini CLI). */
  projectDir: string;
  /** Codex's home (`$CODEX_HOME`, default `~/.codex`). */
  codexHome: string;
  /** Gemini CLI's user folder (`$GEMINI_CLI_HOME/.gemini`, default `~/.gemini`). */
  geminiDir: string;
  /** Gemini CLI's trusted folders (`$GEMINI_CLI_TRUSTED_FOLDERS_PATH`, default in geminiDir). */
  geminiTrustedFolders: string;
  /** Gemini CLI: also mark projectDir as trusted (the user asked, with `--trust`). */
  trust?: boolean;
  /**
   * Claude Code: the async rewake Stop hook, `hook wait`: true adds it (`--wake`), false takes it
   * out (`--no-wake`), unset keeps it if an earlier setup wrote it.
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

export interface SetupPlan {
  tool: SetupTool;
  /** The project folder (untrusted: nothing below it is followed through a link). */
  projectDir: string;
  files: SetupFile[];
  /** The tool's own one-command way to add the server, when it has one. */
  oneCommand: string;
  notes: string[];
  /** What the user must still do after `--write`, in order. */
  todo: string[];
}

/**
 * What each tool's plan says; {@link planSetup} adds where the project is, and keeps the
 * project files in `personal` (relative to projectDir) out of git.
 */
type ToolPlan = Omit<SetupPlan, "projectDir"> & { personal?: readonly string[] };

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

/**
 * The project files, relative to the project folder, that setup writes for one user (they name
 * the agent and the root): setup lists them in the repository's exclude file, and doctor warns
 * when git tracks one all the same.
 */
export const PERSONAL_FILES: Readonly<Record<SetupTool, readonly string[]>> = {
  "claude-code": [join(".claude", "settings.local.json")],
  codex: [],
  gemini: [],
};

/** Claude Code's permission rule for one tool of our server (`mcp__<server>__<tool>`). */
export const claudeToolRule = (tool: string) => `mcp__${SERVER_NAME}__${tool}`;
/** Long waits need more than the 60 s that Codex and others allow a tool call by default. */
const TOOL_TIMEOUT_SECONDS = 960;
/** Hooks count unread messages in milliseconds; the host's timeout only guards a stuck disk. */
const HOOK_TIMEOUT_SECONDS = 10;

export function planSetup(options: SetupOptions): SetupPlan {
  validateName("agent", options.agent);
  const plan = (() => {
    switch (options.tool) {
      case "claude-code":
        return claudePlan(options);
      case "codex":
        return codexPlan(options);
      case "gemini":
        return geminiPlan(options);
    }
  })();
  const { personal = [], ...rest } = plan;
  if (personal.length > 0 && options.git) {
    rest.files.push(gitExcludeFile(options.git, personal));
    rest.notes.push(
      `Kept out of git: ${personal.join(", ")} (it names you), listed in ${options.git.excludeFile}, the repository's own ignore file that is never committed.`,
    );
  }
  const wake = options.wake && options.tool !== "claude-code" ? runWakeSteps(options) : undefined;
  const notes = [...rest.notes, ...(wake ? [wake.note] : []), ...credentialNote(options.root)];
  const todo = wake ? [...rest.todo, wake.todo] : rest.todo;
  return { ...rest, notes, todo, projectDir: resolve(options.projectDir) };
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
 * Codex and Gemini CLI start a turn only on input (docs/delivery.md, "Waking an idle session,
 * per harness"): their wake path is `agent-chat run`, which types a fixed notice into the idle
 * session. The prompt and stop hooks setup writes anyway mark where each turn starts and ends,
 * so run knows the session is idle the moment its turn ends.
 */
function runWakeSteps(o: SetupOptions): { note: string; todo: string } {
  const [name, command, stop] =
    o.tool === "codex" ? ["Codex", "codex", "Stop"] : ["Gemini CLI", "gemini", "AfterAgent"];
  return {
    note: `Wake: ${name} starts a turn only on input, so started under \`agent-chat run\` it is woken by one fixed notice line (never a message's text) typed when a message for ${o.agent} arrives while it is idle; its ${stop} hook marks the end of each turn.`,
    todo: `${name}: start it as \`${runWakeCommand(o, command)}\` (add ${command}'s own arguments after it) so that a message wakes it when idle.`,
  };
}

/**
 * A NATS root whose URL carries credentials is written into the tool's files as it is (the
 * server needs them); a project file is often committed, so the user is told, with the way out.
 */
function credentialNote(root: string): string[] {
  if (!isNatsUrl(root)) return [];
  const parsed = parseRoot(root);
  if (parsed.kind !== "nats" || (parsed.nats.user ?? parsed.nats.token) === undefined) return [];
  return [
    `the root's URL carries credentials, now in the files above as AGENT_CHAT_ROOT; to keep them out, set up with ${printableRoot(root)} and give AGENT_CHAT_NATS_USER/AGENT_CHAT_NATS_PASS (or AGENT_CHAT_NATS_CREDS) in the tool's environment (docs/nats.md)`,
  ];
}

/** The exclude list with a line for each per-user file that no line names yet. */
function gitExcludeFile(git: GitExclude, personal: readonly string[]): SetupFile {
  // A leading slash anchors the pattern at the top of the work tree (gitignore(5)).
  const patterns = personal.map((path) => `/${git.prefix}${path.split(sep).join("/")}`);
  const block = `# agent-chat setup: per-user files (identity, root)\n${patterns.join("\n")}\n`;
  return {
    path: git.excludeFile,
    format: "text",
    snippet: block,
    merge: (existing) => {
      const lines = (existing ?? "").split("\n").map((line) => line.trim());
      const missing = patterns.filter((pattern) => !lines.includes(pattern));
      if (missing.length === 0) return existing as string;
      const before =
        existing === undefined || existing === "" ? "" : existing.replace(/\n*$/, "\n");
      const header = lines.includes(block.split("\n")[0]!) ? "" : `${block.split("\n")[0]}\n`;
      return `${before}${header}${missing.join("\n")}\n`;
    },
  };
}

/**
 * A project folder is often a clone of someone else's repository, which can hold links such as
 * `.mcp.json -> ~/.docker/config.json` or `.claude -> /elsewhere`: setup never reads or writes
 * through a link below it (files in the user's own folders may be links, dotfile managers make
 * them). Creates the missing folders on the way, one at a time, never through a link.
 */
function assertNoLinksBelow(projectDir: string, path: string, create: boolean): void {
  const rel = relative(projectDir, path);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return; // not in the project
  const parts = rel.split(sep);
  let at = projectDir;
  for (const [i, part] of parts.entries()) {
    at = join(at, part);
    if (!checkEntry(at, i === parts.length - 1, create)) return;
  }
}

/** One step of the walk: refuses a link or a wrong kind; false when the rest does not exist. */
function checkEntry(at: string, last: boolean, create: boolean): boolean {
  const kind = entryKind(at);
  if (kind === undefined) {
    if (last) return true;
    if (create) ensureRealDir(at);
    return create;
  }
  if (kind !== (last ? "file" : "dir")) throw unsafeEntry(at, kind, last);
  return true;
}

function unsafeEntry(at: string, kind: string, last: boolean): AgentChatError {
  const what = kind === "link" ? "a symbolic link" : `not a plain ${last ? "file" : "folder"}`;
  return new AgentChatError(
    "UNSAFE_FILE",
    `${at} is ${what}; ` +
      "setup never reads or writes through it in a project folder (a clone can plant one). " +
      "Remove it, or move it aside, and run setup again",
  );
}

/**
 * Writes every file of the plan, merging into what is there; returns the paths written. Every
 * merge is made (and checked) before anything is written, so a file that does not parse leaves
 * all of them as they were.
 */
export async function applySetup(plan: SetupPlan): Promise<string[]> {
  const changes: { path: string; text: string }[] = [];
  for (const file of plan.files) {
    assertNoLinksBelow(plan.projectDir, file.path, false);
    let existing: string | undefined;
    try {
      existing = await fsp.readFile(file.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        throw wrapIoError(err, `cannot read ${file.path}`);
      }
    }
    if (existing === undefined && file.onlyIfExists) continue;
    const text = file.merge(existing);
    if (text !== existing) changes.push({ path: file.path, text });
  }
  for (const { path, text } of changes) {
    assertNoLinksBelow(plan.projectDir, path, true);
    try {
      await fsp.mkdir(dirname(path), { recursive: true });
      const tmp = join(dirname(path), `.${SERVER_NAME}-${process.pid}-${Date.now()}.tmp`);
      await fsp.writeFile(tmp, text, { mode: 0o644 });
      await fsp.rename(tmp, path);
    } catch (err) {
      throw wrapIoError(err, `cannot write ${path}`);
    }
  }
  return changes.map((c) => c.path);
}

/** The server line with the identity, for files that belong to one user. */
function serverArgs(o: SetupOptions): string[] {
  return ["mcp", "--as", o.agent];
}

/** The shell command a host runs for one hook event. */
function hookCommand(o: SetupOptions, event: HookEvent, format: HookFormat): string {
  return [o.command, "--root", o.root, "hook", event, "--as", o.agent, "--format", format]
    .map(shellQuote)
    .join(" ");
}

/** Quotes for POSIX sh, the shell every one of these tools runs hook commands with. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

type Json = Record<string, unknown>;

function parseJsonFile(path: string, existing: string | undefined): Json {
  if (existing === undefined || existing.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(existing);
  } catch (err) {
    throw new AgentChatError(
      "CORRUPT_FILE",
      `${path} is not valid JSON (${(err as Error).message}); fix it or move it away, then run setup again`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("CORRUPT_FILE", `${path} does not hold a JSON object`);
  }
  return value as Json;
}

function objectAt(parent: Json, key: string, path: string): Json {
  const value = parent[key];
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("CORRUPT_FILE", `${path}: "${key}" is not a JSON object`);
  }
  return value as Json;
}

/** Our hook groups, keyed by the host's event names. */
type HookGroups = Record<string, Json[]>;

/** Recognises hook entries we wrote before (whatever the identity), so setup never duplicates. */
function isOurHook(entry: unknown): boolean {
  const command = (entry as { command?: unknown })?.command;
  return typeof command === "string" && / hook (session-start|prompt|stop) /.test(`${command} `)
    ? command.includes("agent-chat") || command.includes(" --format ")
    : false;
}

/** Recognises the wake hook (`hook wait`) a `setup claude-code --wake` wrote. */
function isOurWakeHook(entry: unknown): boolean {
  const command = (entry as { command?: unknown })?.command;
  return typeof command === "string" && ` ${command} `.includes(` hook ${WAKE_EVENT} `)
    ? command.includes("agent-chat") || command.includes(" --as ")
    : false;
}

function hasWakeHook(hooks: Json): boolean {
  const stop = hooks.Stop;
  return (
    Array.isArray(stop) &&
    stop.some((group) => Array.isArray(group?.hooks) && group.hooks.some(isOurWakeHook))
  );
}

/**
 * Each event's hook groups without ours (and without our wake hook if `wake`); events left
 * with nothing are dropped.
 */
function withoutOurHooks(current: Json, wake: boolean): Json {
  const ours = (h: unknown) => isOurHook(h) || (wake && isOurWakeHook(h));
  const next: Json = {};
  for (const [event, value] of Object.entries(current)) {
    if (!Array.isArray(value)) {
      next[event] = value;
      continue;
    }
    const kept = (value as Json[])
      .map((group) => {
        const list = Array.isArray(group?.hooks) ? (group.hooks as unknown[]) : undefined;
        if (!list) return group;
        return { ...group, hooks: list.filter((h) => !ours(h)) };
      })
      .filter((group) => !Array.isArray(group?.hooks) || (group.hooks as unknown[]).length > 0);
    if (kept.length > 0 || value.length === 0) next[event] = kept;
  }
  return next;
}

/** What one settings file gets from us; every other key of the file stays as it was. */
interface SettingsEdit {
  server?: { key: string; entry: Json };
  hooks?: HookGroups;
  /** Claude Code's `env`: set in the process of the tool, its servers and its hooks. */
  env?: Record<string, string>;
  /** Claude Code's per-user approval of a project `.mcp.json` server. */
  enableMcpjsonServer?: boolean;
  /** Claude Code's `permissions.allow` rules to add (the user's own rules stay). */
  allow?: string[];
  /** Our wake hook, and whether to write it (unset: if the file has one already). */
  wake?: { hook: Json; on: boolean | undefined };
}

function mergeSettings(path: string, existing: string | undefined, edit: SettingsEdit): string {
  const doc = parseJsonFile(path, existing);
  if (edit.server) {
    const servers = objectAt(doc, edit.server.key, path);
    doc[edit.server.key] = { ...servers, [SERVER_NAME]: edit.server.entry };
  }
  if (edit.env) doc.env = { ...objectAt(doc, "env", path), ...edit.env };
  if (edit.enableMcpjsonServer) {
    const list = Array.isArray(doc.enabledMcpjsonServers) ? doc.enabledMcpjsonServers : [];
    if (!list.includes(SERVER_NAME)) doc.enabledMcpjsonServers = [...list, SERVER_NAME];
  }
  if (edit.allow) {
    const permissions = objectAt(doc, "permissions", path);
    const list = Array.isArray(permissions.allow) ? (permissions.allow as unknown[]) : [];
    const missing = edit.allow.filter((rule) => !list.includes(rule));
    if (missing.length > 0) doc.permissions = { ...permissions, allow: [...list, ...missing] };
  }
  if (edit.hooks) doc.hooks = mergeHooks(objectAt(doc, "hooks", path), edit.hooks, edit.wake);
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** The file's hooks with ours replaced by `hooks` (ours go after everyone else's). */
function mergeHooks(current: Json, hooks: HookGroups, wake: SettingsEdit["wake"]): Json {
  const next = withoutOurHooks(current, wake !== undefined);
  const ours = { ...hooks };
  if (wake && (wake.on ?? hasWakeHook(current))) {
    ours.Stop = [...(ours.Stop ?? []), { hooks: [wake.hook] }];
  }
  for (const [event, groups] of Object.entries(ours)) {
    const kept = Array.isArray(next[event]) ? (next[event] as Json[]) : [];
    next[event] = [...kept, ...groups];
  }
  return next;
}

/** Whether a server entry names one person (an earlier setup wrote `mcp --as NAME`). */
function namesSomeone(entry: unknown): boolean {
  const e = entry as { args?: unknown; env?: unknown };
  const args = Array.isArray(e?.args) ? e.args : [];
  const env = typeof e?.env === "object" && e.env !== null ? (e.env as Json) : {};
  return args.includes("--as") || "AGENT_CHAT_NAME" in env;
}

/**
 * Takes out of a shared (committed) settings file what an earlier setup put there for one
 * person: our hooks (they carry `--as` and an absolute root) and a server entry that names
 * someone. Nothing else changes; a file that needs nothing is left byte for byte.
 */
function sharedFileCleanup(path: string, serverKey: string | undefined): SetupFile {
  return {
    path,
    format: "json",
    snippet: "",
    onlyIfExists: true,
    merge: (existing) => {
      const doc = parseJsonFile(path, existing);
      const dropped = serverKey !== undefined && dropNamingServer(doc, serverKey);
      const unhooked = dropOurHooks(doc);
      return dropped || unhooked ? `${JSON.stringify(doc, null, 2)}\n` : (existing as string);
    },
  };
}

/** Takes out our server entry when it names someone; true when it did. */
function dropNamingServer(doc: Json, serverKey: string): boolean {
  const servers = doc[serverKey];
  if (typeof servers !== "object" || servers === null) return false;
  const entry = (servers as Json)[SERVER_NAME];
  if (entry === undefined || !namesSomeone(entry)) return false;
  const { [SERVER_NAME]: _ours, ...others } = servers as Json;
  doc[serverKey] = others;
  return true;
}

/** Takes out our hooks; true when there were any. */
function dropOurHooks(doc: Json): boolean {
  if (typeof doc.hooks !== "object" || doc.hooks === null || Array.isArray(doc.hooks)) return false;
  const next = withoutOurHooks(doc.hooks as Json, true);
  if (JSON.stringify(next) === JSON.stringify(doc.hooks)) return false;
  doc.hooks = next;
  return true;
}

function hookGroups(
  o: SetupOptions,
  format: HookFormat,
  entry: (event: HookEvent, command: string) => Json,
): HookGroups {
  const groups: HookGroups = {};
  for (const event of HOOK_EVENTS) {
    groups[hostEventName(format, event)] = [
      { hooks: [entry(event, hookCommand(o, event, format))] },
    ];
  }
  return groups;
}

function jsonFile(path: string, edit: SettingsEdit): SetupFile {
  const snippet: Json = {};
  if (edit.server) snippet[edit.server.key] = { [SERVER_NAME]: edit.server.entry };
  if (edit.env) snippet.env = edit.env;
  if (edit.enableMcpjsonServer) snippet.enabledMcpjsonServers = [SERVER_NAME];
  if (edit.allow) snippet.permissions = { allow: edit.allow };
  if (edit.hooks) {
    snippet.hooks = edit.wake?.on
      ? { ...edit.hooks, Stop: [...(edit.hooks.Stop ?? []), { hooks: [edit.wake.hook] }] }
      : edit.hooks;
  }
  return {
    path,
    format: "json",
    snippet: `${JSON.stringify(snippet, null, 2)}\n`,
    merge: (existing) => mergeSettings(path, existing, edit),
  };
}

/**
 * Claude Code: the team's `.mcp.json` names the server only (`agent-chat mcp`, no identity, no
 * root), so it can be committed; who the agent is and where the channels are go in
 * `.claude/settings.local.json`, the per-checkout file Claude Code keeps out of git: its `env`
 * reaches the server and the hooks, `enabledMcpjsonServers` approves the project server (else
 * `claude mcp list` shows it "Pending approval"), `permissions.allow` lets the agent call
 * {@link UNASKED_TOOLS} unasked (without a rule Claude Code asks each time, and `claude -p`
 * denies the call), and the hooks carry the identity themselves. `alwaysLoad` (a key of Claude
 * Code's server schema) lists our tools to the model up front: by default Claude Code defers
 * MCP tools behind its ToolSearch tool, and a model that never searches never sees them.
 */
function claudePlan(o: SetupOptions): ToolPlan {
  const entry = { type: "stdio", command: o.command, args: ["mcp"], alwaysLoad: true };
  const [local] = PERSONAL_FILES["claude-code"] as [string];
  const hooks = hookGroups(o, "claude", (_event, command) => ({
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  }));
  const wake = { hook: wakeHook(o), on: o.wake };
  return {
    tool: "claude-code",
    files: [
      jsonFile(join(o.projectDir, ".mcp.json"), { server: { key: "mcpServers", entry } }),
      jsonFile(join(o.projectDir, local), {
        env: { AGENT_CHAT_NAME: o.agent, AGENT_CHAT_ROOT: o.root },
        enableMcpjsonServer: true,
        allow: UNASKED_TOOLS.map(claudeToolRule),
        hooks,
        wake,
      }),
      sharedFileCleanup(join(o.projectDir, ".claude", "settings.json"), undefined),
    ],
    personal: [local],
    oneCommand: [
      "claude mcp add",
      SERVER_NAME,
      "--scope local",
      `--env ${shellQuote(`AGENT_CHAT_NAME=${o.agent}`)}`,
      `--env ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      "--",
      ...[o.command, "mcp"].map(shellQuote),
    ].join(" "),
    notes: [
      ".mcp.json names no one and can be committed; the identity, the root, the approval and the hooks are in .claude/settings.local.json (not committed).",
      `Permissions: the agent calls ${UNASKED_TOOLS.join(", ")} without asking; chat_workspace (it can delete files of a channel's workspace) still asks. The one command writes no rule: then Claude Code asks for every call.`,
      "Hooks: SessionStart and UserPromptSubmit add the unread notice to the model's context; Stop tells you (add --block to the stop hook to make the agent read instead).",
      o.wake
        ? `Wake: a second Stop hook (hook wait, "async": true, "asyncRewake": true) parks after each turn and, when a message for ${o.agent} arrives that the session has neither read nor been told of, wakes the idle session with a new turn that carries a short notice; it moves no cursor and gives up after ${DEFAULT_WAKE_TIMEOUT_S / 60} minutes idle.`
        : "--wake also wakes an idle session when a message arrives (an async Stop hook that parks until one does); --no-wake takes it out.",
    ],
    todo: [
      `Claude Code: start \`claude\` in ${o.projectDir} and answer its "trust this folder" question with "Yes, I trust this folder" (it starts on "No, exit"; servers and hooks wait for it); \`/mcp\` then shows agent-chat connected. docs/first-run.md lists every question of a first run.`,
    ],
  };
}

/**
 * Claude Code's async rewake Stop hook (src/cli/hook-wait.ts says what Claude Code does with
 * it). `async` keeps it in the background in every mode; Claude Code's own timeout comes after
 * the hook's, so the hook always ends itself.
 */
function wakeHook(o: SetupOptions): Json {
  const command = [o.command, "--root", o.root, "hook", WAKE_EVENT, "--as", o.agent]
    .map(shellQuote)
    .join(" ");
  return {
    type: "command",
    command,
    async: true,
    asyncRewake: true,
    timeout: DEFAULT_WAKE_TIMEOUT_S + 60,
  };
}

/**
 * Gemini CLI: the server and the hooks go in the user's settings (they name the agent), never in
 * a project `.gemini/settings.json` a team commits. A policy file of the user's (see
 * {@link geminiPolicyFile}) lets {@link UNASKED_TOOLS} run unasked: by default Gemini CLI asks
 * before every MCP tool call, and `gemini -p` does not even offer the model a tool that would
 * ask. (A server's `trust: true` would skip the question for chat_workspace too, whatever a
 * rule says; `tools.allowed` is deprecated, Gemini CLI warns at each start.) Gemini CLI runs neither in a folder it does
 * not trust; `--trust` adds the folder to its trustedFolders.json (`{ "/abs": "TRUST_FOLDER" }`,
 * gemini-cli packages/core/src/utils/trust.ts).
 */
function geminiPlan(o: SetupOptions): ToolPlan {
  const entry = {
    command: o.command,
    args: serverArgs(o),
    env: { AGENT_CHAT_ROOT: o.root },
    timeout: TOOL_TIMEOUT_SECONDS * 1000,
  };
  const hooks = hookGroups(o, "gemini", (event, command) => ({
    name: `agent-chat-${event}`,
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS * 1000,
  }));
  const files = [
    jsonFile(join(o.geminiDir, "settings.json"), {
      server: { key: "mcpServers", entry },
      hooks,
    }),
    geminiPolicyFile(join(o.geminiDir, "policies", `${SERVER_NAME}.toml`)),
    sharedFileCleanup(join(o.projectDir, ".gemini", "settings.json"), "mcpServers"),
  ];
  if (o.trust) files.push(trustedFolderFile(o.geminiTrustedFolders, o.projectDir));
  return {
    tool: "gemini",
    files,
    oneCommand: [
      "gemini mcp add --scope user",
      `-e ${shellQuote(`AGENT_CHAT_NAME=${o.agent}`)}`,
      `-e ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      SERVER_NAME,
      shellQuote(o.command),
      "mcp",
    ].join(" "),
    notes: [
      "The server and hooks are in your user settings (they name you); a project's .gemini/settings.json is left to the team.",
      "The one command adds the server only; hooks (SessionStart, BeforeAgent, AfterAgent) come with --write or by pasting the JSON.",
      `Permissions: the policy file policies/${SERVER_NAME}.toml lets the agent call ${UNASKED_TOOLS.join(", ")} without asking, also under \`gemini -p\` (which offers no tool that would ask); chat_workspace (it can delete files of a channel's workspace) still asks.`,
    ],
    todo: o.trust
      ? [`Gemini CLI: start \`gemini\` in ${o.projectDir}; \`gemini mcp list\` shows agent-chat.`]
      : [
          `Gemini CLI: trust ${o.projectDir} (Gemini runs no server or hook in an untrusted folder): answer its trust question once its banner is drawn (an answer given sooner leaves that session untrusted until gemini is started again), or run setup again with --trust.`,
        ],
  };
}

/**
 * Gemini CLI's policy engine reads every `*.toml` of the user's `policies` folder (user tier,
 * above its defaults): this one, agent-chat's own, allows our tools (`mcpName` + `toolName`,
 * gemini-cli packages/core/src/policy/toml-loader.ts) outside plan mode, where Gemini CLI's own
 * rules keep asking. Setup owns the file and writes it whole.
 */
function geminiPolicyFile(path: string): SetupFile {
  const text = [
    `# Written by \`agent-chat setup gemini\`: the ${SERVER_NAME} MCP server's tools that remove nothing`,
    "# run without asking (chat_workspace, which can delete, still asks). Rewritten by each setup.",
    "[[rule]]",
    `mcpName = ${tomlString(SERVER_NAME)}`,
    `toolName = [${UNASKED_TOOLS.map(tomlString).join(", ")}]`,
    'decision = "allow"',
    "priority = 100",
    'modes = ["default", "autoEdit", "yolo"]',
    "",
  ].join("\n");
  return { path, format: "toml", snippet: text, merge: () => text };
}

function trustedFolderFile(path: string, folder: string): SetupFile {
  return {
    path,
    format: "json",
    snippet: `${JSON.stringify({ [folder]: "TRUST_FOLDER" }, null, 2)}\n`,
    merge: (existing) => {
      const doc = parseJsonFile(path, existing);
      // A folder already trusted, through itself or a parent, keeps what the user chose.
      if (doc[folder] === "TRUST_FOLDER" || doc[folder] === "TRUST_PARENT") {
        return existing as string;
      }
      doc[folder] = "TRUST_FOLDER";
      return `${JSON.stringify(doc, null, 2)}\n`;
    },
  };
}

/**
 * Codex: everything goes in the user's `$CODEX_HOME` (config.toml and hooks.json). No
 * `[features]` line: hooks are the stable feature `hooks`, on by default (codex-rs/features/src/
 * lib.rs, `FeatureSpec { id: CodexHooks, key: "hooks", stage: Stable, default_enabled: true }`),
 * and the old key `codex_hooks` makes Codex warn on every run, so a `codex_hooks = true` an
 * earlier setup wrote is taken out. `default_tools_approval_mode` is a per-server key of
 * codex-rs/config/src/mcp_types.rs (`auto` | `prompt` | `approve`).
 */
function codexPlan(o: SetupOptions): ToolPlan {
  const configPath = join(o.codexHome, "config.toml");
  const lines = [
    `[mcp_servers.${SERVER_NAME}]`,
    `command = ${tomlString(o.command)}`,
    `args = [${serverArgs(o).map(tomlString).join(", ")}]`,
    `env = { AGENT_CHAT_ROOT = ${tomlString(o.root)} }`,
    `tool_timeout_sec = ${TOOL_TIMEOUT_SECONDS}`,
    // Codex 0.171 starts MCP servers beside the first turn and does not wait for them: without
    // `required`, `codex exec` sent its only request before agent-chat had started, and the model
    // never saw the tools. `required` makes Codex wait, and say so when the server cannot start.
    "required = true",
  ];
  if (o.toolsApproval) lines.push(`default_tools_approval_mode = ${tomlString(o.toolsApproval)}`);
  const table = lines.join("\n");
  const hooks = hookGroups(o, "codex", (_event, command) => ({
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  }));
  return {
    tool: "codex",
    files: [
      {
        path: configPath,
        format: "toml",
        snippet: `${table}\n`,
        merge: (existing) => mergeCodexToml(existing ?? "", table, configPath),
      },
      jsonFile(join(o.codexHome, "hooks.json"), { hooks }),
    ],
    oneCommand: [
      "codex mcp add",
      SERVER_NAME,
      `--env ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      "--",
      ...[o.command, ...serverArgs(o)].map(shellQuote),
    ].join(" "),
    notes: [
      "The one command keeps Codex's 60 s tool timeout: chat_wait then waits at most 50 s per call.",
      "--tools-approval approve lets `codex exec` call agent-chat's tools without asking.",
    ],
    todo: [
      'Codex: start `codex`, open /hooks and trust agent-chat\'s hooks (Codex runs no hook until you do; its first prompt also asks "Trust this folder?" and offers "Trust all and continue" for the hooks); `codex mcp get agent-chat` shows the server.',
    ],
  };
}

/** A TOML basic string: JSON's escapes are all valid TOML escapes. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

const TABLE_HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

function checkToml(
  path: string,
  text: string,
  what: string,
  then = "fix it or move it away, then run setup again (nothing was written)",
): void {
  try {
    parseToml(text);
  } catch (err) {
    const first = (err as Error).message.split("\n")[0];
    throw new AgentChatError("CORRUPT_FILE", `${path} ${what} (${first}); ${then}`);
  }
}

/**
 * Replaces our `[mcp_servers.agent-chat]` table (and any sub-table of it) or appends it, and
 * takes out a `codex_hooks = true` of `[features]`; every other line of the file, comments
 * included, stays as it was. The file must parse before, and the result must parse after (an
 * agent-chat entry written some other way, such as a dotted key, would be defined twice).
 */
export function mergeCodexToml(existing: string, table: string, path = "config.toml"): string {
  checkToml(path, existing, "is not valid TOML");
  const lines = existing === "" ? [] : existing.replace(/\n$/, "").split("\n");
  const ours = (key: string) => {
    const k = key.replaceAll('"', "").replaceAll("'", "").replaceAll(" ", "");
    return k === `mcp_servers.${SERVER_NAME}` || k.startsWith(`mcp_servers.${SERVER_NAME}.`);
  };
  const out: string[] = [];
  let skipping = false;
  let inFeatures = false;
  let insertAt = -1;
  for (const line of lines) {
    const header = TABLE_HEADER.exec(line);
    if (header) {
      skipping = ours(header[1]!);
      inFeatures = header[1] === "features";
      if (skipping && insertAt < 0) insertAt = out.length;
    }
    if (inFeatures && /^\s*codex_hooks\s*=\s*true\s*(#.*)?$/.test(line)) continue;
    if (!skipping) out.push(line);
  }
  insertTable(out, insertAt, table.split("\n"));
  const text = `${out.join("\n").replace(/\n+$/, "")}\n`;
  checkToml(path, text, `already defines ${SERVER_NAME} in a form setup cannot replace`);
  return text;
}

/** Our table where the old one stood, else at the end after a blank line. */
function insertTable(lines: string[], at: number, block: string[]): void {
  if (at >= 0) {
    lines.splice(at, 0, ...block, "");
    return;
  }
  if (lines.length > 0 && lines[lines.length - 1]!.trim() !== "") lines.push("");
  lines.push(...block);
}

/** Where each tool keeps the files setup writes (the paths of {@link SetupOptions}). */
export type SetupLocations = Pick<
  SetupOptions,
  "projectDir" | "codexHome" | "geminiDir" | "geminiTrustedFolders"
>;

/** What an earlier `setup TOOL --write` left in a tool's files. */
export interface SetupState {
  tool: SetupTool;
  /** The file that names the MCP server, and whether it holds an agent-chat entry. */
  serverFile: string;
  server: boolean;
  /** The file that holds the hooks, and the host's events that have no agent-chat hook. */
  hooksFile: string;
  missingHooks: string[];
  /** The identity and the root the tool's files give agent-chat, where they name them. */
  agent?: string;
  root?: string;
  /** An approval the tool is still waiting for, as far as its files show. */
  pending?: string;
  /** What else setup writes that the files lack, said as what the user will meet. */
  gaps: string[];
  /** How the tool's idle session is woken by a message, as its files set it up. */
  wake: string;
}

/**
 * Reads a tool's files the way setup writes them (never through a link below the project
 * folder); throws UNSAFE_FILE or INVALID_ARGUMENT when one cannot be read or does not parse.
 */
export async function inspectSetup(tool: SetupTool, at: SetupLocations): Promise<SetupState> {
  const projectDir = resolve(at.projectDir);
  const files = setupFileReader(projectDir);
  const found = await TOOL_FILES[tool](files, at, projectDir);
  const entry =
    typeof found.servers === "object" && found.servers !== null
      ? (found.servers as Json)[SERVER_NAME]
      : undefined;
  const e = (entry ?? {}) as { args?: unknown; env?: unknown };
  const { agent, root } = namedIdentity(e.args, tool === "claude-code" ? found.env : e.env);
  const hooks = objectAt(await files.json(found.hooksFile), "hooks", found.hooksFile);
  const missingHooks = HOOK_EVENTS.map((event) => hostEventName(found.format, event)).filter(
    (name, i) => !hasOurHook(hooks[name], HOOK_EVENTS[i]!),
  );
  return {
    tool,
    serverFile: found.serverFile,
    server: entry != null,
    hooksFile: found.hooksFile,
    missingHooks,
    wake: wakePath(tool, hooks, missingHooks),
    ...(agent !== undefined && { agent }),
    ...(root !== undefined && { root }),
    ...(found.pending !== undefined && { pending: found.pending }),
    gaps: found.gaps,
  };
}

interface SetupFileReader {
  read(path: string): Promise<string | undefined>;
  json(path: string): Promise<Json>;
}

/** Reads below the project folder, never through a link; a missing file reads as undefined. */
function setupFileReader(projectDir: string): SetupFileReader {
  const read = async (path: string): Promise<string | undefined> => {
    assertNoLinksBelow(projectDir, path, false);
    try {
      return await fsp.readFile(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw wrapIoError(err, `cannot read ${path}`);
    }
  };
  return { read, json: async (path) => parseJsonFile(path, await read(path)) };
}

/** What one tool's files say: where its server and hooks are, and what it still lacks. */
interface ToolFiles {
  serverFile: string;
  servers: unknown;
  hooksFile: string;
  format: HookFormat;
  pending?: string;
  /** Claude Code keeps agent-chat's environment in its settings, not in the server entry. */
  env?: unknown;
  gaps: string[];
}

type ToolFilesReader = (
  files: SetupFileReader,
  at: SetupLocations,
  projectDir: string,
) => Promise<ToolFiles>;

const TOOL_FILES: Record<SetupTool, ToolFilesReader> = {
  "claude-code": async (files, _at, projectDir) => {
    const serverFile = join(projectDir, ".mcp.json");
    const servers = (await files.json(serverFile)).mcpServers;
    const hooksFile = join(projectDir, ".claude", "settings.local.json");
    const local = await files.json(hooksFile);
    const approved = local.enabledMcpjsonServers;
    const pending =
      Array.isArray(approved) && approved.includes(SERVER_NAME)
        ? undefined
        : `Claude Code shows the server "Pending approval": ${SERVER_NAME} is not in enabledMcpjsonServers of ${hooksFile}`;
    const gaps = claudeGaps((await files.json(serverFile)).mcpServers, local, hooksFile);
    return {
      serverFile,
      servers,
      hooksFile,
      format: "claude",
      env: local.env,
      gaps,
      ...(pending !== undefined && { pending }),
    };
  },
  codex: async (files, at) => {
    const serverFile = join(at.codexHome, "config.toml");
    const text = (await files.read(serverFile)) ?? "";
    checkToml(serverFile, text, "is not valid TOML", "Codex cannot start with it");
    const servers = (parseToml(text) as Json).mcp_servers;
    return {
      serverFile,
      servers,
      hooksFile: join(at.codexHome, "hooks.json"),
      format: "codex",
      gaps: [],
    };
  },
  gemini: async (files, at, projectDir) => {
    const serverFile = join(at.geminiDir, "settings.json");
    const servers = (await files.json(serverFile)).mcpServers;
    const gaps: string[] = [];
    const policy = join(at.geminiDir, "policies", `${SERVER_NAME}.toml`);
    if ((await files.read(policy)) === undefined) {
      gaps.push(`Gemini CLI asks before each chat tool call (no ${policy})`);
    }
    const trusted = await files.json(at.geminiTrustedFolders);
    const found: ToolFiles = { serverFile, servers, hooksFile: serverFile, format: "gemini", gaps };
    if (!geminiTrusts(trusted, projectDir)) {
      found.pending = `Gemini CLI runs no server or hook in ${projectDir}: it is not in ${at.geminiTrustedFolders}`;
    }
    return found;
  },
};

/** The identity (`--as`, else AGENT_CHAT_NAME) and the root the server entry gives agent-chat. */
function namedIdentity(args: unknown, env: unknown): { agent?: string; root?: string } {
  const envOf = (key: string) => {
    const value = typeof env === "object" && env !== null ? (env as Json)[key] : undefined;
    return typeof value === "string" ? value : undefined;
  };
  const list = Array.isArray(args) ? args : [];
  const as = list.indexOf("--as");
  const named = as >= 0 ? list[as + 1] : undefined;
  const agent = typeof named === "string" ? named : envOf("AGENT_CHAT_NAME");
  const root = envOf("AGENT_CHAT_ROOT");
  return { ...(agent !== undefined && { agent }), ...(root !== undefined && { root }) };
}

/** The wake path the hooks setup wrote give a tool (docs/delivery.md, per harness). */
function wakePath(tool: SetupTool, hooks: Json, missingHooks: string[]): string {
  if (tool === "claude-code") {
    return hasWakeHook(hooks)
      ? "native: the rewake Stop hook (hook wait) wakes the idle session"
      : "none: setup claude-code --wake adds the rewake hook (or start it under agent-chat run)";
  }
  const [command, stop] = tool === "codex" ? ["codex", "Stop"] : ["gemini", "AfterAgent"];
  const idle = missingHooks.includes(stop)
    ? `idle after a quiet screen (no ${stop} hook)`
    : `idle when its ${stop} hook ends a turn`;
  return `the agent-chat run wrapper, when started as \`agent-chat run --as NAME -- ${command}\` (${idle})`;
}

/** What Claude Code's files lack for the agent to see and call the tools unasked. */
function claudeGaps(servers: unknown, local: Json, localFile: string): string[] {
  const gaps: string[] = [];
  const entry = (servers as Json | undefined)?.[SERVER_NAME] as Json | undefined;
  if (entry !== undefined && entry.alwaysLoad !== true) {
    gaps.push("Claude Code defers the chat tools behind ToolSearch (no alwaysLoad in .mcp.json)");
  }
  const allow = (local.permissions as Json | undefined)?.allow;
  const rules = Array.isArray(allow) ? allow : [];
  // A rule for the whole server (`mcp__agent-chat`, or with `__*`) allows every tool of it.
  const wholeServer = [claudeToolRule("").slice(0, -2), claudeToolRule("*")];
  const asks = wholeServer.some((rule) => rules.includes(rule))
    ? []
    : UNASKED_TOOLS.filter((tool) => !rules.includes(claudeToolRule(tool)));
  if (asks.length > 0) {
    gaps.push(
      `Claude Code asks before each call of ${asks.join(", ")} (no permissions.allow rule in ${localFile})`,
    );
  }
  return gaps;
}

/**
 * Whether Gemini CLI trusts `folder`, as its trustedFolders.json says (gemini-cli
 * packages/core/src/utils/trust.ts): `TRUST_FOLDER` trusts a folder and what is below it,
 * `TRUST_PARENT` its parent and below, `DO_NOT_TRUST` exactly that folder.
 */
function geminiTrusts(rules: Json, folder: string): boolean {
  const within = (path: string, base: string) => path === base || path.startsWith(`${base}${sep}`);
  if (rules[folder] === "DO_NOT_TRUST") return false;
  return Object.entries(rules).some(
    ([path, rule]) =>
      (rule === "TRUST_FOLDER" && within(folder, path)) ||
      (rule === "TRUST_PARENT" && within(folder, dirname(path))),
  );
}

/** Whether one host event's hook groups hold our hook for `event`. */
function hasOurHook(groups: unknown, event: HookEvent): boolean {
  if (!Array.isArray(groups)) return false;
  return groups.some(
    (group) =>
      Array.isArray(group?.hooks) &&
      (group.hooks as unknown[]).some(
        (h) => isOurHook(h) && `${(h as { command: string }).command} `.includes(` hook ${event} `),
      ),
  );
}
