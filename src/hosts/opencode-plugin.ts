import type { HookGroups } from "./host.js";

/**
 * The plugin `setup opencode` writes into OpenCode's plugins folder: OpenCode has no hook
 * commands in its configuration, only JavaScript plugins, which it loads from
 * `<config>/plugins/*.js` and calls at its own points (`event` for every bus event,
 * `chat.message` before a user message is saved, `dispose` when the instance ends). The plugin is
 * fixed text of ours around one line, `const HOOKS = …`: our hook commands in Claude Code's
 * form, keyed by the OpenCode event that runs them, which doctor reads back as JSON.
 *
 * - `session.created`: `hook session-start`; its notice joins the session's first message.
 * - `chat.message`: `hook prompt`; its notice joins the message as a synthetic text part (the
 *   model reads it, the user's screen does not show it), and any parked wait is ended.
 * - `session.idle`: `hook stop`, its `systemMessage` shown as a toast; and, with the wake on,
 *   `hook wait` parked in the background: when it exits 2 its notice (fixed text of ours) is
 *   sent to the idle session through OpenCode's own server (`session.promptAsync`), which starts
 *   a turn. It is told OpenCode's pid (AGENT_CHAT_HOST_PID), so it ends when OpenCode does.
 * Sub-agent sessions (those with a parent) are left alone.
 */
export function opencodePlugin(hooks: HookGroups): string {
  return `${PLUGIN_HEAD}const HOOKS = ${JSON.stringify(hooks)};\n${PLUGIN_BODY}`;
}

/** The marker line before the hooks: doctor and setup find them by it. */
const HOOKS_LINE = /^const HOOKS = (.*);$/m;

/** The hooks an earlier setup wrote into the plugin; undefined when the text holds none. */
export function pluginHooks(text: string | undefined): HookGroups | undefined {
  const line = text === undefined ? undefined : HOOKS_LINE.exec(text);
  if (!line) return undefined;
  try {
    const value: unknown = JSON.parse(line[1]!);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as HookGroups)
      : undefined;
  } catch {
    return undefined;
  }
}

const PLUGIN_HEAD = `// agent-chat for OpenCode, written by \`agent-chat setup opencode\`: run setup again rather
// than edit it. It runs agent-chat's hooks at OpenCode's plugin points: the unread notice joins
// a session's first message and each prompt, and an idle session is prompted with a one-line
// notice when a message arrives for it. Every notice is agent-chat's own fixed text.
import { spawn } from "node:child_process";

`;

const PLUGIN_BODY = `
const commands = (event) =>
  (HOOKS[event] ?? []).flatMap((group) => group.hooks ?? []).map((hook) => hook.command);
const isWait = (command) => / hook wait /.test(\`\${command} \`);

/** Runs one hook command with OpenCode's session on stdin, as a hook of any host gets it. */
function start(command, sessionID, event) {
  const child = spawn("/bin/sh", ["-c", \`exec \${command}\`], {
    env: { ...process.env, AGENT_CHAT_HOST_PID: String(process.pid) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const done = new Promise((resolve) => {
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { err += d; });
    child.on("error", () => resolve({ code: null, out, err }));
    child.on("close", (code) => resolve({ code, out, err }));
  });
  child.stdin.on("error", () => {});
  child.stdin.end(JSON.stringify({ session_id: sessionID, hook_event_name: event }));
  return { child, done };
}

async function notices(event, sessionID) {
  let text = "";
  for (const command of commands(event).filter((c) => !isWait(c))) {
    text += (await start(command, sessionID, event).done).out;
  }
  return text.trim();
}

function systemMessage(line) {
  try {
    return JSON.parse(line).systemMessage;
  } catch {
    return undefined;
  }
}

/** OpenCode's part ids sort by time ("prt_", 12 hex digits, 14 letters): ours after the user's. */
let counter = 0;
function partId() {
  const letters = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const time = (BigInt(Date.now()) * 4096n + BigInt(++counter % 4096)) & 0xffffffffffffn;
  let tail = "";
  for (let i = 0; i < 14; i++) tail += letters[Math.floor(Math.random() * 62)];
  return \`prt_\${time.toString(16).padStart(12, "0")}\${tail}\`;
}

export const AgentChat = async ({ client }) => {
  const starts = new Map();
  const waits = new Map();
  const children = new Set();
  const stopWaiting = (id) => {
    waits.get(id)?.kill();
    waits.delete(id);
  };
  const wake = (command, id) => {
    stopWaiting(id);
    const { child, done } = start(command, id, "session.idle");
    waits.set(id, child);
    done.then(({ code, err }) => {
      if (waits.get(id) !== child) return;
      waits.delete(id);
      const text = err.trim();
      if (code !== 2 || text === "") return;
      client.session.promptAsync({ path: { id }, body: { parts: [{ type: "text", text }] } });
    });
  };
  const idle = async (id) => {
    const told = await notices("session.idle", id);
    for (const line of told.split("\\n").filter(Boolean)) {
      const message = systemMessage(line);
      if (message) await client.tui.showToast({ body: { message, variant: "info" } }).catch(() => {});
    }
    for (const command of commands("session.idle").filter(isWait)) wake(command, id);
  };
  return {
    event: async ({ event }) => {
      const id = event.properties?.sessionID;
      if (event.type === "session.created") {
        if (event.properties.info?.parentID) children.add(id);
        else starts.set(id, notices("session.created", id));
      }
      if (event.type === "session.idle" && !children.has(id)) await idle(id);
    },
    "chat.message": async (input, output) => {
      const id = input.sessionID;
      if (children.has(id)) return;
      stopWaiting(id);
      const first = (await starts.get(id)) ?? "";
      starts.delete(id);
      const text = [first, await notices("chat.message", id)].filter(Boolean).join("\\n");
      if (text === "") return;
      const { id: messageID, sessionID } = output.message;
      output.parts.push({ id: partId(), sessionID, messageID, type: "text", text, synthetic: true });
    },
    dispose: () => {
      for (const id of [...waits.keys()]) stopWaiting(id);
    },
  };
};
`;
