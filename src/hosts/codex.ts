import { join, resolve } from "node:path";
import { checkToml, jsonFile, mergeTomlTable, tomlString } from "./config-merge.js";
import {
  HOOK_TIMEOUT_SECONDS,
  type HookDialect,
  type Host,
  type HostFiles,
  type HostPlan,
  homeOf,
  hookGroups,
  type RunWake,
  SERVER_NAME,
  type SetupFileReader,
  type SetupLocations,
  type SetupOptions,
  serverArgs,
  shellQuote,
  TOOL_TIMEOUT_SECONDS,
} from "./host.js";

/** Codex: the same events and JSON as Claude Code; context goes in additionalContext. */
export const codexHooks: HookDialect = {
  harness: "codex",
  format: "codex",
  events: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  context: "json",
  keepGoing: "block",
};

const HOME = "codexHome";

/**
 * Codex: everything goes in the user's `$CODEX_HOME` (config.toml and hooks.json). No
 * `[features]` line: hooks are the stable feature `hooks`, on by default (codex-rs/features/src/
 * lib.rs, `FeatureSpec { id: CodexHooks, key: "hooks", stage: Stable, default_enabled: true }`),
 * and the old key `codex_hooks` makes Codex warn on every run, so a `codex_hooks = true` an
 * earlier setup wrote is taken out. `default_tools_approval_mode` is a per-server key of
 * codex-rs/config/src/mcp_types.rs (`auto` | `prompt` | `approve`).
 */
function plan(o: SetupOptions): HostPlan {
  const home = homeOf(o, HOME);
  const configPath = join(home, "config.toml");
  const table = serverTable(o);
  const groups = hookGroups(o, codexHooks, (_event, command) => ({
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  }));
  return {
    files: [
      {
        path: configPath,
        format: "toml",
        snippet: `${table}\n`,
        merge: (existing) => mergeConfigToml(existing ?? "", table, configPath),
      },
      jsonFile(join(home, "hooks.json"), { hooks: groups }),
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

function serverTable(o: SetupOptions): string {
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
  return lines.join("\n");
}

/**
 * Our `[mcp_servers.agent-chat]` table replaced or appended, and a `codex_hooks = true` of
 * `[features]` taken out; every other line of the file stays as it was.
 */
function mergeConfigToml(existing: string, table: string, path = "config.toml"): string {
  return mergeTomlTable(
    existing,
    `mcp_servers.${SERVER_NAME}`,
    table,
    path,
    (section, line) => section === "features" && /^\s*codex_hooks\s*=\s*true\s*(#.*)?$/.test(line),
  );
}

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const home = homeOf(at, HOME);
  const serverFile = join(home, "config.toml");
  const text = (await files.read(serverFile)) ?? "";
  const config = checkToml(serverFile, text, "is not valid TOML", "Codex cannot start with it");
  return { serverFile, servers: config.mcp_servers, hooksFile: join(home, "hooks.json"), gaps: [] };
}

const runWake: RunWake = { command: "codex", stop: "Stop" };

export const codex: Host = {
  tool: "codex",
  title: "Codex",
  hooks: codexHooks,
  filesHelp: "codex → $CODEX_HOME/config.toml and hooks.json (default ~/.codex)",
  locate: (env, userHome) => ({ [HOME]: env.CODEX_HOME || resolve(userHome, ".codex") }),
  personalFiles: [],
  plan,
  inspect,
  runWake,
  profile: {
    npm: "@openai/codex",
    asks: ["trust this folder", "review hooks"],
    unaskedBy: "the tools' annotations (`--tools-approval approve` for `codex exec`)",
  },
};
