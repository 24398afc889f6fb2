import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { openStore } from "../src/client/open.js";
import { type BenchContext, type BenchModule, type Row, sample, stats } from "./lib.js";

/** Peers' MCP servers for agent chat spend ~25,000 tokens on their tool list; ours aims at 10%. */
const TOOLS_TOKEN_GOAL = 2_500;

async function connect(ctx: BenchContext, root: string, agent: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ctx.cli, "mcp", "--as", agent],
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", AGENT_CHAT_ROOT: root },
  });
  const client = new Client({ name: `bench-${agent}`, version: "1.0.0" });
  await client.connect(transport);
  return client;
}

export const mcpBench: BenchModule = {
  name: "mcp",
  async run(ctx) {
    const root = ctx.tmp();
    const store = await openStore(root);
    await store.init("review", { members: ["alice", "bob"] });
    await store.init("lobby");
    const rows: Row[] = [];

    const started = process.hrtime.bigint();
    const alice = await connect(ctx, root, "alice");
    const startMs = Number(process.hrtime.bigint() - started) / 1e6;
    const bob = await connect(ctx, root, "bob");
    try {
      const list = await alice.listTools();
      const chars = JSON.stringify(list).length;
      const tokens = Math.ceil(chars / 4);
      rows.push({
        group: "mcp",
        figure: `tools/list size (${list.tools.length} tools, ${chars} characters)`,
        unit: "tokens",
        stats: stats([tokens]),
        goal: `≤ ${TOOLS_TOKEN_GOAL} tokens (chars/4)`,
        met: tokens <= TOOLS_TOKEN_GOAL,
        note: "peers spend ~25,000",
      });
      rows.push({
        group: "mcp",
        figure: "server start (spawn to initialized)",
        unit: "ms",
        stats: stats([startMs]),
        note: "one sample; loads the MCP SDK",
      });

      const n = ctx.quick ? 60 : 400;
      let i = 0;
      const postMcp = await sample(n, () =>
        alice.callTool({
          name: "chat_post",
          arguments: { channel: "review", to: "bob", body: `mcp message ${i++}` },
        }),
      );
      const postLib = await sample(n, () =>
        store.post("review", { from: "alice", to: "bob", body: `library message ${i++}` }),
      );
      rows.push({
        group: "mcp",
        figure: "tool call round trip: chat_post",
        unit: "ms",
        stats: stats(postMcp),
        baseline: { name: "store.post in process", stats: stats(postLib) },
        note: "includes the unread footer count",
      });

      // Each read finds the one message posted just before it, as an agent in a conversation does.
      const readMcp: number[] = [];
      const readLib: number[] = [];
      for (let k = 0; k < n; k++) {
        await store.post("review", { from: "alice", to: "bob", body: `for bob ${k}` });
        let t0 = process.hrtime.bigint();
        await bob.callTool({ name: "chat_read", arguments: { channel: "review" } });
        readMcp.push(Number(process.hrtime.bigint() - t0) / 1e6);
        await store.post("review", { from: "bob", to: "alice", body: `for alice ${k}` });
        t0 = process.hrtime.bigint();
        await store.read("review", { as: "alice" });
        readLib.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      rows.push({
        group: "mcp",
        figure: "tool call round trip: chat_read (1 new message)",
        unit: "ms",
        stats: stats(readMcp),
        baseline: { name: "store.read in process", stats: stats(readLib) },
      });
    } finally {
      await alice.close();
      await bob.close();
    }

    await store.close();
    return rows;
  },
};

export default mcpBench;
