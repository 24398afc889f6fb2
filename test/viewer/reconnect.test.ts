import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { startViewer, type Viewer } from "../../src/viewer/server.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium } from "./helpers.js";

const TOKEN = "reconnect-test-token-0123456789";

/**
 * The viewer stops and starts again on the same port and token (as after a restart of
 * `agent-chat serve`): the open page reconnects and fetches only what it missed, or starts again
 * from the newest page when it missed more than one request can bring.
 */
describe("viewer page after the server was away", () => {
  const tmp = tempDir("agent-chat-viewer-reconnect-");
  let writer: FsStore;
  let viewerStore: FsStore;
  let viewer: Viewer;
  let port: number;
  let browser: Browser;
  let page: Page;

  const post = async (count: number) => {
    for (let i = 0; i < count; i += 1) {
      await writer.post("long", { from: "alice", body: `while away ${i}` });
    }
  };
  const shownSeqs = () =>
    page.evaluate<number[]>(
      `[...document.querySelectorAll("article.message")].map((e) => Number(e.dataset.seq))`,
    );
  const range = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, k) => from + k);

  async function restart(whileAway: () => Promise<void>): Promise<void> {
    await viewer.close();
    await viewerStore.close();
    await expect.poll(() => page.locator("#live").textContent()).toBe("reconnecting…");
    await whileAway();
    viewerStore = new FsStore(tmp.dir);
    viewer = await startViewer({ store: viewerStore, port, token: TOKEN });
    await expect.poll(() => page.locator("#live").textContent(), { timeout: 30_000 }).toBe("live");
  }

  beforeAll(async () => {
    writer = new FsStore(tmp.dir);
    await writer.init("long", { topic: "restarts" });
    await post(300);
    viewerStore = new FsStore(tmp.dir);
    viewer = await startViewer({ store: viewerStore, port: 0, token: TOKEN });
    port = Number(new URL(viewer.url).port);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    await page.goto(`${viewer.url}#/long`);
    await page.waitForSelector('article.message[data-seq="300"]', { timeout: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await viewer?.close();
    await viewerStore?.close();
    await writer?.close();
    tmp.cleanup();
  });

  it("adds the few messages it missed below the ones it had", async () => {
    expect(await shownSeqs()).toEqual(range(101, 300));
    await restart(() => post(5));
    await page.waitForSelector("#m-305", { timeout: 30_000 });
    expect(await shownSeqs()).toEqual(range(101, 305));
    expect(await page.locator("#earlier .meta").textContent()).toBe("100 earlier messages");
  });

  it("starts again from the newest page when it missed more than a request brings", async () => {
    await restart(() => post(1100));
    await page.waitForSelector("#m-1405", { timeout: 30_000 });
    await expect.poll(shownSeqs).toEqual(range(1206, 1405));
    expect(await page.locator("#earlier .meta").textContent()).toBe("1205 earlier messages");
    await expect
      .poll(() => page.locator(".channel-head .meta").textContent())
      .toMatch(/^1405 messages/);
  });
});

/**
 * The server cuts the event stream of a page that falls behind (here: any unsent byte at all
 * when the next event comes). The page reconnects, fetches what it missed and shows every
 * message, in order, once.
 */
describe("viewer page whose event stream was cut for falling behind", () => {
  const tmp = tempDir("agent-chat-viewer-cut-");
  let writer: FsStore;
  let viewerStore: FsStore;
  let viewer: Viewer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    writer = new FsStore(tmp.dir);
    await writer.init("burst", { topic: "big posts" });
    viewerStore = new FsStore(tmp.dir);
    viewer = await startViewer({
      store: viewerStore,
      port: 0,
      token: TOKEN,
      streamLimits: { streamBytes: 1, totalBytes: 1 },
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    await page.goto(`${viewer.url}#/burst`);
    await page.locator("#live", { hasText: /^live$/ }).waitFor({ timeout: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await viewer?.close();
    await viewerStore?.close();
    await writer?.close();
    tmp.cleanup();
  });

  it("reconnects and shows every message it was not sent", async () => {
    // 40 big posts in a row, and more until the page has fallen behind at least once: on a
    // loaded machine a slow writer can leave the page time to keep up with the first 40.
    let posted = 0;
    while (posted < 40 || (viewer.streamStats().closedBehind === 0 && posted < 160)) {
      await writer.post("burst", { from: "alice", body: `${posted} ${"z".repeat(500_000)}` });
      posted += 1;
    }
    await page.waitForSelector(`#m-${posted}`, { timeout: 30_000 });
    expect(viewer.streamStats().closedBehind).toBeGreaterThan(0);
    await expect
      .poll(() =>
        page.evaluate<number[]>(
          `[...document.querySelectorAll("article.message")].map((e) => Number(e.dataset.seq))`,
        ),
      )
      .toEqual(Array.from({ length: posted }, (_, k) => k + 1));
  }, 60_000);
});
