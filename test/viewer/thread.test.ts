import { describe, expect, it } from "vitest";
import type { ThreadPage } from "../../src/viewer/api-types.js";
import { viewerOn } from "./helpers.js";

/**
 * #1 root (archived), #2 and #4 reply to it, #3 unrelated, #5 replies to #2: the thread of any
 * of 1, 2, 4, 5 is 1 → (2 → 5), 4.
 */
describe("viewer: a thread beside the channel", () => {
  const on = viewerOn("agent-chat-viewer-thread-", async (writer) => {
    await writer.init("plan");
    await writer.post("plan", { from: "alice", title: "Schema v2", body: "Postgres?" });
    await writer.post("plan", { from: "bob", title: "Yes", body: "Postgres.", replyTo: 1 });
    await writer.post("plan", { from: "carol", title: "Lunch", body: "Pizza" });
    await writer.post("plan", { from: "dave", title: "Also yes", body: "Agreed.", replyTo: 1 });
    await writer.post("plan", { from: "alice", title: "Done", body: "Migrating.", replyTo: 2 });
    expect((await writer.archive("plan", { before: 2 })).moved).toEqual([1]);
  });
  const get = (path: string) => on.get(path);

  it("GET /api/channels/<ch>/thread/<seq>: root first, replies under what they answer", async () => {
    const res = await get("/api/channels/plan/thread/5");
    expect(res.status, res.body).toBe(200);
    const thread = JSON.parse(res.body) as ThreadPage;
    expect(thread.messages.map((e) => [e.message.seq, e.depth])).toEqual([
      [1, 0],
      [2, 1],
      [5, 2],
      [4, 1],
    ]);
    expect(thread.messages[0]!.message.archived).toBe(true);
    expect(thread.messages.slice(1).some((e) => e.message.archived)).toBe(false);
    expect((await get("/api/channels/plan/thread/99")).status).toBe(404);
    expect((await get("/api/channels/plan/thread/zero")).status).toBe(400);
    expect((await get("/api/channels/nope/thread/1")).status).toBe(404);
  });

  it("the page opens the thread beside the channel and closes it", async () => {
    const context = await on.browser.newContext();
    try {
      const p = await context.newPage();
      await p.goto(`${on.view.url}#/plan`);
      await p.waitForSelector('article.message[data-seq="5"]', { timeout: 15_000 });
      // An unrelated message has no thread to open.
      expect(await p.locator("#m-3 .thread-button").count()).toBe(0);
      await p.click("#m-5 .thread-button");
      await p.waitForSelector("#thread #t-1");
      const shown = await p.evaluate<Array<[number, number]>>(
        `[...document.querySelectorAll("#thread article.message")].map((e) => [Number(e.dataset.seq), Number(e.dataset.depth)])`,
      );
      expect(shown).toEqual([
        [1, 0],
        [2, 1],
        [5, 2],
        [4, 1],
      ]);
      expect(await p.locator("#t-1 .badge.archived").count()).toBe(1);
      expect(await p.locator("#t-5").getAttribute("class")).toContain("focus");
      expect(await p.locator("#details").isVisible()).toBe(false);
      await p.click("#thread .close-thread");
      await p.waitForSelector("#thread", { state: "hidden" });
      expect(await p.locator("#details").isVisible()).toBe(true);
    } finally {
      await context.close();
    }
  });
});
