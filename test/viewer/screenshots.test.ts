import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, seedConversation, startView } from "./helpers.js";

describe("web viewer screenshots (docs/viewer-*.png)", () => {
  const tmp = tempDir("agent-chat-viewer-shot-");
  let view: RunningViewer;
  let browser: Browser;

  beforeAll(async () => {
    await seedConversation(tmp.dir);
    [view, browser] = await Promise.all([startView(tmp.dir), launchChromium()]);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    tmp.cleanup();
  });

  it("reads well on a laptop and on a phone, without sideways scrolling", {
    timeout: 60_000,
  }, async () => {
    for (const [name, viewport, scale] of [
      ["laptop", { width: 1366, height: 800 }, 1],
      ["phone", { width: 390, height: 844 }, 2],
    ] as const) {
      const page = await browser.newPage({ viewport, deviceScaleFactor: scale });
      try {
        await page.addInitScript(`localStorage.setItem("agent-chat-viewer:name", "dana")`);
        await page.goto(view.url);
        await page.goto(`${view.origin}/#/review`);
        await page.waitForSelector(`article.message[data-seq="4"]`);
        await page.waitForSelector('[data-task="1"]');
        // On a phone, show the top of the page: the channel strip, the channel and its start.
        if (name === "phone") await page.evaluate("window.scrollTo(0, 0)");
        await page.screenshot({ path: `docs/viewer-${name}.png` });
        const overflow = await page.evaluate(
          "document.documentElement.scrollWidth - window.innerWidth",
        );
        expect(overflow, `${name}: no sideways scrolling`).toBeLessThanOrEqual(0);
        // Every message is on the page and readable (not hidden behind the compose box).
        expect(await page.locator("article.message").count()).toBe(4);
      } finally {
        await page.close();
      }
    }
  });
});
