import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import type { ErrorView, MessagesPage } from "../../src/viewer/api-types.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, rawRequest, startView } from "./helpers.js";

/** A channel kept for months: more messages than one page, written through the library. */
const TOTAL = 1200;
const PAGE = 200;
const BOB_READ_TO = 1000;
const FAR_REPLY = 5;

interface Written {
  seq: number;
  from: string;
  to: string;
}

const SENDERS = ["alice", "bob", "carol"];

/** Message i: senders in turn, every seventh to one person, bodies of varying height. */
function messageInput(i: number) {
  const from = SENDERS[i % 3]!;
  const to = i % 7 === 0 ? SENDERS[(i + 1) % 3]! : "all";
  const lines = Array.from({ length: 1 + (i % 4) }, (_, k) => `Line ${k + 1} of message ${i}.`);
  const input: { from: string; to: string; title: string; body: string; replyTo?: number } = {
    from,
    to,
    title: `message ${i}`,
    body: lines.join("\n\n"),
  };
  if (i === TOTAL) input.replyTo = FAR_REPLY;
  return input;
}

/** Unread as a user reads it: after the cursor, not one's own, to everyone or to them. */
function unreadFor(written: Written[], name: string, cursor: number): number {
  return written.filter(
    (m) => m.seq > cursor && m.from !== name && (m.to === "all" || m.to === name),
  ).length;
}

describe("viewer on a long channel: pages of messages", () => {
  const tmp = tempDir("agent-chat-viewer-paging-");
  const written: Written[] = [];
  let view: RunningViewer;
  let browser: Browser;
  let writer: FsStore;

  beforeAll(async () => {
    writer = new FsStore(tmp.dir);
    await writer.init("long", { members: SENDERS, topic: "Kept for months" });
    await writer.init("short", { topic: "A few messages" });
    for (let i = 1; i <= TOTAL; i += 1) {
      const input = messageInput(i);
      const { seq } = await writer.post("long", input);
      written.push({ seq, from: input.from, to: input.to });
      if (seq === BOB_READ_TO) await writer.read("long", { as: "bob" });
    }
    for (const body of ["one", "two", "three"]) {
      await writer.post("short", { from: "dana", body });
    }
    view = await startView(tmp.dir);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    await writer?.close();
    tmp.cleanup();
  });

  const get = (path: string) =>
    rawRequest(view.port, path, { headers: { Authorization: `Bearer ${view.token}` } });
  const messagesPage = async (query = "", channel = "long"): Promise<MessagesPage> => {
    const res = await get(`/api/channels/${channel}/messages${query}`);
    expect(res.status, res.body).toBe(200);
    return JSON.parse(res.body) as MessagesPage;
  };
  const seqs = (page: MessagesPage) => page.messages.map((m) => m.seq);
  const range = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, k) => from + k);

  describe("GET /api/channels/<ch>/messages", () => {
    it("answers the newest page by default, with what lies before it", async () => {
      const page = await messagesPage();
      expect(seqs(page)).toEqual(range(TOTAL - PAGE + 1, TOTAL));
      expect(page).toMatchObject({
        channel: "long",
        hasEarlier: true,
        earlierCount: TOTAL - PAGE,
        total: TOTAL,
      });
      // #1200 replies to #5, which is not on the page: the link can still say who wrote what.
      expect(page.messages.at(-1)?.replyTo).toBe(FAR_REPLY);
      expect(page.replyTargets).toEqual([
        { seq: FAR_REPLY, from: messageInput(FAR_REPLY).from, title: `message ${FAR_REPLY}` },
      ]);
      const short = await messagesPage("", "short");
      expect(seqs(short)).toEqual([1, 2, 3]);
      expect(short).toMatchObject({ hasEarlier: false, earlierCount: 0, total: 3 });
    });

    it("pages back with before and limit until nothing is earlier", async () => {
      const previous = await messagesPage(`?before=${TOTAL - PAGE + 1}`);
      expect(seqs(previous)).toEqual(range(TOTAL - 2 * PAGE + 1, TOTAL - PAGE));
      expect(previous.earlierCount).toBe(TOTAL - 2 * PAGE);
      const rest = await messagesPage(`?before=${TOTAL - 2 * PAGE + 1}&limit=1000`);
      expect(seqs(rest)).toEqual(range(1, TOTAL - 2 * PAGE));
      expect(rest).toMatchObject({ hasEarlier: false, earlierCount: 0 });
      const oneLeft = await messagesPage("?before=7&limit=5");
      expect(seqs(oneLeft)).toEqual([2, 3, 4, 5, 6]);
      expect(oneLeft).toMatchObject({ hasEarlier: true, earlierCount: 1 });
      expect(await messagesPage("?before=1")).toMatchObject({
        messages: [],
        hasEarlier: false,
        earlierCount: 0,
      });
      // A seq past the end is simply "everything before it".
      expect(seqs(await messagesPage(`?before=99999&limit=3`))).toEqual([1198, 1199, 1200]);
      expect(seqs(await messagesPage("?limit=1000"))).toEqual(range(TOTAL - 999, TOTAL));
    });

    it("refuses a bad before or limit with a 400 that says what to send", async () => {
      const cases: [string, RegExp][] = [
        ["?limit=0", /invalid limit "0": use from 1 to 1000/],
        ["?limit=1001", /invalid limit "1001": use from 1 to 1000/],
        ["?limit=ten", /invalid limit "ten"/],
        ["?limit=-5", /invalid limit "-5"/],
        ["?limit=2.5", /invalid limit "2.5"/],
        ["?limit=", /invalid limit ""/],
        ["?before=0", /invalid before "0": use a message number/],
        ["?before=abc", /invalid before "abc"/],
        ["?before=1e3", /invalid before "1e3"/],
        ["?before=99999999999999999999", /invalid before/],
      ];
      for (const [query, message] of cases) {
        const res = await get(`/api/channels/long/messages${query}`);
        expect(res.status, query).toBe(400);
        expect(String(res.headers["content-type"])).toMatch(/^application\/json/);
        const body = JSON.parse(res.body) as ErrorView;
        expect(body.error.code, query).toBe("INVALID_ARGUMENT");
        expect(body.error.message, query).toMatch(message);
      }
      expect((await get("/api/channels/nope/messages?limit=5")).status).toBe(404);
    });
  });

  describe("the page", () => {
    /** One context for every page, as tabs of one browser. */
    let context: BrowserContext;
    let page: Page;

    /** A new page opened on `hash`, as a new document (a fresh tab, a shared link). */
    async function open(hash: string, width = 1366, height = 800): Promise<Page> {
      const p = await context.newPage();
      await p.setViewportSize({ width, height });
      await p.goto(`${view.url}${hash}`);
      return p;
    }

    async function openLong(width?: number, height?: number): Promise<Page> {
      const p = await open("#/long", width, height);
      await p.waitForSelector(`article.message[data-seq="${TOTAL}"]`, { timeout: 15_000 });
      return p;
    }

    const shownSeqs = (p: Page) =>
      p.evaluate<number[]>(
        `[...document.querySelectorAll("article.message")].map((e) => Number(e.dataset.seq))`,
      );

    /** Top of a message on screen, in CSS pixels from the top of the viewport. */
    async function topOf(p: Page, seq: number): Promise<number> {
      const box = await p.locator(`#m-${seq}`).boundingBox();
      if (!box) throw new Error(`#${seq} is not shown`);
      return box.y;
    }

    /** Whether any of message `seq` is on screen. */
    function inViewport(p: Page, seq: number): Promise<boolean> {
      return p.evaluate<boolean>(`(() => {
        const r = document.getElementById("m-${seq}").getBoundingClientRect();
        return r.bottom > 0 && r.top < window.innerHeight;
      })()`);
    }

    const scrollList = (p: Page, to: "top" | "end") =>
      p.evaluate(`(() => {
        const list = document.getElementById("messages");
        list.scrollTop = ${to === "top" ? "0" : "list.scrollHeight"};
      })()`);

    beforeAll(async () => {
      context = await browser.newContext();
    });

    afterAll(() => context?.close());

    it("opens on the newest page, scrolled to the end, with counts for the whole channel", async () => {
      page = await openLong();
      expect(await shownSeqs(page)).toEqual(range(TOTAL - PAGE + 1, TOTAL));
      await expect.poll(() => inViewport(page, TOTAL)).toBe(true);
      expect(await page.locator(".channel-head .meta").textContent()).toMatch(
        new RegExp(`^${TOTAL} messages · 3 members`),
      );
      expect(await page.locator('[data-channel="long"] .count').textContent()).toBe(String(TOTAL));
      const alice = page.locator('[data-member="alice"]');
      expect(await alice.locator(".cursor").textContent()).toBe("has not read");
      const aliceUnread = unreadFor(written, "alice", 0);
      expect(aliceUnread).toBeGreaterThan(PAGE); // so a count of the loaded page alone would differ
      expect(await alice.locator(".badge").textContent()).toBe(`${aliceUnread} unread`);
      const bob = page.locator('[data-member="bob"]');
      expect(await bob.locator(".cursor").textContent()).toBe(`read to #${BOB_READ_TO}`);
      expect(await bob.locator(".badge").textContent()).toBe(
        `${unreadFor(written, "bob", BOB_READ_TO)} unread`,
      );
      expect(await page.locator("#earlier .meta").textContent()).toBe(
        `${TOTAL - PAGE} earlier messages`,
      );
    });

    it("shows earlier pages above without moving the message being read, back to the first", async () => {
      await scrollList(page, "top");
      let oldest = TOTAL - PAGE + 1;
      while (oldest > 1) {
        const before = await topOf(page, oldest);
        await page.click("#show-earlier");
        const expectedOldest = Math.max(1, oldest - PAGE);
        await page.waitForSelector(`#m-${expectedOldest}`, { timeout: 10_000 });
        const after = await topOf(page, oldest);
        expect(Math.abs(after - before), `#${oldest} moved`).toBeLessThanOrEqual(2);
        // And the newly loaded page really is above it, out of sight until scrolled to.
        expect(await topOf(page, expectedOldest)).toBeLessThan(after);
        expect(await inViewport(page, expectedOldest)).toBe(false);
        oldest = expectedOldest;
        await scrollList(page, "top");
      }
      expect(await shownSeqs(page)).toEqual(range(1, TOTAL));
      expect(await page.locator("#earlier").count()).toBe(0);
      expect(await inViewport(page, 1)).toBe(true);
      expect(await page.locator("#m-1 .title").textContent()).toBe("message 1");
    });

    it("keeps showing live messages at the bottom", async () => {
      await scrollList(page, "end");
      const { seq } = await writer.post("long", {
        from: "carol",
        to: "alice",
        title: "A live one",
        body: "Posted while the page is open.",
      });
      written.push({ seq, from: "carol", to: "alice" });
      await page.waitForSelector(`#m-${seq}`, { timeout: 5000 });
      const shown = await shownSeqs(page);
      expect(shown.at(-1)).toBe(seq);
      expect(shown.length).toBe(TOTAL + 1);
      await expect.poll(() => inViewport(page, seq)).toBe(true);
      await expect
        .poll(() => page.locator(".channel-head .meta").textContent())
        .toMatch(new RegExp(`^${TOTAL + 1} messages`));
      await expect
        .poll(() => page.locator('[data-member="alice"] .badge').textContent())
        .toBe(`${unreadFor(written, "alice", 0)} unread`);
    });

    it("follows a reply link to a message not loaded yet", async () => {
      const fresh = await openLong();
      try {
        expect(await fresh.locator("article.message").count()).toBe(PAGE);
        const link = fresh.locator(`#m-${TOTAL} .reply-link`);
        expect(await link.textContent()).toBe(
          `↪ in reply to #${FAR_REPLY} · ${messageInput(FAR_REPLY).from}: message ${FAR_REPLY}`,
        );
        await link.click();
        await fresh.waitForSelector(`#m-${FAR_REPLY}`, { timeout: 15_000 });
        await expect
          .poll(() => fresh.locator(`#m-${FAR_REPLY}`).getAttribute("class"))
          .toContain("flash");
        await expect.poll(() => inViewport(fresh, FAR_REPLY)).toBe(true);
        // Loaded back to it without a hole.
        const shown = await shownSeqs(fresh);
        expect(shown[0]).toBeLessThanOrEqual(FAR_REPLY);
        expect(shown).toEqual(range(shown[0]!, TOTAL + 1));
        expect(fresh.url()).toBe(`${view.url}#/long/${FAR_REPLY}`);
      } finally {
        await fresh.close();
      }
    });

    it("opens a shared link to an old message at that message", async () => {
      const target = TOTAL - PAGE - 50; // on the page before the newest
      const fresh = await open(`#/long/${target}`);
      try {
        await fresh.waitForSelector(`#m-${target}`, { timeout: 15_000 });
        await expect.poll(() => inViewport(fresh, target)).toBe(true);
        const shown = await shownSeqs(fresh);
        expect(shown[0]).toBeLessThan(target);
        expect(shown).toEqual(range(shown[0]!, TOTAL + 1));
      } finally {
        await fresh.close();
      }
    });

    it("on a phone, where the window scrolls, keeps the message in place too", async () => {
      const phone = await openLong(390, 844);
      try {
        const oldest = TOTAL - PAGE + 2; // the newest page now ends at the live message
        expect((await shownSeqs(phone))[0]).toBe(oldest);
        await phone.evaluate("window.scrollTo(0, 0)");
        await phone.locator("#show-earlier").scrollIntoViewIfNeeded();
        const before = await topOf(phone, oldest);
        await phone.click("#show-earlier");
        await phone.waitForSelector(`#m-${oldest - PAGE}`, { timeout: 10_000 });
        expect(Math.abs((await topOf(phone, oldest)) - before)).toBeLessThanOrEqual(2);
        expect(await inViewport(phone, oldest - PAGE)).toBe(false);
      } finally {
        await phone.close();
      }
    });
  });
});
