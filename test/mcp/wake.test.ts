import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitForNews } from "../../src/hosts/wake.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";

// The wait behind `hook wait`: parked for hours, it must end as soon as its session no longer
// wants it, and hear of news in a channel that did not exist when it began.
describe("waitForNews", () => {
  let cleanup: () => void;
  let store: FsStore;
  /** Resolves at the first poll of a round: the wait is watching the channels of the moment. */
  let polled: Promise<void>;
  let markPolled: () => void;
  const options = (stillWanted: () => boolean) => ({
    told: {},
    // Far beyond the test's own timeout: a wait that ends did not end by running out.
    timeoutMs: 3_600_000,
    pollMs: 10,
    intervalMs: 10,
    stillWanted: async () => {
      markPolled();
      return stillWanted();
    },
  });

  beforeEach(async () => {
    let root: string;
    ({ dir: root, cleanup } = tempDir("agent-chat-wake-"));
    store = new FsStore(root);
    await store.init("dev");
    polled = new Promise((resolve) => {
      markPolled = resolve;
    });
  });
  afterEach(async () => {
    await store.close();
    cleanup();
  });

  it("ends as unwanted at the poll after its session stops wanting it, with no news", async () => {
    let wanted = true;
    const waiting = waitForNews(
      store,
      "bob",
      options(() => wanted),
    );
    await polled;
    wanted = false;
    expect(await waiting).toEqual({ kind: "unwanted" });
  });

  it("wakes for news in a channel created while it waits", async () => {
    const waiting = waitForNews(
      store,
      "bob",
      options(() => true),
    );
    await polled;
    await store.init("late");
    await store.post("late", { from: "alice", to: "bob", body: "the build is green" });
    const result = await waiting;
    expect(result.kind).toBe("news");
    expect(result.kind === "news" && [result.message.channel, result.message.body]).toEqual([
      "late",
      "the build is green",
    ]);
  });
});
