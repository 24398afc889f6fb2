import { join, resolve } from "node:path";
import { jsonFile, sharedFileCleanup } from "./config-merge.js";
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
  type SetupFileReader,
  type SetupLocations,
  type SetupOptions,
  serverArgs,
  TOOL_TIMEOUT_SECONDS,
  UNASKED_TOOLS,
  userScopeMcpAdd,
} from "./host.js";

/**
 * Qwen Code (`@qwen-code/qwen-code`), a Gemini CLI fork whose hooks now follow Claude Code's:
 * SessionStart and UserPromptSubmit add plain stdout to the model's context
 * (`PLAIN_TEXT_CONTEXT_EVENTS` in its hook runner), Stop reads JSON (`systemMessage`,
 * `decision: block`).
 */
export const qwenCodeHooks: HookDialect = {
  harness: "qwen",
  format: "qwen",
  events: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  context: "plain",
  keepGoing: "block",
};

const DIR = "qwenDir";

/** Qwen Code's permission rule for one tool of our server: Claude Code's `mcp__<server>__<tool>`. */
const toolRule = (tool: string) => `mcp__${SERVER_NAME}__${tool}`;

/**
 * Qwen Code: the server, the rules and the hooks go in the user's settings
 * (`$QWEN_HOME/settings.json`, default `~/.qwen/settings.json`; they name the agent), never in a
 * project `.qwen/settings.json` a team commits. By default Qwen Code asks before each MCP tool
 * call; `permissions.allow` lets the agent call {@link UNASKED_TOOLS} unasked (chat_workspace,
 * which can delete, still asks), and a server's `trust: true`, which would skip every question,
 * is not used. `alwaysLoadTools` keeps our tools in the model's list instead of behind its
 * ToolSearch. Folder trust is off unless the user turned it on (`security.folderTrust.enabled`):
 * then a folder it does not trust runs no server or hook, and its first run asks.
 */
function plan(o: SetupOptions): HostPlan {
  const dir = homeOf(o, DIR);
  const entry = {
    command: o.command,
    args: serverArgs(o),
    env: { AGENT_CHAT_ROOT: o.root },
    timeout: TOOL_TIMEOUT_SECONDS * 1000,
    alwaysLoadTools: true,
  };
  return {
    files: [
      jsonFile(join(dir, "settings.json"), {
        server: { key: "mcpServers", entry },
        allow: UNASKED_TOOLS.map(toolRule),
        hooks: hookGroups(o, qwenCodeHooks, (_event, command) => ({
          type: "command",
          command,
          timeout: HOOK_TIMEOUT_SECONDS,
        })),
      }),
      sharedFileCleanup(join(o.projectDir, ".qwen", "settings.json"), "mcpServers"),
    ],
    oneCommand: userScopeMcpAdd("qwen", o),
    notes: [
      "The server, the permission rules and the hooks are in your user settings (they name you); a project's .qwen/settings.json is left to the team.",
      `Permissions: the agent calls ${UNASKED_TOOLS.join(", ")} without asking; chat_workspace (it can delete files of a channel's workspace) still asks. The one command writes no rule: then Qwen Code asks for every call.`,
      "Hooks: SessionStart and UserPromptSubmit add the unread notice to the model's context; Stop tells you.",
    ],
    todo: [
      `Qwen Code: start \`qwen\` in ${o.projectDir}; \`/mcp\` shows agent-chat. It asks nothing of agent-chat on a first run (folder trust is off unless you turned it on; then answer its trust question).`,
    ],
  };
}

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const serverFile = join(homeOf(at, DIR), "settings.json");
  const settings = await files.json(serverFile);
  const allow = (settings.permissions as Json | undefined)?.allow;
  const rules = Array.isArray(allow) ? allow : [];
  const whole = [`mcp__${SERVER_NAME}`, toolRule("*")].some((rule) => rules.includes(rule));
  const asks = whole ? [] : UNASKED_TOOLS.filter((tool) => !rules.includes(toolRule(tool)));
  const gaps =
    asks.length > 0
      ? [
          `Qwen Code asks before each call of ${asks.join(", ")} (no permissions.allow rule in ${serverFile})`,
        ]
      : [];
  return { serverFile, servers: settings.mcpServers, hooksFile: serverFile, gaps };
}

const runWake: RunWake = { command: "qwen", stop: "Stop" };

export const qwenCode: Host = {
  tool: "qwen",
  title: "Qwen Code",
  hooks: qwenCodeHooks,
  filesHelp: "qwen → $QWEN_HOME/settings.json (default ~/.qwen; yours)",
  locate: (env, userHome) => ({
    [DIR]: env.QWEN_HOME ? resolve(env.QWEN_HOME) : resolve(userHome, ".qwen"),
  }),
  personalFiles: [],
  plan,
  inspect,
  runWake,
  profile: {
    npm: "@qwen-code/qwen-code",
    asks: [],
    unaskedBy: "`permissions.allow` rules",
  },
};
