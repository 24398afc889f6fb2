import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { type RunningViewer, rawRequest, startView } from "./helpers.js";

/**
 * `POST /api/channels/<ch>/notified` marks messages seen for a person (docs/delivery.md): not
 * for anyone a request names (issue 40, finding 9), only for the viewer's own person when it
 * was opened `--as`, and never past the newest message.
 */
describe("viewer: whom a notified request may speak for", () => {
  const tmp = tempDir("agent-chat-viewer-notified-req-");
  const home = tempDir("agent-chat-viewer-notified-home-");
  let opened: RunningViewer;
  let open: RunningViewer;

  beforeAll(async () => {
    const store = new FsStore(tmp.dir);
    try {
      await store.init("review", { members: ["alice", "bob"] });
      await store.post("review", { from: "carol", to: "alice,bob", body: "v1 or v2?" });
    } finally {
      await store.close();
    }
    // The person's key (view --as makes one) in a folder of the test's, never the machine's.
    const config = { XDG_CONFIG_HOME: join(home.dir, "config") };
    [opened, open] = await Promise.all([
      startView(tmp.dir, ["--as", "alice"], config),
      startView(tmp.dir, [], config),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([opened?.stop(), open?.stop()]);
    tmp.cleanup();
    home.cleanup();
  });

  const notified = (view: RunningViewer, body: unknown) =>
    rawRequest(view.port, "/api/channels/review/notified", {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${view.token}` },
      body: JSON.stringify(body),
    });

  async function stateOf(agent: string): Promise<string | undefined> {
    const store = new FsStore(tmp.dir, { recordPresence: false });
    try {
      return (await store.receipts("review", 1)).addressees.find((r) => r.agent === agent)?.state;
    } finally {
      await store.close();
    }
  }

  it("a viewer opened --as alice speaks for alice alone, up to the newest message", async () => {
    const forBob = await notified(opened, { as: "bob", seq: 1 });
    expect(forBob.status).toBe(403);
    expect(forBob.body).toContain("this viewer posts as alice only, not as bob");
    expect(await stateOf("bob")).toBe("stored");
    const pastNewest = await notified(opened, { as: "alice", seq: 99 });
    expect(pastNewest.status).toBe(400);
    expect(pastNewest.body).toContain("review has no message #99 (the newest is #1)");
    expect(await stateOf("alice")).toBe("stored");
    expect((await notified(opened, { as: "alice", seq: 1 })).status).toBe(200);
    expect(await stateOf("alice")).toBe("notified");
  });

  it("a viewer opened with no name takes the name in the From box, if it is a name", async () => {
    const bad = await notified(open, { as: "bob (verified)", seq: 1 });
    expect(bad.status).toBe(400);
    expect(await stateOf("bob")).toBe("stored");
    expect((await notified(open, { as: "bob", seq: 1 })).status).toBe(200);
    expect(await stateOf("bob")).toBe("notified");
  });
});
