import { describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { MCP_READ_LIMIT } from "../../src/mcp/bounded.js";
import { agentFixture } from "./client.js";

const fixture = agentFixture();

/** Posts to `review` as alice with the library, as another process would. */
async function post(root: string, bodies: string[]): Promise<void> {
  const store = await openStore(root, { watch: false });
  try {
    for (const body of bodies) await store.post("review", { from: "alice", to: "bob", body });
  } finally {
    await store.close();
  }
}

// A tool result lands whole in the model's context (issue 44, item 5; docs/mcp.md).
describe("an MCP read result is bounded", () => {
  it("a 1 MiB post is returned cut, saying where the whole is; the cursor moves past it", async () => {
    const huge = `start ${"x".repeat(1024 * 1024 - 20)} end`;
    await post(fixture.root(), [huge, "after it"]);
    const bob = await fixture.agent("bob");
    const first = await bob.call("chat_read", { channel: "review" });
    expect(first.text.length).toBeLessThan(MCP_READ_LIMIT.bytes + 4096);
    expect(first.text).toContain("│ start xxx");
    expect(first.text).not.toContain(" end");
    expect(first.text).toMatch(/more bytes of #1 not shown: .*agent-chat read review --thread 1/);
    // Within the bound nothing more fits: #2 waits behind the cursor, said so, for the next call.
    expect(first.text).toContain("1 more message for you not returned");
    expect(first.text).toContain("call chat_read again for the next ones");
    const second = await bob.call("chat_read", { channel: "review" });
    expect(second.text).toContain("│ after it");
    expect(second.text).not.toContain("#1");
    expect((await bob.call("chat_read", { channel: "review" })).text).toBe("No new messages.");
  });

  it("at most N messages per call, the rest on the next call: none lost, none twice", async () => {
    const total = MCP_READ_LIMIT.messages + 7;
    await post(
      fixture.root(),
      Array.from({ length: total }, (_, i) => `note ${i + 1}`),
    );
    const bob = await fixture.agent("bob");
    const peeked = await bob.call("chat_read", { channel: "review", peek: true });
    expect(peeked.text).toContain("7 more messages for you not returned");
    expect(peeked.text).toContain("call chat_read without peek");
    const first = await bob.call("chat_read", { channel: "review" });
    const second = await bob.call("chat_read", { channel: "review" });
    const seqs = (text: string) =>
      [...text.matchAll(/── review #(\d+) /g)].map((m) => Number(m[1]));
    expect(seqs(first.text)).toEqual(
      Array.from({ length: MCP_READ_LIMIT.messages }, (_, i) => i + 1),
    );
    expect(first.text).toContain("7 more messages for you not returned");
    expect(seqs(second.text)).toEqual(
      Array.from({ length: 7 }, (_, i) => MCP_READ_LIMIT.messages + i + 1),
    );
    expect(second.text).not.toContain("not returned");
  });

  it("chat_wait is bounded the same way", async () => {
    await post(
      fixture.root(),
      Array.from({ length: MCP_READ_LIMIT.messages + 2 }, (_, i) => `w${i}`),
    );
    const bob = await fixture.agent("bob");
    const waited = await bob.call("chat_wait", { channels: ["review"], timeout_seconds: 5 });
    expect([...waited.text.matchAll(/── review #/g)]).toHaveLength(MCP_READ_LIMIT.messages);
    expect(waited.text).toContain("2 more messages for you not returned");
    const rest = await bob.call("chat_read", { channel: "review" });
    expect([...rest.text.matchAll(/── review #/g)]).toHaveLength(2);
  });
});
