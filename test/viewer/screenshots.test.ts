import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { govern } from "../../src/features/governance/governance.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { channelWorkspace, recordTurn, runTurn } from "../../src/workspace/index.js";
import { startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, seedConversation, startView } from "./helpers.js";

/** Messages of the screenshot's channel: the conversation, three workspace turns, one request. */
const MESSAGES = 4 + 3 * 3 + 1;

/**
 * The docs' screenshots are re-taken only on request (`AGENT_CHAT_SCREENSHOTS=docs npx vitest run
 * test/viewer/screenshots.test.ts`); a plain test run writes them to a temporary folder, so that
 * running the tests never changes the repository.
 */
const shotDir =
  process.env.AGENT_CHAT_SCREENSHOTS === "docs"
    ? "docs"
    : mkdtempSync(join(tmpdir(), "agent-chat-shots-"));

describe("web viewer screenshots (docs/viewer-*.png)", () => {
  const tmp = tempDir("agent-chat-viewer-shot-");
  let view: RunningViewer;
  let browser: Browser;
  let request: ChildProcess | undefined;

  beforeAll(async () => {
    await seedConversation(tmp.dir);
    // The channel also keeps a workspace, and alice decides merges.
    const store = new FsStore(tmp.dir);
    try {
      const ws = await channelWorkspace(store, "review");
      for (const [as, text] of [
        ["alice", "create a folder schema for schema v2 drafts"],
        ["bob", "create a folder tools for the two thread readers"],
        ["alice", "focus on the schema folder"],
      ] as const) {
        await recordTurn(store, "review", as, await runTurn(ws, { request: text }));
      }
      await govern(store, "review", { maintainer: "alice", bands: { merge: "approval" } });
    } finally {
      await store.close();
    }
    // A real request, waiting for alice's verdict while the screenshots are taken.
    request = startCli(
      [
        "request",
        "review",
        "--as",
        "bob",
        "--action",
        "merge",
        "--title",
        "Merge PR 12 (schema v2)",
      ],
      { root: tmp.dir, timeoutMs: 120_000 },
    );
    // In beforeAll, where expect.poll is not allowed.
    await vi.waitFor(
      () => {
        const files = readdirSync(join(tmp.dir, "review")).filter((f) => /^\d+-/.test(f));
        expect(files, "the request message").toHaveLength(MESSAGES);
      },
      { timeout: 10_000 },
    );
    [view, browser] = await Promise.all([startView(tmp.dir), launchChromium()]);
  }, 60_000);

  afterAll(async () => {
    request?.kill("SIGKILL");
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
        await page.addInitScript(`localStorage.setItem("agent-chat-viewer:name", "alice")`);
        await page.goto(`${view.url}#/review`);
        await page.waitForSelector(`article.message[data-seq="${MESSAGES}"]`);
        await page.waitForSelector('[data-task="1"]');
        await page.waitForSelector(`#governance [data-request="${MESSAGES}"]`);
        await page.waitForSelector('.kfolder.focus[data-folder="schema"]');
        // On a phone, show the top of the page: the channel strip, the channel and its start.
        if (name === "phone") await page.evaluate("window.scrollTo(0, 0)");
        await page.screenshot({ path: join(shotDir, `viewer-${name}.png`) });
        const overflow = await page.evaluate(
          "document.documentElement.scrollWidth - window.innerWidth",
        );
        expect(overflow, `${name}: no sideways scrolling`).toBeLessThanOrEqual(0);
        // Every message is on the page and readable (not hidden behind the compose box).
        expect(await page.locator("article.message").count()).toBe(MESSAGES);
      } finally {
        await page.close();
      }
    }
  });
});
