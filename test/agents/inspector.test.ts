import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";

/*
 * The MCP Inspector's CLI mode (the devDependency @modelcontextprotocol/inspector), a client
 * that is not an agent tool: it loads the .mcp.json that `setup claude-code --write` writes for
 * the team, with the identity of .claude/settings.local.json, lists the tools and calls one.
 */

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox("agent-chat-inspector-");
});
afterEach(() => sandbox.cleanup());

describe("MCP Inspector --cli on the .mcp.json setup writes", () => {
  it("lists every tool with its annotations and posts as the identity of the local settings", async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    expect(
      (await sandbox.agentChat(["setup", "claude-code", "--as", "alice", "--write"])).code,
    ).toBe(0);
    const local = JSON.parse(
      readFileSync(join(sandbox.project, ".claude", "settings.local.json"), "utf8"),
    ) as { env: Record<string, string> };
    const inspect = (...args: string[]) =>
      runTool(
        sandbox,
        toolBinary("mcp-inspector"),
        [
          "--cli",
          "--config",
          ".mcp.json",
          "--server",
          "agent-chat",
          ...Object.entries(local.env).flatMap(([key, value]) => ["-e", `${key}=${value}`]),
          ...args,
        ],
        // No keychain here: secrets (there are none) stay in memory.
        { env: { MCP_INSPECTOR_SECRET_STORE: "memory" } },
      );

    const list = await inspect("--method", "tools/list");
    expect(list.code, list.stderr).toBe(0);
    const tools = JSON.parse(list.stdout).tools as { name: string; annotations?: object }[];
    expect(tools.map((t) => t.name).sort()).toEqual([
      "chat_channels",
      "chat_create_channel",
      "chat_post",
      "chat_read",
      "chat_tasks",
      "chat_wait",
      "chat_workspace",
    ]);
    expect(tools.every((t) => t.annotations !== undefined)).toBe(true);

    const call = await inspect(
      "--method",
      "tools/call",
      "--tool-name",
      "chat_post",
      "--tool-arg",
      "channel=general",
      "--tool-arg",
      "body=from the inspector",
    );
    expect(call.code, call.stderr).toBe(0);
    const [posted, footer] = JSON.parse(call.stdout).content.map((c: { text: string }) => c.text);
    expect(posted).toBe("Posted #1 to general.");
    expect(footer).toMatch(/^<agent-chat>\{"chat":\{"msgs":0\b.*<\/agent-chat>$/);
    const [message] = await sandbox.messages("general");
    expect(message).toMatchObject({ from: "alice", body: "from the inspector" });
  }, 60_000);
});
