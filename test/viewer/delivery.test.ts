import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, rawRequest, startView } from "./helpers.js";

/**
 * Delivery in the viewer (docs/delivery.md), in headless Chromium: each message says who of its
 * addressees read and answered it, members carry a presence dot, and an "owes" badge counts the
 * answers a member owes; all of it follows the CLI's reads, waits and replies without a reload.
 */
describe("viewer: receipts, presence dots, owed answers", () => {
  const tmp = tempDir("agent-chat-viewer-delivery-");
  const env = { AGENT_CHAT_DAEMON: "off" };
  let view: RunningViewer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const store = new FsStore(tmp.dir);
    try {
      await store.init("review", { members: ["alice", "bob", "carol"] });
      await store.post("review", {
        from: "alice",
        to: "bob,carol",
        status: "question",
        body: "v1 or v2?",
      });
    } finally {
      await store.close();
    }
    [view, browser] = await Promise.all([startView(tmp.dir), launchChromium()]);
    page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`${view.url}#/review`);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    tmp.cleanup();
  });

  const receipts = () => page.locator("#m-1 > .receipts");
  const member = (name: string) => page.locator(`#members [data-member="${name}"]`);

  it("a question nobody read: not read yet, owed by both, alice present", async () => {
    await expect.poll(() => receipts().textContent(), { timeout: 10_000 }).toBe("not read yet");
    await expect
      .poll(() => member("bob").locator(".badge.owes").textContent(), { timeout: 10_000 })
      .toBe("owes 1 answer");
    expect(await member("carol").locator(".badge.owes").textContent()).toBe("owes 1 answer");
    expect(await member("alice").getAttribute("data-presence")).toBe("active");
    expect(await member("bob").getAttribute("data-presence")).toBe("never-seen");
  });

  it("follows a read, a parked wait and an answer live", async () => {
    expect((await runCli(["read", "review", "--as", "bob"], { root: tmp.dir, env })).code).toBe(0);
    await expect
      .poll(() => receipts().textContent(), { timeout: 10_000 })
      .toBe("read by bob · not read by carol");
    expect((await runCli(["read", "review", "--as", "carol"], { root: tmp.dir, env })).code).toBe(
      0,
    );
    await expect
      .poll(() => receipts().textContent(), { timeout: 10_000 })
      .toBe("read by bob, carol");
    const waiter = startCli(["wait", "review", "--as", "carol", "--timeout", "60"], {
      root: tmp.dir,
      env,
    });
    await expect
      .poll(() => member("carol").getAttribute("data-presence"), { timeout: 10_000 })
      .toBe("waiting");
    const reply = await runCli(
      ["post", "review", "--from", "bob", "--to", "alice", "--reply", "1", "--body", "v2"],
      { root: tmp.dir, env },
    );
    expect(reply.code).toBe(0);
    await expect
      .poll(() => receipts().textContent(), { timeout: 10_000 })
      .toBe("read by bob, carol · answered by bob");
    await expect
      .poll(() => member("bob").locator(".badge.owes").count(), { timeout: 10_000 })
      .toBe(0);
    waiter.kill("SIGINT");
    await collect(waiter);
    expect(pageErrors).toEqual([]);
  });

  it("a person posting from the viewer is present as viewer", async () => {
    // What the page sends: its secret address and its own Origin.
    const posted = await rawRequest(view.port, `${view.prefix}/api/channels/review/messages`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: view.origin },
      body: JSON.stringify({ from: "dana", body: "hello from the page" }),
    });
    expect(posted.status, posted.body).toBe(201);
    const who = await runCli(["--json", "who"], { root: tmp.dir, env });
    const dana = JSON.parse(who.stdout).agents.find((p: { agent: string }) => p.agent === "dana");
    expect(dana).toMatchObject({ state: "active", harness: "viewer" });
  });
});
