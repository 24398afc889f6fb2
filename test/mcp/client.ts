import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeEach } from "vitest";
import { openStore } from "../../src/client/open.js";
import { CLI } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

export interface Agent {
  client: Client;
  stderr: () => string;
  close: () => Promise<void>;
  /** Calls a tool; returns the text before the footer, the footer, and isError. */
  call(name: string, args?: Record<string, unknown>, signal?: AbortSignal): Promise<ToolReply>;
}

export interface ToolReply {
  text: string;
  footer: string;
  isError: boolean;
  blocks: number;
}

/**
 * Starts the built `agent-chat mcp` as a subprocess, as an agent tool does, and connects.
 * `name` null starts it without an identity (no --as, no $AGENT_CHAT_NAME).
 */
export async function connectAgent(
  root: string,
  name: string | null,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<Agent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp", ...(name === null ? [] : ["--as", name]), ...extraArgs],
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME ?? "",
      AGENT_CHAT_ROOT: root,
      ...extraEnv,
    },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const client = new Client({ name: `test-${name ?? "nameless"}`, version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    stderr: () => stderr,
    close: () => client.close(),
    async call(tool, args = {}, signal) {
      const result = await client.callTool(
        { name: tool, arguments: args },
        undefined,
        signal ? { signal } : undefined,
      );
      const blocks = (result.content as Array<{ type: string; text: string }>).map((c) => c.text);
      return {
        text: blocks.slice(0, -1).join("\n"),
        footer: blocks.at(-1) ?? "",
        isError: result.isError === true,
        blocks: blocks.length,
      };
    },
  };
}

/** The agent-chat footer's JSON. */
export function footerJson(footer: string): {
  chat: { msgs: number; channels: Record<string, number>; owes?: number };
} {
  const m = /^<agent-chat>(.*)<\/agent-chat>$/.exec(footer);
  if (!m) throw new Error(`not an agent-chat footer: ${footer}`);
  return JSON.parse(m[1]!);
}

/** Creates channels (name → members; empty = open) with the library, before any server starts. */
export async function initChannels(
  root: string,
  channels: Record<string, string[]>,
): Promise<void> {
  const store = await openStore(root, { watch: false });
  try {
    for (const [name, members] of Object.entries(channels)) await store.init(name, { members });
  } finally {
    await store.close();
  }
}

/**
 * A fresh root per test holding the channel `review` (members alice, bob), and the MCP agents
 * connected to it, closed after each test. `root()` is that test's root.
 */
export function agentFixture(): {
  root: () => string;
  agent: (name: string | null, extra?: string[], env?: Record<string, string>) => Promise<Agent>;
} {
  let root = "";
  let cleanup: () => void = () => {};
  const agents: Agent[] = [];
  beforeEach(async () => {
    ({ dir: root, cleanup } = tempDir("agent-chat-mcp-"));
    await initChannels(root, { review: ["alice", "bob"] });
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close().catch(() => {})));
    cleanup();
  });
  return {
    root: () => root,
    agent: async (name, extra = [], env = {}) => {
      const a = await connectAgent(root, name, extra, env);
      agents.push(a);
      return a;
    },
  };
}
