import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, seedConversation, startView } from "./helpers.js";

/** The viewer's search box (docs/search.md) in headless Chromium. */
describe("web viewer: search box", () => {
  const tmp = tempDir("agent-chat-viewer-search-");
  let view: RunningViewer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await seedConversation(tmp.dir);
    view = await startView(tmp.dir);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    page.on("pageerror", (e) => pageErrors.push(e.message));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    tmp.cleanup();
  });

  it("lists the newest matches with the match marked; a hit opens its message", async () => {
    await page.goto(view.url);
    await page.waitForSelector('[data-channel="review"]');
    await page.fill("#search-input", "thread");
    await page.press("#search-input", "Enter");
    await page.waitForSelector("#search-results li");
    const where = await page.locator("#search-results .search-where").allTextContents();
    expect(where[0]).toBe("review #2 · bob");
    expect(await page.locator("#search-results li mark").first().textContent()).toBe("thread");
    expect(await page.locator("#search-results").textContent()).not.toMatch(/[⟦⟧]/);
    await page.locator("#search-results li a").first().click();
    await expect.poll(() => page.locator("#m-2").getAttribute("class")).toContain("flash");
    expect(page.url()).toBe(`${view.url}#/review/2`);
    expect(await page.locator("#search-results").isHidden()).toBe(true);
  });

  it("marks the match in a hit's title too", async () => {
    await page.fill("#search-input", "draft");
    await page.press("#search-input", "Enter");
    await page.waitForSelector("#search-results .search-title mark");
    const titles = await page.locator("#search-results .search-title mark").allTextContents();
    expect(titles).toContain("Draft");
  });

  it("shows a bad query's error and an empty result as text, never markup", async () => {
    await page.fill("#search-input", '"" <img src=x onerror=alert(1)>');
    await page.press("#search-input", "Enter");
    await expect
      .poll(() => page.locator("#search-results .search-note").textContent())
      .toBe("No messages match.");
    expect(await page.locator("#search-results img").count()).toBe(0);
    await page.fill("#search-input", "x".repeat(1_200));
    await page.press("#search-input", "Enter");
    await expect
      .poll(() => page.locator("#search-results .search-note.error").textContent())
      .toContain("at most 1000");
    expect(pageErrors).toEqual([]);
  });
});
