import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it, vi } from "vitest";
import { openStore } from "../../src/client/open.js";
import { agentFixture, initChannels } from "./client.js";

/*
 * `agent-chat mcp --channel-push` with a real MCP client (the SDK's, over stdio, as Claude Code
 * connects): the capability Claude Code looks for, and one `notifications/claude/channel` per
 * new message for the agent.
 */

const fixture = agentFixture();

interface Pushed {
  content: string;
  meta: Record<string, string>;
}

/** Every channel notification the client receives, in order. */
function collectPushes(client: Client): Pushed[] {
  const pushed: Pushed[] = [];
  client.fallbackNotificationHandler = async (notification) => {
    if (notification.method === "notifications/claude/channel") {
      pushed.push(notification.params as unknown as Pushed);
    }
  };
  return pushed;
}

async function post(channel: string, from: string, body: string, to?: string): Promise<number> {
  const store = await openStore(fixture.root(), { watch: false });
  try {
    return (await store.post(channel, to ? { from, body, to } : { from, body })).seq;
  } finally {
    await store.close();
  }
}

const until = (pushed: Pushed[], n: number) =>
  vi.waitFor(
    () => {
      if (pushed.length < n) throw new Error(`${pushed.length} of ${n} notifications`);
    },
    { timeout: 15_000, interval: 20 },
  );

describe("agent-chat mcp --channel-push", () => {
  it("declares experimental claude/channel and sends exactly one notification per new message for the agent", async () => {
    await post("review", "bob", "before the server started", "alice");
    const alice = await fixture.agent("alice", ["--channel-push"]);
    expect(alice.client.getServerCapabilities()?.experimental).toEqual({ "claude/channel": {} });
    const pushed = collectPushes(alice.client);
    // A tool call proves the server is up and initialised before anything is posted.
    expect((await alice.call("chat_channels")).text).toContain("review");

    const first = await post("review", "bob", "# Review?\n\nPR 7 is ready", "alice");
    await until(pushed, 1);
    expect(pushed[0]).toEqual({
      content: `New agent-chat message from bob in review (#${first}). Read it with chat_read.`,
      meta: { channel: "review", seq: String(first), from: "bob" },
    });
    // Not for alice: her own message, one addressed to someone else. Then one for her again.
    await post("review", "alice", "my own");
    await post("review", "bob", "for carol", "carol");
    const next = await post("review", "bob", "for everyone");
    await until(pushed, 2);
    // A channel created after the server started is watched too.
    await initChannels(fixture.root(), { deploy: ["alice", "bob"] });
    const later = await post("deploy", "bob", "in the new channel", "alice");
    await until(pushed, 3);
    expect(pushed.map((p) => [p.meta.channel, p.meta.seq])).toEqual([
      ["review", String(first)],
      ["review", String(next)],
      ["deploy", String(later)],
    ]);
    // Nothing was read for her: pushing moves no cursor.
    const read = await alice.call("chat_read", { channel: "review" });
    expect(read.text).toContain("before the server started");
  });

  it("a burst of messages: each pushed once, in order", async () => {
    const alice = await fixture.agent("alice", ["--channel-push"]);
    const pushed = collectPushes(alice.client);
    await alice.call("chat_channels");
    const store = await openStore(fixture.root(), { watch: false });
    const seqs: string[] = [];
    try {
      for (let i = 0; i < 50; i++) {
        seqs.push(String((await store.post("review", { from: "bob", body: `m${i}` })).seq));
      }
    } finally {
      await store.close();
    }
    await until(pushed, 50);
    expect(pushed.map((p) => p.meta.seq)).toEqual(seqs);
    // One more, to show nothing else was queued behind the burst.
    const last = await post("review", "bob", "after the burst");
    await until(pushed, 51);
    expect(pushed.map((p) => p.meta.seq).slice(50)).toEqual([String(last)]);
  });

  it("without --channel-push the server declares no channel capability", async () => {
    const alice = await fixture.agent("alice");
    expect(alice.client.getServerCapabilities()?.experimental).toBeUndefined();
  });
});
