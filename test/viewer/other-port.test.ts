import { readdirSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, rawRequest, startView } from "./helpers.js";

/**
 * Issue 40, finding 9: cookies ignore ports, so a page on another 127.0.0.1 port, opened from a
 * link in a message, used to receive the viewer's cookie with its token, and its server could
 * then post through the viewer. The viewer's credential must stay with the viewer.
 */
describe("a page on another loopback port gets no viewer credential", () => {
  const tmp = tempDir("agent-chat-viewer-port-");
  let view: RunningViewer;
  let browser: Browser;
  let other: Server;
  /** Each request the other port's server received (the page, then perhaps its favicon). */
  const received: { url?: string; headers: IncomingHttpHeaders }[] = [];

  beforeAll(async () => {
    other = createServer((req, res) => {
      received.push({ url: req.url, headers: req.headers });
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end("<!doctype html><title>report</title><p>a page on another port</p>");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const otherPort = (other.address() as AddressInfo).port;
    const store = new FsStore(tmp.dir);
    await store.init("review", { members: ["alice", "bob"] });
    await store.post("review", {
      from: "bob",
      body: `The report is [here](http://127.0.0.1:${otherPort}/report).`,
    });
    await store.close();
    view = await startView(tmp.dir);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    await new Promise<void>((resolve) => (other ? other.close(() => resolve()) : resolve()));
    tmp.cleanup();
  });

  it("a link in a message opens the other port's page without the viewer's token or any cookie", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${view.url}#/review`);
    const link = page.locator('article.message[data-seq="1"] .body a');
    await link.waitFor();
    const [opened] = await Promise.all([context.waitForEvent("page"), link.click()]);
    await opened.waitForLoadState();
    expect(await opened.locator("p").textContent()).toBe("a page on another port");
    expect(received.map((r) => r.url)).toContain("/report");
    for (const { headers } of received) {
      expect(JSON.stringify(headers)).not.toContain(view.token);
      expect(headers.cookie).toBeUndefined();
    }
    // Nothing the browser keeps for 127.0.0.1 (which every port of it would get) holds it.
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });

  it("outside its secret path the viewer answers 404, whatever cookie comes with the request", async () => {
    const oldCookie = `agent_chat_viewer_${view.port}=${view.token}`;
    for (const path of ["/", "/index.html", "/app.js", "/api/state", "/api/events"]) {
      const res = await rawRequest(view.port, path, { headers: { Cookie: oldCookie } });
      expect(res.status, path).toBe(404);
      expect(res.body).not.toContain("agent-chat</title>");
    }
    const posted = await rawRequest(view.port, "/api/channels/review/messages", {
      method: "POST",
      headers: {
        Cookie: oldCookie,
        Origin: view.origin,
        "Content-Type": "application/json",
      },
      body: JSON.stringify({ from: "alice", body: "posted from another port" }),
    });
    expect(posted.status).toBe(404);
    expect(readdirSync(join(tmp.dir, "review")).filter((f) => /^\d+-/.test(f))).toHaveLength(1);
  });
});
