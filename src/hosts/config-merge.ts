import { parse as parseToml } from "smol-toml";
import { AgentChatError } from "../core/errors.js";
import { type HookEvent, type HookGroups, type Json, SERVER_NAME, type SetupFile } from "./host.js";
import { WAKE_EVENT } from "./wake.js";

/**
 * Merging into the tools' own configuration files, written once for every host: a JSON settings
 * file (servers, environment, approvals, permissions, hooks) and a TOML table. Every other entry
 * of a file stays as it was; ours are recognised and replaced, never duplicated.
 */

export function parseJsonFile(path: string, existing: string | undefined): Json {
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

export function objectAt(parent: Json, key: string, path: string): Json {
  const value = parent[key];
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("CORRUPT_FILE", `${path}: "${key}" is not a JSON object`);
  }
  return value as Json;
}

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

/** Whether the hooks hold our wake hook (`hook wait`) among their Stop hooks. */
export function hasWakeHook(hooks: Json): boolean {
  const stop = hooks.Stop;
  return (
    Array.isArray(stop) &&
    stop.some((group) => Array.isArray(group?.hooks) && group.hooks.some(isOurWakeHook))
  );
}

/** Whether one host event's hook groups hold our hook for `event`. */
export function hasOurHook(groups: unknown, event: HookEvent): boolean {
  if (!Array.isArray(groups)) return false;
  return groups.some(
    (group) =>
      Array.isArray(group?.hooks) &&
      (group.hooks as unknown[]).some(
        (h) => isOurHook(h) && `${(h as { command: string }).command} `.includes(` hook ${event} `),
      ),
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
  wake?: WakeEdit;
}

/**
 * The wake hook goes among the Stop hooks (it parks after each turn), and in the groups of
 * `also` (Claude Code: at session start, so that a session that had no turn yet is woken too).
 */
interface WakeEdit {
  hook: Json;
  on: boolean | undefined;
  also?: { event: string; matcher: string }[];
}

/** The hook groups the wake hook adds to `groups`. */
function withWake(groups: HookGroups, wake: WakeEdit): HookGroups {
  const out: HookGroups = { ...groups, Stop: [...(groups.Stop ?? []), { hooks: [wake.hook] }] };
  for (const { event, matcher } of wake.also ?? []) {
    out[event] = [...(out[event] ?? []), { matcher, hooks: [wake.hook] }];
  }
  return out;
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
  const ours = wake && (wake.on ?? hasWakeHook(current)) ? withWake(hooks, wake) : hooks;
  for (const [event, groups] of Object.entries(ours)) {
    const kept = Array.isArray(next[event]) ? (next[event] as Json[]) : [];
    next[event] = [...kept, ...groups];
  }
  return next;
}

/** A JSON settings file that gets `edit`, merged into what is there. */
export function jsonFile(path: string, edit: SettingsEdit): SetupFile {
  const snippet: Json = {};
  if (edit.server) snippet[edit.server.key] = { [SERVER_NAME]: edit.server.entry };
  if (edit.env) snippet.env = edit.env;
  if (edit.enableMcpjsonServer) snippet.enabledMcpjsonServers = [SERVER_NAME];
  if (edit.allow) snippet.permissions = { allow: edit.allow };
  if (edit.hooks) {
    snippet.hooks = edit.wake?.on ? withWake(edit.hooks, edit.wake) : edit.hooks;
  }
  return {
    path,
    format: "json",
    snippet: `${JSON.stringify(snippet, null, 2)}\n`,
    merge: (existing) => mergeSettings(path, existing, edit),
  };
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
export function sharedFileCleanup(path: string, serverKey: string | undefined): SetupFile {
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

/** A TOML basic string: JSON's escapes are all valid TOML escapes. */
export function tomlString(value: string): string {
  return JSON.stringify(value);
}

/** Parses `text` as TOML; CORRUPT_FILE with `path`, `what` and `then` when it does not parse. */
export function checkToml(
  path: string,
  text: string,
  what: string,
  then = "fix it or move it away, then run setup again (nothing was written)",
): Json {
  try {
    return parseToml(text) as Json;
  } catch (err) {
    const first = (err as Error).message.split("\n")[0];
    throw new AgentChatError("CORRUPT_FILE", `${path} ${what} (${first}); ${then}`);
  }
}

const TABLE_HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

/**
 * Replaces the table `key` (and any sub-table of it) with `table`, or appends it, and drops the
 * lines `drop` names (given the table they are in); every other line of the file, comments
 * included, stays as it was. The file must parse before, and the result must parse after (an
 * entry of ours written some other way, such as a dotted key, would be defined twice).
 */
export function mergeTomlTable(
  existing: string,
  key: string,
  table: string,
  path: string,
  drop: (section: string | undefined, line: string) => boolean = () => false,
): string {
  checkToml(path, existing, "is not valid TOML");
  const lines = existing === "" ? [] : existing.replace(/\n$/, "").split("\n");
  const ours = (header: string) => {
    const k = header.replaceAll('"', "").replaceAll("'", "").replaceAll(" ", "");
    return k === key || k.startsWith(`${key}.`);
  };
  const out: string[] = [];
  let skipping = false;
  let section: string | undefined;
  let insertAt = -1;
  for (const line of lines) {
    const header = TABLE_HEADER.exec(line);
    if (header) {
      skipping = ours(header[1]!);
      section = header[1];
      if (skipping && insertAt < 0) insertAt = out.length;
    }
    if (drop(section, line)) continue;
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
