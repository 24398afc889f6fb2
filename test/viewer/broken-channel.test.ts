import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import type { Store } from "../../src/store/types.js";
import { startViewer, type Viewer } from "../../src/viewer/server.js";
import { tempDir } from "../helpers/tmp.js";
import { rawRequest } from "./helpers.js";

const TOKEN = "broken-channel-test-token-0123456789";

/**
 * The channel list comes from the store's `channels()`; past that, the viewer reads each
 * channel's messages, cursors and tasks itself. A channel where one of those reads fails is
 * still listed, and the others are shown in full: one bad channel never empties the list.
 */
describe("viewer with one channel it cannot read", () => {
  const tmp = tempDir("agent-chat-viewer-broken-");
  let store: FsStore;
  let viewer: Viewer;
  let port: number;

  beforeAll(async () => {
    store = new FsStore(tmp.dir);
    await store.init("good", { topic: "fine" });
    await store.init("bad", { topic: "its tasks cannot be read" });
    await store.post("good", { from: "alice", body: "hello" });
    // Every read of the bad channel's tasks fails, as a store does on a file it refuses.
    const failing = new Proxy(store, {
      get(target, key, receiver) {
        if (key === "tasks") {
          return async (channel: string) => {
            if (channel === "bad") throw new AgentChatError("IO_ERROR", "unreadable task file");
            return target.tasks(channel);
          };
        }
        const value = Reflect.get(target, key, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    viewer = await startViewer({ store: failing, port: 0, token: TOKEN });
    port = Number(new URL(viewer.url).port);
  });
  afterAll(async () => {
    await viewer?.close();
    await store?.close();
    tmp.cleanup();
  });

  it("lists every channel and shows the readable ones in full", async () => {
    const res = await rawRequest(port, "/api/state", {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status, res.body).toBe(200);
    const state = JSON.parse(res.body) as {
      channels: { name: string; topic: string; messageCount: number }[];
    };
    expect(state.channels.map((c) => [c.name, c.topic, c.messageCount])).toEqual([
      ["bad", "its tasks cannot be read", 0],
      ["good", "fine", 1],
    ]);
  });
});
