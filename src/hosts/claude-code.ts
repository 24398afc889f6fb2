import { join } from "node:path";
import { hasWakeHook, jsonFile, sharedFileCleanup } from "./config-merge.js";
import {
  HOOK_TIMEOUT_SECONDS,
  type HookDialect,
  type Host,
  type HostFiles,
  hookGroups,
  type Json,
  SERVER_NAME,
  type SetupFileReader,
  type SetupLocations,
  type SetupOptions,
  shellQuote,
  UNASKED_TOOLS,
} from "./host.js";
import { DEFAULT_WAKE_TIMEOUT_S, WAKE_EVENT } from "./wake.js";

/**
 * Claude Code. Its SessionStart and UserPromptSubmit hooks add plain stdout to the model's
 * context; its Stop hook's plain stdout reaches nobody, so stop answers JSON (`systemMessage`,
 * or `decision: block`).
 */
export const claudeCodeHooks: HookDialect = {
  harness: "claude-code",
  format: "claude",
  events: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  context: "plain",
  keepGoing: "block",
};

/** The per-checkout settings file Claude Code keeps out of git; it names the user. */
const LOCAL_SETTINGS = /* @__PURE__ */ join(".claude", "settings.local.json");

/** Claude Code's permission rule for one tool of our server (`mcp__<server>__<tool>`). */
const claudeToolRule = (tool: string) => `mcp__${SERVER_NAME}__${tool}`;

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
function plan(o: SetupOptions) {
  const entry = { type: "stdio", command: o.command, args: ["mcp"], alwaysLoad: true };
  const groups = hookGroups(o, claudeCodeHooks, (_event, command) => ({
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  }));
  // Also at session start (a new session, a resumed one): parked from the start, the wait wakes
  // a session that had no turn yet, through its inbox socket (claude-inbox.ts). Not after
  // /clear or a compaction: the wait the last Stop parked is still there.
  const wake = {
    hook: wakeHook(o),
    on: o.wake,
    also: [{ event: "SessionStart", matcher: "startup|resume" }],
  };
  return {
    files: [
      jsonFile(join(o.projectDir, ".mcp.json"), { server: { key: "mcpServers", entry } }),
      jsonFile(join(o.projectDir, LOCAL_SETTINGS), {
        env: { AGENT_CHAT_NAME: o.agent, AGENT_CHAT_ROOT: o.root },
        enableMcpjsonServer: true,
        allow: UNASKED_TOOLS.map(claudeToolRule),
        hooks: groups,
        wake,
      }),
      sharedFileCleanup(join(o.projectDir, ".claude", "settings.json"), undefined),
    ],
    oneCommand: [
      "claude mcp add",
      SERVER_NAME,
      "--scope local",
      `--env ${shellQuote(`AGENT_CHAT_NAME=${o.agent}`)}`,
      `--env ${shellQuote(`AGENT_CHAT_ROOT=${o.root}`)}`,
      "--",
      ...[o.command, "mcp"].map(shellQuote),
    ].join(" "),
    notes: notes(o),
    todo: [
      `Claude Code: start \`claude\` in ${o.projectDir} and answer its "trust this folder" question with "Yes, I trust this folder" (it starts on "No, exit"; servers and hooks wait for it); \`/mcp\` then shows agent-chat connected. docs/first-run.md lists every question of a first run.`,
    ],
  };
}

function notes(o: SetupOptions): string[] {
  return [
    ".mcp.json names no one and can be committed; the identity, the root, the approval and the hooks are in .claude/settings.local.json (not committed).",
    `Permissions: the agent calls ${UNASKED_TOOLS.join(", ")} without asking; chat_workspace (it can delete files of a channel's workspace) still asks. The one command writes no rule: then Claude Code asks for every call.`,
    "Hooks: SessionStart and UserPromptSubmit add the unread notice to the model's context; Stop tells you (add --block to the stop hook to make the agent read instead).",
    o.wake
      ? `Wake: a second Stop hook (hook wait, "async": true, "asyncRewake": true), also run at session start, parks while the session is idle and, when a message for ${o.agent} arrives that the session has neither read nor been told of, wakes it with a new turn that carries a short notice: through the session's inbox socket (its hooks keep the socket and token in your private state), else by the rewake hook's exit; it moves no cursor and gives up after ${DEFAULT_WAKE_TIMEOUT_S / 60} minutes idle.`
      : "--wake also wakes an idle session when a message arrives (an async Stop hook that parks until one does); --no-wake takes it out.",
  ];
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

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const serverFile = join(at.projectDir, ".mcp.json");
  const servers = (await files.json(serverFile)).mcpServers;
  const hooksFile = join(at.projectDir, LOCAL_SETTINGS);
  const local = await files.json(hooksFile);
  const approved = local.enabledMcpjsonServers;
  const pending =
    Array.isArray(approved) && approved.includes(SERVER_NAME)
      ? undefined
      : `Claude Code shows the server "Pending approval": ${SERVER_NAME} is not in enabledMcpjsonServers of ${hooksFile}`;
  return {
    serverFile,
    servers,
    hooksFile,
    // The identity and the root are in its local settings, beside the hooks.
    identityFile: hooksFile,
    env: local.env ?? {},
    gaps: gaps(servers, local, hooksFile),
    ...(pending !== undefined && { pending }),
  };
}

/** What Claude Code's files lack for the agent to see and call the tools unasked. */
function gaps(servers: unknown, local: Json, localFile: string): string[] {
  const found: string[] = [];
  const entry = (servers as Json | undefined)?.[SERVER_NAME] as Json | undefined;
  if (entry !== undefined && entry.alwaysLoad !== true) {
    found.push("Claude Code defers the chat tools behind ToolSearch (no alwaysLoad in .mcp.json)");
  }
  const allow = (local.permissions as Json | undefined)?.allow;
  const rules = Array.isArray(allow) ? allow : [];
  // A rule for the whole server (`mcp__agent-chat`, or with `__*`) allows every tool of it.
  const wholeServer = [claudeToolRule("").slice(0, -2), claudeToolRule("*")];
  const asks = wholeServer.some((rule) => rules.includes(rule))
    ? []
    : UNASKED_TOOLS.filter((tool) => !rules.includes(claudeToolRule(tool)));
  if (asks.length > 0) {
    found.push(
      `Claude Code asks before each call of ${asks.join(", ")} (no permissions.allow rule in ${localFile})`,
    );
  }
  return found;
}

export const claudeCode: Host = {
  tool: "claude-code",
  title: "Claude Code",
  hooks: claudeCodeHooks,
  filesHelp:
    "claude-code → .mcp.json (no identity: commit it) and .claude/settings.local.json\n" +
    "       (identity, root, approval, permissions, hooks: listed in .git/info/exclude)",
  locate: () => ({}),
  personalFiles: [LOCAL_SETTINGS],
  plan,
  inspect,
  wakePath: (found) =>
    hasWakeHook(found)
      ? "native: hook wait writes into the session's inbox socket (a fresh session too), else the rewake Stop hook wakes the idle session"
      : "none: setup claude-code --wake adds the rewake hook (or start it under agent-chat run)",
  profile: {
    npm: "@anthropic-ai/claude-code",
    asks: ["theme", "security notes", "trust this folder"],
    unaskedBy: "`permissions.allow` rules in `.claude/settings.local.json`",
  },
};
