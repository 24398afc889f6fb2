import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { launchChromium, type RunningViewer, rawRequest, startView } from "./helpers.js";

/**
 * The viewer and signatures (docs/signatures.md): a badge per message, what agents are not given
 * struck through under `signatures: require`, and a viewer opened `--as carol` posting as carol
 * alone, signed with a key of her own made on first use.
 */
describe("viewer: verified, unsigned and forged messages; posting as the person who opened it", () => {
  const tmp = tempDir("agent-chat-viewer-sig-");
  const root = join(tmp.dir, "root");
  const alice = { XDG_CONFIG_HOME: join(tmp.dir, "alice-config"), AGENT_CHAT_DAEMON: "off" };
  const carol = { XDG_CONFIG_HOME: join(tmp.dir, "carol-config"), AGENT_CHAT_DAEMON: "off" };
  let view: RunningViewer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const cli = (args: string[], env: Record<string, string>) => runCli(args, { root, env });
    expect((await cli(["init", "review", "--signatures", "require"], alice)).code).toBe(0);
    expect((await cli(["id", "new", "--as", "alice"], alice)).code).toBe(0);
    for (const body of ["signed by alice", "signed, then edited"]) {
      const r = await cli(["post", "review", "--from", "alice", "--body", body], alice);
      expect(r.code, r.stderr).toBe(0);
    }
    // Edited after signing: forged.
    const file = readdirSync(join(root, "review")).find((n) => n.startsWith("0002-"))!;
    const path = join(root, "review", file);
    writeFileSync(path, readFileSync(path, "utf8").replace("signed, then edited", "<b>edited</b>"));
    // Written by a tool that does not sign (chat.py, a script): unsigned.
    await new FsStore(root).post("review", { from: "bob", body: "unsigned words" });

    view = await startView(root, ["--as", "carol"], carol);
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(view.url);
    await page.locator("article.message").nth(2).waitFor();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await view?.stop();
    tmp.cleanup();
  });

  const badge = (seq: number) => page.locator(`#m-${seq} .badge.trust`);

  it("shows a badge per message, the reason a message is forged as text", async () => {
    expect(await badge(1).textContent()).toContain("verified");
    expect(await badge(1).getAttribute("title")).toContain("signed by alice");
    expect(await badge(2).textContent()).toContain("forged");
    expect(await page.locator("#m-2 .trust-note").textContent()).toMatch(
      /Forged: .*does not match/,
    );
    expect(await badge(3).textContent()).toContain("unsigned");
    // The edited text is still text, never markup.
    expect(await page.locator("#m-2 .body b").count()).toBe(0);
  });

  it("strikes through what agents are not given under signatures: require", async () => {
    const struck = async (seq: number) =>
      String(
        await page.evaluate(
          `getComputedStyle(document.querySelector("#m-${seq} .body")).textDecorationLine`,
        ),
      ).includes("line-through");
    expect(await struck(1)).toBe(false);
    expect(await struck(2)).toBe(true);
    expect(await struck(3)).toBe(true);
    expect(await page.locator("#m-3 .held-note").textContent()).toContain("Not delivered");
  });

  it("posts as the person who opened it, signed with her own key made on first use", async () => {
    expect(existsSync(join(carol.XDG_CONFIG_HOME, "agent-chat", "keys", "carol.key"))).toBe(true);
    expect(existsSync(join(root, ".keys", "carol.pub"))).toBe(true);
    const from = page.locator("#from");
    expect(await from.inputValue()).toBe("carol");
    expect(await from.isEditable()).toBe(false);
    await page.locator("#body").fill("from the viewer");
    await page.locator("#send").click();
    await page.locator("#m-4").waitFor();
    expect(await badge(4).textContent()).toContain("verified");
    expect(await page.locator("#m-4 .from").textContent()).toBe("carol");
    const text = readFileSync(
      join(root, "review", readdirSync(join(root, "review")).find((n) => n.startsWith("0004-"))!),
      "utf8",
    );
    expect(text).toMatch(/^sig: ed25519:/m);
  });

  it("refuses a post or a decision as anyone else", async () => {
    const auth = { Authorization: `Bearer ${view.token}`, "Content-Type": "application/json" };
    const post = await rawRequest(view.port, "/api/channels/review/messages", {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ from: "alice", body: "not carol" }),
    });
    expect(post.status).toBe(403);
    expect(JSON.parse(post.body).error.code).toBe("NOT_ALLOWED");
    const act = await rawRequest(
      view.port,
      "/api/channels/review/panels/governance/items/1/approve",
      {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ as: "alice" }),
      },
    );
    expect(act.status).toBe(403);
    expect(readdirSync(join(root, "review")).filter((n) => /^\d{4}-/.test(n))).toHaveLength(4);
  });
});
