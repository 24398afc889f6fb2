import { join, resolve } from "node:path";
import { hasWakeHook, jsonFile } from "./config-merge.js";
import {
  HOOK_TIMEOUT_SECONDS,
  type HookDialect,
  type Host,
  type HostFiles,
  type HostPlan,
  homeOf,
  hookGroups,
  type Json,
  type SetupFile,
  type SetupFileReader,
  type SetupLocations,
  type SetupOptions,
  serverArgs,
  shellQuote,
} from "./host.js";
import { piExtensionSource } from "./pi-extension.js";
import { DEFAULT_WAKE_TIMEOUT_S, WAKE_EVENT } from "./wake.js";

/**
 * pi (`@mariozechner/pi-coding-agent`) runs our hooks through the extension setup writes
 * (pi-extension.ts), which reads them in Claude Code's form under Claude Code's event names
 * and adds plain stdout to the turn's messages; Stop answers JSON (`systemMessage`).
 */
export const piHooks: HookDialect = {
  harness: "pi",
  format: "pi",
  events: { "session-start": "SessionStart", prompt: "UserPromptSubmit", stop: "Stop" },
  context: "plain",
  keepGoing: "block",
};

const DIR = "piDir";

/** The extension's own file: read from the extensions folder pi loads every file of. */
const EXTENSION = join("extensions", "agent-chat.js");

/**
 * pi has no MCP and asks before no tool call, by design. Setup writes, in the user's agent
 * folder (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`; pi loads every extension there on
 * start, with no question): `agent-chat.json`, our server entry and hooks (they name the agent,
 * so never in a project's `.pi/` a team commits), and the extension that reads it
 * (pi-extension.ts says what it does). `--wake` adds the Stop hook the extension parks after
 * each turn (`hook wait`, as for Claude Code).
 */
function plan(o: SetupOptions): HostPlan {
  const dir = homeOf(o, DIR);
  const config = join(dir, "agent-chat.json");
  const entry = {
    command: o.command,
    args: serverArgs(o),
    env: { AGENT_CHAT_ROOT: o.root, AGENT_CHAT_HARNESS: piHooks.harness },
  };
  const hooks = hookGroups(o, piHooks, (_event, command) => ({
    type: "command",
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  }));
  return {
    files: [
      jsonFile(config, { server: { key: "mcpServers", entry }, hooks, wake: wake(o) }),
      extensionFile(join(dir, EXTENSION), config),
    ],
    oneCommand: "",
    notes: notes(o),
    todo: [
      `pi: start \`pi\` in ${o.projectDir} with your model; it loads the agent-chat extension and asks nothing of it (\`pi --list-models\` shows what it can use).`,
    ],
  };
}

function notes(o: SetupOptions): string[] {
  return [
    `pi has no MCP: the extension ${EXTENSION} (in your pi folder) starts \`agent-chat mcp\` and gives pi its tools; agent-chat.json beside it names you and holds the hooks.`,
    "Permissions: pi asks before no tool call; the extension asks you before chat_workspace (it can delete files of a channel's workspace), and refuses it under pi -p.",
    "Hooks: at session start and at each prompt the extension adds the unread notice to the turn; at the end of a turn it tells you.",
    o.wake
      ? `Wake: after each turn the extension parks \`hook wait\`; when a message for ${o.agent} arrives that the session has neither read nor been told of, the idle session takes a new turn that carries a short notice (it moves no cursor, gives up after ${DEFAULT_WAKE_TIMEOUT_S / 60} minutes idle).`
      : "--wake also wakes an idle session when a message arrives (the extension parks `hook wait` after each turn); --no-wake takes it out.",
  ];
}

/** The Stop hook the extension parks in the background (`asyncRewake`, as Claude Code's). */
function wake(o: SetupOptions): { hook: Json; on: boolean | undefined } {
  const command = [o.command, "--root", o.root, "hook", WAKE_EVENT, "--as", o.agent]
    .map(shellQuote)
    .join(" ");
  return { hook: { type: "command", command, asyncRewake: true }, on: o.wake };
}

/** Ours whole: an older version is replaced. */
function extensionFile(path: string, config: string): SetupFile {
  const text = piExtensionSource(config);
  return { path, format: "text", snippet: text, merge: () => text };
}

async function inspect(files: SetupFileReader, at: SetupLocations): Promise<HostFiles> {
  const dir = homeOf(at, DIR);
  const serverFile = join(dir, "agent-chat.json");
  const config = await files.json(serverFile);
  const extension = join(dir, EXTENSION);
  const gaps =
    (await files.read(extension)) === undefined
      ? [`pi does not load agent-chat: ${extension} is missing`]
      : [];
  return { serverFile, servers: config.mcpServers, hooksFile: serverFile, gaps };
}

/** pi's agent folder as pi finds it (its config.js, getAgentDir): the variable, `~` expanded. */
function agentDir(given: string | undefined, userHome: string): string {
  if (!given) return resolve(userHome, ".pi", "agent");
  if (given === "~" || given.startsWith("~/")) return resolve(userHome, given.slice(2));
  return resolve(given);
}

export const pi: Host = {
  tool: "pi",
  title: "pi",
  hooks: piHooks,
  filesHelp: "pi → $PI_CODING_AGENT_DIR/agent-chat.json and extensions/agent-chat.js (~/.pi/agent)",
  locate: (env, userHome) => ({ [DIR]: agentDir(env.PI_CODING_AGENT_DIR, userHome) }),
  personalFiles: [],
  plan,
  inspect,
  wakePath: (hooks) =>
    hasWakeHook(hooks)
      ? "native: the extension parks hook wait after each turn and starts a turn with its notice"
      : "none: setup pi --wake adds the wake (the extension parks hook wait after each turn)",
  profile: {
    npm: "@mariozechner/pi-coding-agent",
    asks: [],
    unaskedBy: "pi asks before no tool (the extension confirms `chat_workspace`)",
    hooksRunBy: "the extension, at session_start · before_agent_start · agent_end",
  },
};
