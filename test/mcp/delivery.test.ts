import { describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { agentFixture, footerJson } from "./client.js";

const fixture = agentFixture();

/**
 * Delivery through a real MCP session (docs/delivery.md): the footer tells bob what waits
 * (notified), chat_read returns it (read), chat_post with reply_to answers it (answered), and
 * `receipts` shows the three steps with their times, in order.
 */
describe("delivery states through an MCP session", () => {
  it("notified by the footer, read by chat_read, answered by chat_post; receipts shows each", async () => {
    const bob = await fixture.agent("bob");
    const store = await openStore(fixture.root(), { watch: false });
    try {
      const { seq } = await store.post("review", {
        from: "alice",
        to: "bob",
        status: "question",
        body: "Which schema, v1 or v2?",
      });
      expect((await store.receipts("review", seq)).addressees[0]?.state).toBe("stored");

      const listed = await bob.call("chat_channels");
      expect(footerJson(listed.footer).chat).toMatchObject({ msgs: 1, owes: 1 });
      expect(listed.text).toMatch(/you owe an answer to #1/);
      expect(listed.text).toMatch(/alice \(active\)/);
      const notified = (await store.receipts("review", seq)).addressees[0]!;
      expect(notified).toMatchObject({ agent: "bob", state: "notified" });

      await bob.call("chat_read", { channel: "review" });
      const read = (await store.receipts("review", seq)).addressees[0]!;
      expect(read.state).toBe("read");

      const answer = await bob.call("chat_post", {
        channel: "review",
        body: "v2",
        reply_to: seq,
        to: "alice",
      });
      expect(footerJson(answer.footer).chat.owes).toBeUndefined();
      const done = (await store.receipts("review", seq)).addressees[0]!;
      expect(done).toMatchObject({ state: "answered", answer: seq + 1 });
      const times = [done.notifiedAt, done.readAt, done.answeredAt].map((t) => Date.parse(t!));
      expect(times.every(Number.isFinite)).toBe(true);
      // Message times have a second's precision, the steps milliseconds: shown in order anyway.
      expect(times[0]!).toBeLessThanOrEqual(times[1]!);
      expect(times[1]!).toBeLessThanOrEqual(times[2]!);

      const who = await store.who("review");
      expect(who.find((p) => p.agent === "bob")).toMatchObject({ state: "active", harness: "mcp" });
    } finally {
      await store.close();
    }
  });
});
