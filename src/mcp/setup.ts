import { promises as fsp } from "node:fs";
import { dirname, join } from "node:path";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { validateName } from "../core/names.js";
import { HOOK_EVENTS, type HookEvent, type HookFormat, hostEventName } from "./hook.js";

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
}

export interface SetupFile {
  path: string;
  format: "json" | "toml";
  /** What this file needs from us, as a document of its own. */
  snippet: string;
  /** The file's new text, given its current text (undefined when it does not exist). */
  merge(existing: string | undefined): string;
}

export interface SetupPlan {
  tool: SetupTool;
  files: SetupFile[];
  /** The tool's own one-command way to add the server, when it has one. */
  oneCommand: string;
  notes: string[];
}

/** The MCP server's name in every tool's configuration. */
export const SERVER_NAME = "agent-chat";
/** Long waits need more than the 60 s that Codex and others allow a tool call by default. */
const TOOL_TIMEOUT_SECONDS = 960;
/** Hooks count unread messages in milliseconds; the host's timeout only guards a stuck disk. */
const HOOK_TIMEOUT_SECONDS = 10;

export function planSetup(options: SetupOptions): SetupPlan {
  validateName("agent", options.agent);
  switch (options.tool) {
    case "claude-code":
      return claudePlan(options);
    case "codex":
      return codexPlan(options);
    case "gemini":
      return geminiPlan(options);
  }
}

/** Writes every file of the plan, merging into what is there; returns the paths written. */
export async function applySetup(plan: SetupPlan): Promise<string[]> {
  const written: string[] = [];
  for (const file of plan.files) {
    let existing: string | undefined;
    try {
      existing = await fsp.readFile(file.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        throw wrapIoError(err, `cannot read ${file.path}`);
      }
    }
    const text = file.merge(existing);
    if (text === existing) continue;
    try {
      await fsp.mkdir(dirname(file.path), { recursive: true });
      const tmp = join(dirname(file.path), `.${SERVER_NAME}-${process.pid}-${Date.now()}.tmp`);
      await fsp.writeFile(tmp, text, { mode: 0o644 });
      await fsp.rename(tmp, file.path);
    } catch (err) {
      throw wrapIoError(err, `cannot write ${file.path}`);
    }
    written.push(file.path);
  }
  return written;
}

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
      "INVALID_ARGUMENT",
      `${path} is not valid JSON (${(err as Error).message}); fix it or move it away, then run setup again`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("INVALID_ARGUMENT", `${path} does not hold a JSON object`);
  }
  return value as Json;
}

function objectAt(parent: Json, key: string, path: string): Json {
  const value = parent[key];
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("INVALID_ARGUMENT", `${path}: "${key}" is not a JSON object`);
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

/**
 * Merges into a settings file: replaces our server entry and our hook entries, keeps everything
 * else (other servers, other hooks of the same events, unrelated settings) as it was.
 */
function mergeSettings(
  path: string,
  existing: string | undefined,
  server: { key: string; entry: Json } | undefined,
  hooks: HookGroups | undefined,
): string {
  const doc = parseJsonFile(path, existing);
  if (server) {
    const servers = objectAt(doc, server.key, path);
    doc[server.key] = { ...servers, [SERVER_NAME]: server.entry };
  }
  if (hooks) {
    const current = objectAt(doc, "hooks", path);
    const next: Json = { ...current };
    for (const [event, groups] of Object.entries(hooks)) {
      const before = Array.isArray(current[event]) ? (current[event] as Json[]) : [];
      const kept = before
        .map((group) => {
          const list = Array.isArray(group?.hooks) ? (group.hooks as unknown[]) : undefined;
          if (!list) return group;
          return { ...group, hooks: list.filter((h) => !isOurHook(h)) };
        })
        .filter((group) => !Array.isArray(group?.hooks) || (group.hooks as unknown[]).length > 0);
      next[event] = [...kept, ...groups];
    }
    doc.hooks = next;
  }
  return `${JSON.stringify(doc, null, 2)}\n`;
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

function jsonFile(
  path: string,
  server: { key: string; entry: Json } | undefined,
  hooks: HookGroups | undefined,
): SetupFile {
  const snippet: Json = {};
  if (server) snippet[server.key] = { [SERVER_NAME]: server.entry };
  if (hooks) snippet.hooks = hooks;
  return {
    path,
    format: "json",
    snippet: `${JSON.stringify(snippet, null, 2)}\n`,
    merge: (existing) => mergeSettings(path, existing, server, hooks),
  };
}

function claudePlan(o: SetupOptions): SetupPlan {
  const entry = {
    type: "stdio",
    command: o.command,
    args: serverArgs(o),
    env: { AGENT_CHAT_ROOT: o.root },
  };
  const hooks = hookGroups(o, "claude", (_event, command) => ({
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  }));
  return {
    tool: "claude-code",
    files: [
      jsonFile(join(o.projectDir, ".mcp.json"), { key: "mcpServers", entry }, undefined),
      jsonFile(join(o.projectDir, ".claude", "settings.json"), undefined, hooks),
    ],
    oneCommand: [
      "claude mcp add",
      SERVER_NAME,
      "--scope project",
      `--env ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      "--",
      ...[o.command, ...serverArgs(o)].map(shellQuote),
    ].join(" "),
    notes: [
      "Claude Code asks once to approve project servers from .mcp.json.",
      "Hooks: SessionStart and UserPromptSubmit add the unread notice to the model's context; Stop tells you (add --block to the stop hook to make the agent read instead).",
    ],
  };
}

function geminiPlan(o: SetupOptions): SetupPlan {
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
  return {
    tool: "gemini",
    files: [
      jsonFile(join(o.projectDir, ".gemini", "settings.json"), { key: "mcpServers", entry }, hooks),
    ],
    oneCommand: [
      "gemini mcp add --scope project",
      `-e ${shellQuote(`AGENT_CHAT_NAME=${o.agent}`)}`,
      `-e ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      SERVER_NAME,
      shellQuote(o.command),
      "mcp",
    ].join(" "),
    notes: [
      "The one command adds the server only; hooks (SessionStart, BeforeAgent, AfterAgent) come with --write or by pasting the JSON.",
    ],
  };
}

function codexPlan(o: SetupOptions): SetupPlan {
  const configPath = join(o.codexHome, "config.toml");
  const table = [
    `[mcp_servers.${SERVER_NAME}]`,
    `command = ${tomlString(o.command)}`,
    `args = [${serverArgs(o).map(tomlString).join(", ")}]`,
    `env = { AGENT_CHAT_ROOT = ${tomlString(o.root)} }`,
    `tool_timeout_sec = ${TOOL_TIMEOUT_SECONDS}`,
  ].join("\n");
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
        snippet: `${table}\n\n[features]\ncodex_hooks = true\n`,
        merge: (existing) => mergeCodexToml(existing ?? "", table),
      },
      jsonFile(join(o.codexHome, "hooks.json"), undefined, hooks),
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
      "[features] codex_hooks = true turns hooks on in Codex versions where they are still off by default.",
    ],
  };
}

/** A TOML basic string: JSON's escapes are all valid TOML escapes. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

const TABLE_HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

/**
 * Replaces our `[mcp_servers.agent-chat]` table (and any sub-table of it) or appends it, and
 * makes sure `[features]` turns hooks on; every other line of the file stays as it was.
 */
export function mergeCodexToml(existing: string, table: string): string {
  const lines = existing === "" ? [] : existing.replace(/\n$/, "").split("\n");
  const ours = (key: string) => {
    const k = key.replaceAll('"', "").replaceAll("'", "").replaceAll(" ", "");
    return k === `mcp_servers.${SERVER_NAME}` || k.startsWith(`mcp_servers.${SERVER_NAME}.`);
  };
  const out: string[] = [];
  let skipping = false;
  let insertAt = -1;
  for (const line of lines) {
    const header = TABLE_HEADER.exec(line);
    if (header) {
      skipping = ours(header[1]!);
      if (skipping && insertAt < 0) insertAt = out.length;
    }
    if (!skipping) out.push(line);
  }
  const block = table.split("\n");
  if (insertAt >= 0) {
    out.splice(insertAt, 0, ...block, "");
  } else {
    if (out.length > 0 && out[out.length - 1]!.trim() !== "") out.push("");
    out.push(...block);
  }
  ensureHooksFeature(out);
  return `${out.join("\n").replace(/\n+$/, "")}\n`;
}

function ensureHooksFeature(lines: string[]): void {
  const start = lines.findIndex((line) => TABLE_HEADER.exec(line)?.[1] === "features");
  if (start < 0) {
    if (lines.length > 0 && lines[lines.length - 1]!.trim() !== "") lines.push("");
    lines.push("[features]", "codex_hooks = true");
    return;
  }
  for (let i = start + 1; i < lines.length && !TABLE_HEADER.test(lines[i]!); i++) {
    if (/^\s*(codex_hooks|hooks)\s*=/.test(lines[i]!)) return;
  }
  lines.splice(start + 1, 0, "codex_hooks = true");
}
