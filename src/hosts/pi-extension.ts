/**
 * The pi extension `setup pi` writes (`$PI_CODING_AGENT_DIR/extensions/agent-chat.js`). pi has
 * no MCP by design; its extensions can register tools and hook its events (its
 * docs/extensions.md), so this one is a small bridge to our CLI, and holds no identity: it reads
 * `agent-chat.json` beside the extensions folder, which setup merges and doctor reads back.
 *
 * - Tools: starts the server that file names (`agent-chat mcp --as NAME`) and registers each
 *   tool it lists as a pi tool, calls passed through: the same tools, descriptions and results
 *   (the unread footer included) as every MCP host. pi asks before no tool call; a tool the
 *   server marks destructive (chat_workspace) is confirmed with the user, and refused where pi
 *   has no UI (`pi -p`), as the other hosts' first runs do.
 * - Hooks, in Claude Code's form by Claude Code's event names: SessionStart runs at pi's
 *   `session_start` and UserPromptSubmit at `before_agent_start`, whose plain stdout reaches the
 *   model as a message of the turn; Stop runs at `agent_end` and tells the user its
 *   `systemMessage`.
 * - Wake: a Stop hook marked `asyncRewake` (`hook wait`, `setup pi --wake`) is parked in the
 *   background after each turn where pi stays open; when it exits 2 its stderr, our fixed
 *   notice, starts a new turn (`pi.sendMessage` with `triggerTurn`). A new prompt ends it.
 *
 * Plain JavaScript that pi's loader runs as it is, with nothing but Node's own modules.
 */
export function piExtensionSource(configPath: string): string {
  return `${HEADER}\nconst CONFIG = ${JSON.stringify(configPath)};\n${BODY}`;
}

const HEADER = `// agent-chat for pi, written by \`agent-chat setup pi\` (run it again to update this file).
// Who you are and where the channels are: agent-chat.json (the path below). No identity here.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
`;

const BODY = String.raw`
const SERVER = "agent-chat";
const HOOK_TIMEOUT_MS = 10_000;
const WAKE_EXIT = 2;

export default async function agentChat(pi) {
  const config = JSON.parse(readFileSync(CONFIG, "utf8"));
  const entry = config.mcpServers?.[SERVER];
  const hooks = config.hooks ?? {};
  const server = entry ? await connect(entry) : undefined;
  for (const tool of server ? (await server.request("tools/list", {})).tools : []) {
    pi.registerTool(bridged(server, tool));
  }
  const session = { id: undefined, pending: "", wait: undefined };
  pi.on("session_start", async (_event, ctx) => {
    session.id = ctx.sessionManager.getSessionId();
    session.pending = await runHooks(hooks.SessionStart, "SessionStart", session);
  });
  pi.on("before_agent_start", async () => {
    stopWait(session);
    const notice = (session.pending + (await runHooks(hooks.UserPromptSubmit, "UserPromptSubmit", session))).trim();
    session.pending = "";
    if (notice !== "") return { message: { customType: SERVER, content: notice, display: true } };
  });
  pi.on("agent_end", async (_event, ctx) => {
    // Read now: under pi -p the session may be disposed (its ctx stale) while the hook runs.
    const ui = ctx.hasUI ? ctx.ui : undefined;
    if (ui) parkWait(pi, hooks.Stop, session);
    const told = await runHooks(hooks.Stop, "Stop", session, (h) => !h.asyncRewake);
    for (const line of told.split("\n").filter(Boolean)) tell(ui, line);
  });
  pi.on("session_shutdown", () => {
    stopWait(session);
    server?.close();
  });
}

function bridged(server, tool) {
  const destructive = tool.annotations?.destructiveHint === true;
  return {
    name: tool.name,
    label: tool.title ?? tool.name,
    description: tool.description ?? "",
    parameters: tool.inputSchema ?? { type: "object", properties: {} },
    async execute(_id, params, signal, _onUpdate, ctx) {
      if (destructive && !(await confirmed(ctx, tool.name))) {
        throw new Error("the user did not allow " + tool.name);
      }
      const result = await server.request("tools/call", { name: tool.name, arguments: params }, signal);
      const content = Array.isArray(result.content) ? result.content : [];
      if (result.isError) throw new Error(content.map((c) => c.text ?? "").join("\n"));
      return { content, details: {} };
    },
  };
}

async function confirmed(ctx, name) {
  if (!ctx.hasUI) return false;
  return ctx.ui.confirm("agent-chat", "Allow " + name + "? It can delete or overwrite a channel's files.");
}

function tell(ui, line) {
  let text = line;
  try {
    text = JSON.parse(line).systemMessage ?? "";
  } catch {}
  if (text === "") return;
  if (ui) ui.notify(text, "info");
  else process.stderr.write(text + "\n");
}

/** The commands of one event's hook groups (Claude Code's form), run in order; their stdout. */
async function runHooks(groups, event, session, wanted = () => true) {
  let out = "";
  for (const hook of commands(groups).filter(wanted)) {
    out += (await runCommand(hook, event, session, HOOK_TIMEOUT_MS)).stdout;
  }
  return out;
}

function commands(groups) {
  if (!Array.isArray(groups)) return [];
  return groups.flatMap((g) => (Array.isArray(g?.hooks) ? g.hooks : [])).filter((h) => typeof h?.command === "string");
}

function runCommand(hook, event, session, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn("/bin/sh", ["-c", hook.command], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, AGENT_CHAT_HOST_PID: String(process.pid) },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = timeoutMs ? setTimeout(() => child.kill(), timeoutMs) : undefined;
    child.on("error", () => resolve({ code: null, stdout, stderr }));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, child });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ hook_event_name: event, session_id: session.id }));
    if (!timeoutMs) session.wait = child;
  });
}

function parkWait(pi, groups, session) {
  const hook = commands(groups).find((h) => h.asyncRewake);
  if (!hook || session.wait) return;
  runCommand(hook, "Stop", session, 0).then(({ code, stderr, child }) => {
    if (session.wait === child) session.wait = undefined;
    const notice = stderr.trim();
    if (code !== WAKE_EXIT || notice === "") return;
    pi.sendMessage({ customType: SERVER, content: notice, display: true }, { triggerTurn: true, deliverAs: "followUp" });
  });
}

function stopWait(session) {
  session.wait?.kill();
  session.wait = undefined;
}

/** The MCP server over stdio: JSON-RPC, one message a line. */
async function connect(entry) {
  const child = spawn(entry.command, entry.args ?? [], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...(entry.env ?? {}) },
  });
  const waiting = new Map();
  let next = 1;
  let buffer = "";
  const send = (message) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
  child.stdin.on("error", () => {});
  child.on("exit", () => {
    for (const { reject } of waiting.values()) reject(new Error("the agent-chat server exited"));
    waiting.clear();
  });
  child.stdout.on("data", (data) => {
    buffer += data;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.trim() !== "") received(JSON.parse(line));
    }
  });
  function received(message) {
    if (message.method !== undefined) {
      // A request of the server's (a ping, a question): answered, none is needed here.
      if (message.id !== undefined) send(message.method === "ping" ? { id: message.id, result: {} } : { id: message.id, error: { code: -32601, message: "not supported" } });
      return;
    }
    const call = waiting.get(message.id);
    if (!call) return;
    waiting.delete(message.id);
    if (message.error) call.reject(new Error(message.error.message));
    else call.resolve(message.result);
  }
  function request(method, params, signal) {
    const id = next++;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      send({ id, method, params });
      signal?.addEventListener("abort", () => {
        send({ method: "notifications/cancelled", params: { requestId: id, reason: "aborted" } });
        waiting.delete(id);
        reject(new Error("aborted"));
      });
    });
  }
  await request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pi", version: "1" } });
  send({ method: "notifications/initialized" });
  return { request, close: () => child.kill() };
}
`;
