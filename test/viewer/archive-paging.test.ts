import { describe, expect, it } from "vitest";
import type { MessagesPage } from "../../src/viewer/api-types.js";
import { viewerOn } from "./helpers.js";

/** A channel of 300 messages whose first 250 were archived (`agent-chat archive`). */
const TOTAL = 300;
const ARCHIVED = 250;

describe("viewer on an archived channel: pages reach into the archive", () => {
  const on = viewerOn("agent-chat-viewer-archive-", async (writer) => {
    await writer.init("old");
    for (let i = 1; i <= TOTAL; i++) {
      await writer.post("old", { from: "alice", title: `note ${i}`, body: `body ${i}` });
    }
    expect((await writer.archive("old", { before: ARCHIVED + 1 })).moved).toHaveLength(ARCHIVED);
  });

  const page = async (query: string): Promise<MessagesPage> => {
    const res = await on.get(`/api/channels/old/messages${query}`);
    expect(res.status, res.body).toBe(200);
    return JSON.parse(res.body) as MessagesPage;
  };
  const seqs = (p: MessagesPage) => p.messages.map((m) => m.seq);
  const range = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, k) => from + k);

  it("counts the archived messages as earlier ones and pages through them, marked", async () => {
    // A page within the hot messages does not read the archive, yet counts what lies in it.
    const newest = await page("?limit=20");
    expect(seqs(newest)).toEqual(range(TOTAL - 19, TOTAL));
    expect(newest).toMatchObject({ hasEarlier: true, earlierCount: TOTAL - 20, total: TOTAL });
    expect(newest.messages.some((m) => m.archived)).toBe(false);
    // Past the hot messages, the page goes on into the archive.
    const across = await page(`?before=${TOTAL - 19}&limit=100`);
    expect(seqs(across)).toEqual(range(TOTAL - 119, TOTAL - 20));
    expect(across.messages.filter((m) => m.archived).map((m) => m.seq)).toEqual(
      range(TOTAL - 119, ARCHIVED),
    );
    expect(across).toMatchObject({ hasEarlier: true, earlierCount: TOTAL - 120 });
    const first = await page(`?before=${TOTAL - 119}&limit=1000`);
    expect(seqs(first)).toEqual(range(1, TOTAL - 120));
    expect(first.messages.every((m) => m.archived)).toBe(true);
    expect(first).toMatchObject({ hasEarlier: false, earlierCount: 0, total: TOTAL });
  });

  it("the page shows earlier messages from the archive, with an archived badge", async () => {
    const context = await on.browser.newContext();
    try {
      const p = await context.newPage();
      await p.goto(`${on.view.url}#/old`);
      await p.waitForSelector(`article.message[data-seq="${TOTAL}"]`, { timeout: 15_000 });
      expect(await p.locator(`#m-${TOTAL} .badge.archived`).count()).toBe(0);
      while ((await p.locator("#m-1").count()) === 0) {
        await p.click("#show-earlier");
        await p.waitForSelector("#show-earlier:not([disabled]), #m-1", { timeout: 10_000 });
      }
      expect(await p.locator("#m-1 .badge.archived").textContent()).toBe("archived");
      expect(await p.locator("#earlier").count()).toBe(0);
      expect(await p.locator("article.message").count()).toBe(TOTAL);
    } finally {
      await context.close();
    }
  });
});
