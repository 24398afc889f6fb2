import { join, resolve } from "node:path";
import { objectAt, parseJsonFile } from "./config-merge.js";
import {
  type HookDialect,
  type HookGroups,
  type Host,
  type HostFiles,
  type HostPlan,
  homeOf,
  hookGroups,
  type Json,
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
import { opencodePlugin, pluginHooks } from "./opencode-plugin.js";
import { WAKE_EVENT } from "./wake.js";

/**
 * OpenCode (`opencode-ai`) runs no hook commands of its own: our plugin (opencode-plugin.ts)
 * runs them at its plugin points and puts the notice in the user's message as plain text.
 */
export const opencodeHooks: HookDialect = {
  harness: "opencode",
  format: "opencode",
  events: { "session-start": "session.created", prompt: "chat.message", stop: "session.idle" },
  context: "plain",
  keepGoing: "block",
};

const DIR = "opencodeDir";

/** OpenCode's name for one tool of our server, and so its permission key: `<server>_<tool>`. */
const toolKey = (tool: string) => `${SERVER_NAME}_${tool}`;

const configFile = (dir: string) => join(dir, "opencode.json");
const pluginFile = (dir: string) => join(dir, "plugins", "agent-chat.js");

/**
 * OpenCode: the server and the permission rules go in the user's global configuration
 * (`opencode.json` in `$OPENCODE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/opencode`, default
 * `~/.config/opencode`; they name the agent), the hooks in our plugin beside it. OpenCode's own
 * default lets every tool run (its build agent's ruleset starts `"*": "allow"`); a user who made
 * it ask (`"permission": {"*": "ask"}`) would be asked before each chat tool, and `opencode run`
 * rejects what would ask. So setup adds an `allow` rule for each of {@link UNASKED_TOOLS}, after
 * the user's own rules (OpenCode takes the last rule that matches); chat_workspace is left to
 * the user's rules. No `--auto`, no rule for every tool. OpenCode asks no question on a first run.
 */
function plan(o: SetupOptions): HostPlan {
  const dir = homeOf(o, DIR);
  return {
    files: [configSetupFile(o, configFile(dir)), pluginSetupFile(o, pluginFile(dir))],
    oneCommand: `opencode mcp add   (interactive; it asks for the name ${SERVER_NAME}, "local" and the command ${shellQuote(`${o.command} mcp --as ${o.agent}`)})`,
    notes: [
      "The server and the permission rules are in your global OpenCode configuration (they name you), the hooks in the agent-chat plugin beside it; a project's opencode.json is left to the team.",
      `Permissions: the agent calls ${UNASKED_TOOLS.join(", ")} without asking, even where your rules ask for everything else; chat_workspace follows your own rules.`,
      "Hooks (the plugin): the unread notice joins a session's first message and each prompt; when a session goes idle it is told as a toast, and a message that arrives then wakes the session with a one-line notice.",
    ],
    todo: [
      `OpenCode: start \`opencode\` in ${o.projectDir}; it asks nothing of agent-chat on a first run (\`/mcps\` lists agent-chat).`,
    ],
  };
}

function serverEntry(o: SetupOptions): Json {
  return {
    type: "local",
    command: [o.command, ...serverArgs(o)],
    environment: { AGENT_CHAT_ROOT: o.root },
    enabled: true,
    timeout: TOOL_TIMEOUT_SECONDS * 1000,
  };
}

function configSetupFile(o: SetupOptions, path: string): SetupFile {
  const entry = serverEntry(o);
  const allow = Object.fromEntries(UNASKED_TOOLS.map((tool) => [toolKey(tool), "allow"]));
  return {
    path,
    format: "json",
    snippet: `${JSON.stringify({ mcp: { [SERVER_NAME]: entry }, permission: allow }, null, 2)}\n`,
    merge: (existing) => {
      const doc = parseJsonFile(path, existing);
      doc.mcp = { ...objectAt(doc, "mcp", path), [SERVER_NAME]: entry };
      doc.permission = { ...withoutRules(doc, path, Object.keys(allow)), ...allow };
      return `${JSON.stringify(doc, null, 2)}\n`;
    },
  };
}

/**
 * The user's permission rules without ours, so that ours go last: OpenCode takes the last rule
 * that matches. A bare action (`"permission": "ask"`) is its rule for every tool.
 */
function withoutRules(doc: Json, path: string, keys: readonly string[]): Json {
  if (typeof doc.permission === "string") return { "*": doc.permission };
  const rules = objectAt(doc, "permission", path);
  return Object.fromEntries(Object.entries(rules).filter(([key]) => !keys.includes(key)));
}

/** Our hook commands, keyed by the OpenCode events the plugin runs them at; the wake if `wake`. */
function pluginHookGroups(o: SetupOptions, wake: boolean): HookGroups {
  const groups = hookGroups(o, opencodeHooks, (_event, command) => ({ type: "command", command }));
  if (!wake) return groups;
  const wait = [o.command, "--root", o.root, "hook", WAKE_EVENT, "--as", o.agent]
    .map(shellQuote)
    .join(" ");
  const stop = opencodeHooks.events.stop;
  groups[stop] = [...(groups[stop] ?? []), { hooks: [{ type: "command", command: wait }] }];
  return groups;
}

/** The plugin; the wake is on unless `--no-wake`, and an earlier `--no-wake` is kept. */
function pluginSetupFile(o: SetupOptions, path: string): SetupFile {
  const wakeOf = (existing: string | undefined) => {
    if (o.wake !== undefined) return o.wake;
    const earlier = pluginHooks(existing);
    return earlier === undefined || hasWake(earlier);
  };
  return {
    path,
    format: "text",
    snippet: opencodePlugin(pluginHookGroups(o, o.wake !== false)),
    merge: (existing) => opencodePlugin(pluginHookGroups(o, wakeOf(existing))),
  };
}

function hasWake(hooks: Json): boolean {
  const groups = hooks[opencodeHooks.events.stop];
  return JSON.stringify(groups ?? []).includes(` hook ${WAKE_EVENT} `);
}

/** The server entry in the form doctor reads (`args`, `env`), from OpenCode's (`command`, `environment`). */
function asServers(mcp: unknown): Json {
  const entry = (mcp as Json | undefined)?.[SERVER_NAME] as Json | undefined;
  if (entry === undefined) return {};
  const command = Array.isArray(entry.command) ? entry.command : [];
  return { [SERVER_NAME]: { args: command.slice(1), env: entry.environment } };
}

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const dir = homeOf(at, DIR);
  const serverFile = configFile(dir);
  const config = await files.json(serverFile);
  const permission = config.permission;
  const rules = typeof permission === "object" && permission !== null ? (permission as Json) : {};
  const asks = UNASKED_TOOLS.filter((tool) => rules[toolKey(tool)] !== "allow");
  const gaps =
    asks.length > 0 && permission !== undefined
      ? [`OpenCode may ask before each call of ${asks.join(", ")} (no allow rule in ${serverFile})`]
      : [];
  const hooksFile = pluginFile(dir);
  const hooks = pluginHooks(await files.read(hooksFile)) ?? {};
  return { serverFile, servers: asServers(config.mcp), hooksFile, hooks, gaps };
}

export const opencode: Host = {
  tool: "opencode",
  title: "OpenCode",
  hooks: opencodeHooks,
  filesHelp:
    "opencode → $XDG_CONFIG_HOME/opencode/opencode.json and plugins/agent-chat.js (default ~/.config/opencode; yours)",
  locate: (env, userHome) => ({
    [DIR]: env.OPENCODE_CONFIG_DIR
      ? resolve(env.OPENCODE_CONFIG_DIR)
      : resolve(env.XDG_CONFIG_HOME || resolve(userHome, ".config"), "opencode"),
  }),
  personalFiles: [],
  plan,
  inspect,
  wakePath: (hooks) =>
    hasWake(hooks)
      ? "native: the agent-chat plugin parks hook wait when a session goes idle and prompts it through OpenCode's server"
      : "none: setup opencode --wake puts the wake back in the plugin",
  profile: {
    npm: "opencode-ai",
    asks: [],
    unaskedBy: 'its default (`"*": "allow"`), and `permission` allow rules after the user\'s own',
    hooksRunBy: "our plugin, at session.created · chat.message · session.idle",
  },
};
