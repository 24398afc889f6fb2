import { describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/index.js";
import { agentFixture, initChannels } from "./client.js";

const fixture = agentFixture();

/** chat_read's search and thread parameters (docs/search.md): no new tool, no cursor moves. */
describe("chat_read search and thread", () => {
  it("finds messages in the agent's channels, newest first, moving no cursor", async () => {
    await initChannels(fixture.root(), { secret: ["carol"] });
    const alice = await fixture.agent("alice");
    const bob = await fixture.agent("bob");
    const carol = await fixture.agent("carol");
    await alice.call("chat_post", { channel: "review", title: "Schema", body: "Use Postgres 16." });
    await bob.call("chat_post", { channel: "review", body: "Postgres ok", reply_to: 1 });
    await carol.call("chat_post", { channel: "secret", body: "postgres password rotation" });
    const found = await bob.call("chat_read", { search: "postgres" });
    expect(found.isError).toBe(false);
    expect(found.text).toMatch(
      /^── review #2 · from bob · .*\n⟦Postgres⟧ ok\n⟦Postgres⟧ ok\n\n── review #1 /,
    );
    expect(found.text).not.toContain("secret"); // not bob's channel
    const read = await bob.call("chat_read", { channel: "review" });
    expect(read.text).toContain("review #1 · from alice"); // the search moved no cursor
    const thread = await alice.call("chat_read", { channel: "review", thread: 2 });
    expect(thread.text).toMatch(/review #1 [\s\S]*review #2 /);
    const bad = await alice.call("chat_read", { search: "   " });
    expect(bad.isError).toBe(true);
    expect(bad.text).toContain("search query is empty");
  });

  it("thread reaches archived messages, and a missing one's error names no CLI flag", async () => {
    const alice = await fixture.agent("alice");
    await alice.call("chat_post", { channel: "review", body: "old question" });
    await alice.call("chat_post", { channel: "review", body: "old answer", reply_to: 1 });
    await alice.call("chat_post", { channel: "review", body: "newest" });
    const store = new FsStore(fixture.root());
    expect((await store.archive!("review", { before: 3 })).moved).toEqual([1, 2]);
    await store.close();
    const thread = await alice.call("chat_read", { channel: "review", thread: 2 });
    expect(thread.isError).toBe(false);
    expect(thread.text).toMatch(/review #1 [\s\S]*old question[\s\S]*review #2 /);
    const missing = await alice.call("chat_read", { channel: "review", thread: 99 });
    expect(missing.isError).toBe(true);
    expect(missing.text).toMatch(/^Error NOT_FOUND: no message 99 in review/);
    expect(missing.text).not.toMatch(/--[a-z]/);
  });

  it("tools/list stays at most 8 tools and 2,500 tokens", async () => {
    const alice = await fixture.agent("alice");
    const list = await alice.client.listTools();
    expect(list.tools.length).toBeLessThanOrEqual(8);
    const read = list.tools.find((t) => t.name === "chat_read")!;
    expect(Object.keys(read.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["search", "thread"]),
    );
    expect(Math.ceil(JSON.stringify(list).length / 4)).toBeLessThanOrEqual(2_500);
  });
});
