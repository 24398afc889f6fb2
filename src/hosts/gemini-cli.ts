import { dirname, join, resolve, sep } from "node:path";
import { jsonFile, parseJsonFile, sharedFileCleanup, tomlString } from "./config-merge.js";
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
  TOOL_TIMEOUT_SECONDS,
  UNASKED_TOOLS,
  userScopeMcpAdd,
} from "./host.js";

/**
 * Gemini CLI: stdout must be JSON; SessionStart/BeforeAgent take
 * `hookSpecificOutput.additionalContext`, AfterAgent `systemMessage` or `decision: deny`.
 */
export const geminiCliHooks: HookDialect = {
  harness: "gemini",
  format: "gemini",
  events: { "session-start": "SessionStart", prompt: "BeforeAgent", stop: "AfterAgent" },
  context: "json",
  keepGoing: "deny",
};

const DIR = "geminiDir";
const TRUSTED = "geminiTrustedFolders";

/**
 * Gemini CLI: the server and the hooks go in the user's settings (they name the agent), never in
 * a project `.gemini/settings.json` a team commits. A policy file of the user's (see
 * {@link policyFile}) lets {@link UNASKED_TOOLS} run unasked: by default Gemini CLI asks
 * before every MCP tool call, and `gemini -p` does not even offer the model a tool that would
 * ask. (A server's `trust: true` would skip the question for chat_workspace too, whatever a
 * rule says; `tools.allowed` is deprecated, Gemini CLI warns at each start.) Gemini CLI runs
 * neither in a folder it does not trust; `--trust` adds the folder to its trustedFolders.json
 * (`{ "/abs": "TRUST_FOLDER" }`, gemini-cli packages/core/src/utils/trust.ts).
 */
function plan(o: SetupOptions): HostPlan {
  const dir = homeOf(o, DIR);
  const entry = {
    command: o.command,
    args: serverArgs(o),
    env: { AGENT_CHAT_ROOT: o.root },
    timeout: TOOL_TIMEOUT_SECONDS * 1000,
  };
  const files = [
    jsonFile(join(dir, "settings.json"), {
      server: { key: "mcpServers", entry },
      hooks: hookGroups(o, geminiCliHooks, (event, command) => ({
        name: `agent-chat-${event}`,
        type: "command",
        command,
        timeout: HOOK_TIMEOUT_SECONDS * 1000,
      })),
    }),
    policyFile(join(dir, "policies", `${SERVER_NAME}.toml`), "gemini"),
    sharedFileCleanup(join(o.projectDir, ".gemini", "settings.json"), "mcpServers"),
  ];
  if (o.trust) files.push(trustedFolderFile(homeOf(o, TRUSTED), o.projectDir));
  return {
    files,
    oneCommand: userScopeMcpAdd("gemini", o),
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
function policyFile(path: string, tool: string): SetupFile {
  const text = [
    `# Written by \`agent-chat setup ${tool}\`: the ${SERVER_NAME} MCP server's tools that remove nothing`,
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

/** The trusted folders file (`{ "/abs": "TRUST_FOLDER" }`) with `folder` trusted. */
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
 * Whether the trusted folders `rules` trust `folder` (gemini-cli packages/core/src/utils/
 * trust.ts): `TRUST_FOLDER` trusts a folder and what is below it, `TRUST_PARENT` its parent and
 * below, `DO_NOT_TRUST` exactly that folder.
 */
function trusts(rules: Json, folder: string): boolean {
  const within = (path: string, base: string) => path === base || path.startsWith(`${base}${sep}`);
  if (rules[folder] === "DO_NOT_TRUST") return false;
  return Object.entries(rules).some(
    ([path, rule]) =>
      (rule === "TRUST_FOLDER" && within(folder, path)) ||
      (rule === "TRUST_PARENT" && within(folder, dirname(path))),
  );
}

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const dir = homeOf(at, DIR);
  const serverFile = join(dir, "settings.json");
  const servers = (await files.json(serverFile)).mcpServers;
  const gaps: string[] = [];
  const policy = join(dir, "policies", `${SERVER_NAME}.toml`);
  if ((await files.read(policy)) === undefined) {
    gaps.push(`Gemini CLI asks before each chat tool call (no ${policy})`);
  }
  const trustedFile = homeOf(at, TRUSTED);
  const found: HostFiles = { serverFile, servers, hooksFile: serverFile, gaps };
  if (!trusts(await files.json(trustedFile), at.projectDir)) {
    found.pending = `Gemini CLI runs no server or hook in ${at.projectDir}: it is not in ${trustedFile}`;
  }
  return found;
}

const runWake: RunWake = { command: "gemini", stop: "AfterAgent" };

export const geminiCli: Host = {
  tool: "gemini",
  title: "Gemini CLI",
  hooks: geminiCliHooks,
  filesHelp:
    "gemini → ~/.gemini/settings.json and policies/agent-chat.toml (yours), trustedFolders.json with --trust",
  locate: (env, userHome) => {
    const dir = resolve(env.GEMINI_CLI_HOME || userHome, ".gemini");
    return {
      [DIR]: dir,
      [TRUSTED]: env.GEMINI_CLI_TRUSTED_FOLDERS_PATH || resolve(dir, "trustedFolders.json"),
    };
  },
  personalFiles: [],
  plan,
  inspect,
  runWake,
  answerPending: (setupCommand) => `${setupCommand} --trust, or answer Gemini's trust question`,
  profile: {
    npm: "@google/gemini-cli",
    asks: ["trust this folder (it restarts)"],
    unaskedBy: "the policy file `policies/agent-chat.toml`",
  },
};
