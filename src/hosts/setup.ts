import { promises as fsp } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { validateName } from "../core/names.js";
import { ensureRealDir, entryKind } from "../fsutil/root-files.js";
import { isNatsUrl, parseRoot, printableRoot } from "../store/roots.js";
import { hasOurHook, objectAt, parseJsonFile } from "./config-merge.js";
import {
  type GitExclude,
  HOOK_EVENTS,
  type Host,
  type Json,
  type RunWake,
  runWakeCommand,
  SERVER_NAME,
  type SetupFile,
  type SetupFileReader,
  type SetupLocations,
  type SetupOptions,
  type SetupPlan,
  wakePathOf,
} from "./host.js";
import { HOSTS } from "./index.js";

/** The host of `tool`; INVALID_ARGUMENT for a name no host has. */
export function hostNamed(tool: string): Host {
  const host = HOSTS.find((h) => h.tool === tool);
  if (!host) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `no agent tool ${tool}: ${HOSTS.map((h) => h.tool).join(", ")}`,
    );
  }
  return host;
}

/**
 * What setup writes for the tool: the host's plan, the repository's exclude list for the
 * project files that name the user, and the notes every host shares (the wake under
 * `agent-chat run`, a root whose URL carries credentials).
 */
export function planSetup(options: SetupOptions): SetupPlan {
  validateName("agent", options.agent);
  const host = hostNamed(options.tool);
  const { files, notes, todo, oneCommand } = host.plan(options);
  const personal = host.personalFiles;
  if (personal.length > 0 && options.git) {
    files.push(gitExcludeFile(options.git, personal));
    notes.push(
      `Kept out of git: ${personal.join(", ")} (it names you), listed in ${options.git.excludeFile}, the repository's own ignore file that is never committed.`,
    );
  }
  const wake =
    options.wake && host.runWake ? runWakeSteps(options, host.title, host.runWake) : undefined;
  return {
    tool: host.tool,
    files,
    oneCommand,
    notes: [...notes, ...(wake ? [wake.note] : []), ...credentialNote(options.root)],
    todo: wake ? [...todo, wake.todo] : todo,
    projectDir: resolve(options.projectDir),
  };
}

/**
 * A host that starts a turn only on input (docs/delivery.md, "Waking an idle session, per
 * harness") is woken by `agent-chat run`, which types a fixed notice into the idle session. The
 * prompt and stop hooks setup writes anyway mark where each turn starts and ends, so run knows
 * the session is idle the moment its turn ends.
 */
function runWakeSteps(
  o: SetupOptions,
  name: string,
  wake: RunWake,
): { note: string; todo: string } {
  const { command, stop } = wake;
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

/** What an earlier `setup TOOL --write` left in a tool's files. */
export interface SetupState {
  tool: string;
  /** The file that names the MCP server, and whether it holds an agent-chat entry. */
  serverFile: string;
  server: boolean;
  /** The file that holds the hooks, and the host's events that have no agent-chat hook. */
  hooksFile: string;
  missingHooks: string[];
  /** The identity and the root the tool's files give agent-chat, where they name them. */
  agent?: string;
  root?: string;
  /** The file that names them. */
  identityFile: string;
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
export async function inspectSetup(tool: string, at: SetupLocations): Promise<SetupState> {
  const host = hostNamed(tool);
  const projectDir = resolve(at.projectDir);
  const files = setupFileReader(projectDir);
  const found = await host.inspect(files, { ...at, projectDir });
  const entry =
    typeof found.servers === "object" && found.servers !== null
      ? (found.servers as Json)[SERVER_NAME]
      : undefined;
  const e = (entry ?? {}) as { args?: unknown; env?: unknown };
  const { agent, root } = namedIdentity(e.args, found.env ?? e.env);
  const hooks =
    found.hooks ?? objectAt(await files.json(found.hooksFile), "hooks", found.hooksFile);
  const missingHooks = HOOK_EVENTS.filter(
    (event) => !hasOurHook(hooks[host.hooks.events[event]], event),
  ).map((event) => host.hooks.events[event]);
  return {
    tool,
    serverFile: found.serverFile,
    server: entry != null,
    hooksFile: found.hooksFile,
    missingHooks,
    wake: wakePathOf(host, hooks, missingHooks),
    ...(agent !== undefined && { agent }),
    ...(root !== undefined && { root }),
    identityFile: found.identityFile ?? found.serverFile,
    ...(found.pending !== undefined && { pending: found.pending }),
    gaps: found.gaps,
  };
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
