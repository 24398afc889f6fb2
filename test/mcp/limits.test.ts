import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { CLI } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "./client.js";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanups.splice(0)) f();
});

/** Peak and current resident memory of a process in MiB (Linux). */
function memory(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)![1]);
  return { peak: kb("VmHWM") / 1024, now: kb("VmRSS") / 1024 };
}

/** `agent-chat mcp` as a raw child: JSON-RPC lines in, parsed lines out. */
function startMcp(root: string) {
  const child = spawn(process.execPath, [CLI, "mcp", "--as", "bob"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME ?? "",
      AGENT_CHAT_ROOT: root,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  cleanups.push(() => child.kill("SIGKILL"));
  child.stdin.on("error", () => {});
  let out = "";
  let stderr = "";
  const lines: Array<Record<string, unknown>> = [];
  let wake: (() => void) | undefined;
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    let nl = out.indexOf("\n");
    while (nl !== -1) {
      lines.push(JSON.parse(out.slice(0, nl)) as Record<string, unknown>);
      out = out.slice(nl + 1);
      nl = out.indexOf("\n");
    }
    wake?.();
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code) => resolve(code)),
  );
  return {
    child,
    exited,
    stderr: () => stderr,
    /** The answer with this id; rejects if the server exits first or after 20 s. */
    async answer(id: number | null): Promise<Record<string, unknown>> {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const found = lines.find((l) => l.id === id);
        if (found) return found;
        if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`no answer to ${id}: ${stderr}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 200);
        });
      }
    },
    send(value: unknown): void {
      child.stdin.write(`${JSON.stringify(value)}\n`);
    },
  };
}

describe("agent-chat mcp and oversized input", () => {
  it("answers a 200 MB line with a JSON-RPC error, never holds it, and keeps serving", async () => {
    const tmp = tempDir("agent-chat-mcp-limit-");
    cleanups.push(tmp.cleanup);
    await initChannels(tmp.dir, { ch: [] });
    const mcp = startMcp(tmp.dir);
    mcp.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      },
    });
    expect(await mcp.answer(1)).toHaveProperty("result");
    mcp.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const before = memory(mcp.child.pid!);

    // 200 MB in 1 MiB writes, each waiting for the pipe: the server reads it as it comes.
    const head =
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chat_post","arguments":{"channel":"ch","body":"';
    const piece = "x".repeat(1024 * 1024);
    const write = (text: string) =>
      new Promise<void>((resolve) => {
        if (mcp.child.stdin.write(text)) resolve();
        else mcp.child.stdin.once("drain", resolve);
        void mcp.exited.then(() => resolve());
      });
    await write(head);
    for (let i = 0; i < 200; i++) await write(piece);
    await write('"}}}\n');

    const refused = await mcp.answer(7);
    expect(refused).toMatchObject({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32600, message: expect.stringContaining("longer than") },
    });
    expect(mcp.stderr()).toContain("message refused");

    // Still serving: the next request is answered, and nothing was posted.
    mcp.send({
      jsonrpc: "2.0",
      id: 8,
      method: "tools/call",
      params: { name: "chat_channels", arguments: {} },
    });
    expect(await mcp.answer(8)).toHaveProperty("result");
    const after = memory(mcp.child.pid!);
    // Holding the line would cost 200 MiB or more. Not holding it, the peak still grows by the
    // pipe's chunks not yet collected, which V8 leaves until their external memory passes its
    // own threshold (about 64 MiB): 30 MiB measured on Node 20, 56 MiB on Node 26.
    expect(
      after.peak - before.now,
      `peak grew by ${(after.peak - before.now).toFixed(0)} MiB`,
    ).toBeLessThan(100);

    // A line that is not JSON gets the JSON-RPC parse error, and the session goes on.
    mcp.child.stdin.write("{oops\n");
    expect(await mcp.answer(null)).toMatchObject({ error: { code: -32700 } });
    mcp.send({ jsonrpc: "2.0", id: 9, method: "tools/list" });
    expect(await mcp.answer(9)).toHaveProperty("result");
    mcp.child.stdin.end();
    expect(await mcp.exited).toBe(0);
  });
});

describe("agent-chat mcp and invalid params", () => {
  it("answers -32602 with a readable message, never -32603 with a raw schema dump", async () => {
    const tmp = tempDir("agent-chat-mcp-params-");
    cleanups.push(tmp.cleanup);
    await initChannels(tmp.dir, { ch: [] });
    const mcp = startMcp(tmp.dir);
    mcp.send({ jsonrpc: "2.0", id: 1, method: "initialize" });
    const bare = (await mcp.answer(1)).error as { code: number; message: string };
    expect(bare.code).toBe(-32602);
    expect(bare.message).toBe(
      "invalid params of initialize: params: expected object, received undefined",
    );

    mcp.send({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: 5 } });
    const wrong = (await mcp.answer(2)).error as { code: number; message: string };
    expect(wrong.code).toBe(-32602);
    expect(wrong.message).toMatch(
      /^invalid params of initialize: params\.protocolVersion: expected string, received number; params\.capabilities: expected object/,
    );
    expect(wrong.message).not.toMatch(/[[{\n]/);

    mcp.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: {} } });
    const call = (await mcp.answer(3)).error as { code: number; message: string };
    expect(call).toEqual({
      code: -32602,
      message: "invalid params of tools/call: params.name: expected string, received undefined",
    });

    // A good initialize still works after them: the session was never in a bad state.
    mcp.send({
      jsonrpc: "2.0",
      id: 4,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      },
    });
    expect(await mcp.answer(4)).toHaveProperty("result.serverInfo");
    mcp.child.stdin.end();
    expect(await mcp.exited).toBe(0);
  });
});
