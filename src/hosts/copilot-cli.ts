import { join, resolve, sep } from "node:path";
import { jsonFile, objectAt, parseJsonFile } from "./config-merge.js";
import {
  HOOK_TIMEOUT_SECONDS,
  type HookDialect,
  type Host,
  type HostFiles,
  type HostPlan,
  homeOf,
  hookGroups,
  type Json,
  type RunWake,
  SERVER_NAME,
  type SetupFile,
  type SetupFileReader,
  type SetupLocations,
  type SetupOptions,
  serverArgs,
  shellQuote,
  TOOL_TIMEOUT_SECONDS,
  UNASKED_TOOLS,
} from "./host.js";

/**
 * GitHub Copilot CLI (`@github/copilot`): hooks under Claude Code's event names (its "VS Code
 * compatible" form, snake_case input with `session_id`) in its settings. It reads a hook's
 * stdout as JSON only, and takes context from a top-level `additionalContext` at SessionStart
 * and UserPromptSubmit (its camelCase `userPromptSubmitted` event ignores output); Stop reads
 * `decision: block` with `reason`.
 */
export const copilotCliHooks: HookDialect = {
  harness: "copilot",
  format: "copilot",
  events: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  context: "flat",
  keepGoing: "block",
};

const DIR = "copilotDir";

/** One saved approval in permissions-config.json, as Copilot CLI writes it for an MCP tool. */
const approval = (tool: string) => ({ kind: "mcp", serverName: SERVER_NAME, toolName: tool });

/**
 * Copilot CLI: everything goes in the user's `$COPILOT_HOME` (default `~/.copilot`): the server
 * in mcp-config.json (what `copilot mcp add` writes), the hooks in settings.json, and in
 * permissions-config.json the approvals its own question records when the user answers "Yes,
 * and don't ask again for tool … in this repo" ({@link approvalsFile}). Without them its default
 * (Manual Approval) asks before each call of a tool that is not read-only, and `copilot -p`
 * denies it. Its first interactive run in a folder asks whether the user trusts it.
 */
function plan(o: SetupOptions): HostPlan {
  const dir = homeOf(o, DIR);
  const location = locationOf(o);
  const entry = {
    type: "local",
    command: o.command,
    args: serverArgs(o),
    env: { AGENT_CHAT_ROOT: o.root },
    tools: ["*"],
    timeout: TOOL_TIMEOUT_SECONDS * 1000,
  };
  return {
    files: [
      jsonFile(join(dir, "mcp-config.json"), { server: { key: "mcpServers", entry } }),
      jsonFile(join(dir, "settings.json"), {
        hooks: hookGroups(o, copilotCliHooks, (_event, command) => ({
          type: "command",
          command,
          timeout: HOOK_TIMEOUT_SECONDS,
        })),
      }),
      approvalsFile(join(dir, "permissions-config.json"), location),
    ],
    oneCommand: [
      "copilot mcp add",
      `--env ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      `--timeout ${TOOL_TIMEOUT_SECONDS * 1000}`,
      SERVER_NAME,
      "--",
      shellQuote(o.command),
      ...serverArgs(o).map(shellQuote),
    ].join(" "),
    notes: [
      "The server, the hooks and the approvals are in your user folder (they name you); nothing goes in the project.",
      `Permissions: in ${location} the agent calls ${UNASKED_TOOLS.join(", ")} without asking (what answering Copilot's "don't ask again … in this repo" records); chat_workspace (it can delete files of a channel's workspace) still asks. The one command writes no approval: then Copilot asks for each call that is not read-only.`,
      "Hooks: SessionStart and UserPromptSubmit add the unread notice to the model's context; Stop tells you.",
    ],
    todo: [
      `GitHub Copilot CLI: start \`copilot\` in ${o.projectDir} and answer its folder trust question once (2 remembers the folder); \`/mcp\` shows agent-chat.`,
    ],
  };
}

/**
 * The location Copilot CLI keys saved approvals by: the top of the git work tree the project is
 * in (it offers "in this repo" there), else the project folder itself ("in this directory").
 */
function locationOf(o: SetupOptions): string {
  const projectDir = resolve(o.projectDir);
  const prefix = o.git?.prefix.replace(/\/$/, "") ?? "";
  if (prefix === "") return projectDir;
  const depth = prefix.split("/").length;
  return resolve(projectDir, ...Array<string>(depth).fill(".."));
}

/** permissions-config.json with an approval of each of {@link UNASKED_TOOLS} at `location`. */
function approvalsFile(path: string, location: string): SetupFile {
  const ours = UNASKED_TOOLS.map(approval);
  return {
    path,
    format: "json",
    snippet: `${JSON.stringify({ locations: { [location]: { tool_approvals: ours } } }, null, 2)}\n`,
    merge: (existing) => {
      const doc = parseJsonFile(path, existing);
      const locations = objectAt(doc, "locations", path);
      const here = objectAt(locations, location, path);
      const kept = Array.isArray(here.tool_approvals) ? (here.tool_approvals as Json[]) : [];
      const missing = ours.filter((a) => !kept.some((k) => sameApproval(k, a)));
      if (missing.length === 0) return existing as string;
      const next = { ...here, tool_approvals: [...kept, ...missing] };
      doc.locations = { ...locations, [location]: next };
      return `${JSON.stringify(doc, null, 2)}\n`;
    },
  };
}

function sameApproval(a: Json, b: Json): boolean {
  return a.kind === b.kind && a.serverName === b.serverName && a.toolName === b.toolName;
}

/**
 * The chat tools Copilot CLI still asks for in `projectDir`: the saved approvals of its location
 * or any folder above it (a `toolName` of null approves every tool of the server).
 */
function unapproved(doc: Json, projectDir: string): string[] {
  const locations = (doc.locations ?? {}) as Record<string, { tool_approvals?: unknown }>;
  const approvals = Object.entries(locations)
    .filter(([key]) => projectDir === key || projectDir.startsWith(`${key}${sep}`))
    .flatMap(([, at]) => (Array.isArray(at?.tool_approvals) ? (at.tool_approvals as Json[]) : []))
    .filter((a) => a.kind === "mcp" && a.serverName === SERVER_NAME);
  if (approvals.some((a) => a.toolName === null)) return [];
  return UNASKED_TOOLS.filter((tool) => !approvals.some((a) => a.toolName === tool));
}

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const dir = homeOf(at, DIR);
  const serverFile = join(dir, "mcp-config.json");
  const approvals = join(dir, "permissions-config.json");
  const asks = unapproved(await files.json(approvals), resolve(at.projectDir));
  const gaps =
    asks.length > 0
      ? [
          `Copilot CLI asks before each call of ${asks.join(", ")} in ${at.projectDir} (no approval in ${approvals})`,
        ]
      : [];
  const servers = (await files.json(serverFile)).mcpServers;
  return { serverFile, servers, hooksFile: join(dir, "settings.json"), gaps };
}

const runWake: RunWake = { command: "copilot", stop: "Stop" };

export const copilotCli: Host = {
  tool: "copilot",
  title: "GitHub Copilot CLI",
  hooks: copilotCliHooks,
  filesHelp:
    "copilot → $COPILOT_HOME/mcp-config.json, settings.json, permissions-config.json (default ~/.copilot; yours)",
  locate: (env, userHome) => ({
    [DIR]: env.COPILOT_HOME ? resolve(env.COPILOT_HOME) : resolve(userHome, ".copilot"),
  }),
  personalFiles: [],
  plan,
  inspect,
  runWake,
  profile: {
    npm: "@github/copilot",
    asks: ["trust this folder"],
    unaskedBy: "saved approvals for the repository in `permissions-config.json`",
  },
};
