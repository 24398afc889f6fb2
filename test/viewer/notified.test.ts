import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, startView } from "./helpers.js";

/**
 * The viewer open as a person (the From box holds their name) tells them what waits: the
 * messages it shows them are "notified" for them (docs/delivery.md), in headless Chromium.
 */
describe("viewer: what it shows a person is notified", () => {
  const tmp = tempDir("agent-chat-viewer-notified-");
  let view: RunningViewer;
  let browser: Browser;

  beforeAll(async () => {
    const store = new FsStore(tmp.dir);
    try {
      await store.init("review", { members: ["alice", "bob", "carol"] });
      await store.post("review", { from: "alice", to: "bob", body: "v1 or v2?" });
    } finally {
      await store.close();
    }
    [view, browser] = await Promise.all([startView(tmp.dir), launchChromium()]);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    tmp.cleanup();
  });

  async function stateOf(agent: string, seq: number): Promise<string | undefined> {
    const store = new FsStore(tmp.dir, { recordPresence: false });
    try {
      return (await store.receipts("review", seq)).addressees.find((r) => r.agent === agent)?.state;
    } finally {
      await store.close();
    }
  }

  it("opened as bob, the channel's messages for bob become notified, then live ones", async () => {
    const page = await browser.newPage();
    // The name the From box remembers (src/viewer/page/state.ts), as a person who posted before.
    await page.addInitScript('localStorage.setItem("agent-chat-viewer:name", "bob")');
    await page.goto(`${view.url}#/review`);
    await expect.poll(() => stateOf("bob", 1), { timeout: 10_000 }).toBe("notified");
    const store = new FsStore(tmp.dir);
    await store.post("review", { from: "alice", to: "bob", body: "and now?" });
    await store.close();
    await expect.poll(() => stateOf("bob", 2), { timeout: 10_000 }).toBe("notified");
    await page.close();
  });

  it("opened with no name, nobody is notified", async () => {
    const store = new FsStore(tmp.dir);
    await store.post("review", { from: "alice", to: "carol", body: "carol?" });
    await store.close();
    const page = await browser.newPage();
    const told: string[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/notified")) told.push(r.url());
    });
    await page.goto(`${view.url}#/review`);
    await page.locator("#m-3").waitFor({ timeout: 10_000 });
    expect(told).toEqual([]);
    expect(await stateOf("carol", 3)).toBe("stored");
    await page.close();
  });
});
