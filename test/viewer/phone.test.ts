import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, seedConversation, startView } from "./helpers.js";

/**
 * The viewer on a phone 390 px wide, checked by layout: each message's sender, recipients and
 * status are each on one line, and nothing in its header covers anything else; the top bar is
 * one row. The screenshot is kept in a temporary folder, for a person to look at.
 */
describe("the web viewer at 390 px", () => {
  const tmp = tempDir("agent-chat-viewer-phone-");
  let view: RunningViewer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    await seedConversation(tmp.dir);
    const store = new FsStore(tmp.dir);
    try {
      // Long names and a long status: what wrapped over three lines and slid under the chip.
      await store.post("review", {
        from: "frontend-agent",
        to: "bob,carol,release-manager",
        status: "needs-approval",
        title: "Ship the index",
        body: "Ready when you are.",
      });
    } finally {
      await store.close();
    }
    [view, browser] = await Promise.all([startView(tmp.dir), launchChromium()]);
    page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    await page.goto(`${view.url}#/review`);
    await page.waitForSelector('article.message[data-seq="5"]');
    const shots = mkdtempSync(join(tmpdir(), "agent-chat-phone-"));
    await page.evaluate(`document.querySelector('article.message[data-seq="4"]').scrollIntoView()`);
    await page.screenshot({ path: join(shots, "viewer-390.png") });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    tmp.cleanup();
  });

  /** Per message header: each part's box, and how many lines of its own text it takes. */
  const headers = () =>
    page.evaluate(`[...document.querySelectorAll("article.message > header")].map((header) =>
      [...header.querySelectorAll(".seq, .from, .arrow, .to, .status, time, button")].map((el) => {
        const box = el.getBoundingClientRect();
        const line = parseFloat(getComputedStyle(el).lineHeight);
        return {
          part: el.className || el.tagName,
          text: el.textContent,
          box: { left: box.left, right: box.right, top: box.top, bottom: box.bottom },
          lines: Math.round(box.height / line),
          rects: el.getClientRects().length,
        };
      }))`) as Promise<Array<Array<Part>>>;

  interface Part {
    part: string;
    text: string;
    box: { left: number; right: number; top: number; bottom: number };
    lines: number;
    rects: number;
  }

  const overlap = (a: Part["box"], b: Part["box"]) =>
    a.left < b.right - 0.5 &&
    b.left < a.right - 0.5 &&
    a.top < b.bottom - 0.5 &&
    b.top < a.bottom - 0.5;

  it("shows each message's sender, recipients and status on one line each", async () => {
    const all = await headers();
    expect(all.length).toBe(5);
    for (const parts of all) {
      for (const p of parts.filter((x) => /from|to|status/.test(x.part))) {
        expect({ ...p, box: undefined }).toMatchObject({ lines: 1, rects: 1 });
      }
    }
  });

  it("covers nothing in a message's header with anything else", async () => {
    for (const parts of await headers()) {
      for (const [i, a] of parts.entries()) {
        for (const b of parts.slice(i + 1)) {
          expect(overlap(a.box, b.box), `${a.part} "${a.text}" and ${b.part} "${b.text}"`).toBe(
            false,
          );
        }
        expect(a.box.right, `${a.part} within the screen`).toBeLessThanOrEqual(390);
      }
    }
  });

  it("keeps the top bar on one row, within the screen", async () => {
    const bar = (await page.evaluate(`(() => {
      const top = document.querySelector(".top").getBoundingClientRect();
      return [...document.querySelectorAll(".top > *")].filter((el) => !el.hidden).map((el) => {
        const box = el.getBoundingClientRect();
        const lines = Math.round(box.height / parseFloat(getComputedStyle(el).lineHeight));
        return { part: el.className, top: box.top, bottom: box.bottom, right: box.right, barTop: top.top, barBottom: top.bottom, lines };
      });
    })()`)) as Array<{
      part: string;
      top: number;
      bottom: number;
      right: number;
      barTop: number;
      barBottom: number;
      lines: number;
    }>;
    expect(bar.length).toBeGreaterThan(2);
    for (const p of bar) {
      expect(p.top, p.part).toBeGreaterThanOrEqual(p.barTop);
      expect(p.bottom, p.part).toBeLessThanOrEqual(p.barBottom);
      expect(p.right, p.part).toBeLessThanOrEqual(390);
      if (p.part !== "search") expect(p.lines, p.part).toBe(1);
    }
  });
});
