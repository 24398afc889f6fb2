import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initGoverned, startRequest } from "./helpers.js";

/** Timeouts, notify bands and auto bands, across real processes. */
describe("governed requests: windows and timeouts", () => {
  let root: string;
  let cleanup: () => void;
  const cli = (args: string[]) => runCli(args, { root });
  const request = (action: string, ...more: string[]) => startRequest(root, action, ...more);
  const peek = async () => {
    const store = new FsStore(root, { watch: false });
    try {
      return await store.peek("review", 100);
    } finally {
      await store.close();
    }
  };

  beforeEach(async () => {
    ({ dir: root, cleanup } = tempDir("agent-chat-gov-"));
    await initGoverned(root);
  });
  afterEach(() => cleanup());

  it("no verdict in time: exit 2, and the request is marked expired so it leaves pending", async () => {
    const started = Date.now();
    const result = await runCli(
      [
        "request",
        "review",
        "--as",
        "bob",
        "--action",
        "merge",
        "--title",
        "Late",
        "--timeout",
        "1",
      ],
      { root },
    );
    expect(result.code).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(result.stderr).toContain(
      "no verdict from alice on request #1 within 1 s (marked expired)",
    );
    const peek = JSON.parse((await cli(["--json", "peek", "review"])).stdout);
    expect(
      peek.messages.map((m: { status: string; reply_to?: number }) => [m.status, m.reply_to]),
    ).toEqual([
      ["needs-approval", undefined],
      ["expired", 1],
    ]);
    expect(JSON.parse((await cli(["--json", "pending", "review"])).stdout).pending).toEqual([]);
    const late = await cli(["approve", "review", "1", "--as", "alice"]);
    expect(late.stderr).toContain("request #1 is expired (#2); bob no longer waits for it");
  });

  it("notify: a veto inside the window stops the action with exit 4", async () => {
    const req = request("refactor");
    await req.posted;
    const pending = JSON.parse((await cli(["--json", "pending", "review"])).stdout).pending;
    expect(pending).toMatchObject([{ seq: 1, band: "notify", action: "refactor" }]);
    expect(pending[0].vetoUntil).toMatch(/^\d{4}-\d\d-\d\dT/);
    const vetoed = await cli([
      "approve",
      "review",
      "1",
      "--as",
      "alice",
      "--veto",
      "--note",
      "wait for tests",
    ]);
    expect(vetoed.code).toBe(0);
    const result = await req.done;
    expect(result.code).toBe(4);
    expect(result.stderr).toContain("was vetoed by alice in #2: wait for tests");
  });

  it("auto proceeds at once and posts nothing; the * default is named on stderr", async () => {
    const result = await cli([
      "--json",
      "request",
      "review",
      "--as",
      "bob",
      "--action",
      "lint",
      "--title",
      "Lint",
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      band: "auto",
      action: "lint",
      matched: "*",
      proceed: true,
    });
    expect(result.stderr).toContain(
      "lint has no band of its own in review; the default '*' = auto applies",
    );
    expect(await peek()).toEqual([]);
  });

  it("Ctrl-C while waiting: exit 130, and the request is marked withdrawn", async () => {
    const req = request("merge");
    await req.posted;
    req.child.kill("SIGINT");
    const result = await req.done;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("request #1 was withdrawn while waiting");
    expect((await peek()).map((m) => [m.status, m.replyTo])).toEqual([
      ["needs-approval", undefined],
      ["withdrawn", 1],
    ]);
  });

  it("notify: without a veto the action proceeds when the window ends", async () => {
    cleanup();
    ({ dir: root, cleanup } = tempDir("agent-chat-gov-"));
    await initGoverned(root, { vetoWindowSeconds: 1 });
    const started = Date.now();
    const result = await request("refactor").done;
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("no veto on #1 (refactor) within the window: go ahead\n");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  });
});
