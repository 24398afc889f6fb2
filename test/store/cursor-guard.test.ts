import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { AgentChatError } from "../../src/core/errors.js";
import type { NatsStore } from "../../src/store/nats/nats-store.js";
import type { Store } from "../../src/store/types.js";
import { runCli } from "../helpers/cli.js";
import { describeNats } from "../helpers/describe-nats.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * A cursor that holds no number, or one past the channel's end (issue 44, item 6): neither may
 * lose a message or hand one out again without a word.
 */
interface Root {
  open(): Promise<Store>;
  /** Writes `agent`'s cursor in `channel` as someone editing the root by hand would. */
  setCursor(channel: string, agent: string, text: string): Promise<void>;
}

const opened: Store[] = [];
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const f of cleanups.splice(0)) f();
});

async function refusal(p: Promise<unknown>): Promise<AgentChatError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentChatError);
  return err as AgentChatError;
}

function cursorCases(name: string, makeRoot: () => Promise<Root>): void {
  describe(`cursors that cannot be trusted: ${name}`, () => {
    async function channelOf(count: number): Promise<{ root: Root; store: Store }> {
      const root = await makeRoot();
      const store = await root.open();
      opened.push(store);
      await store.init("ch", { members: ["alice", "bob"] });
      for (let i = 1; i <= count; i++) await store.post("ch", { from: "alice", body: `m${i}` });
      return { root, store };
    }

    it("a cursor that holds no number is refused by read and wait, saying so; read --all sets it again", async () => {
      const { root, store } = await channelOf(3);
      await root.setCursor("ch", "bob", "abc");
      const err = await refusal(store.read("ch", { as: "bob" }));
      expect(err.code).toBe("CORRUPT_CURSOR");
      expect(err.message).toContain("the cursor of bob in ch");
      expect(err.message).toContain('holds "abc", not a message number: nothing was read');
      expect((await refusal(store.wait(["ch"], { as: "bob", timeoutMs: 2000 }))).code).toBe(
        "CORRUPT_CURSOR",
      );
      // Counting is no read: it goes on, as chat.py reads such a cursor (0).
      expect(await store.cursor("ch", "bob")).toBe(0);
      const all = await store.read("ch", { as: "bob", all: true });
      expect(all.messages.map((m) => m.body)).toEqual(["m1", "m2", "m3"]);
      expect(await store.cursor("ch", "bob")).toBe(3);
      await store.post("ch", { from: "alice", body: "m4" });
      expect((await store.read("ch", { as: "bob" })).messages.map((m) => m.body)).toEqual(["m4"]);
    });

    it("a cursor past the channel's end is set back to it, with a warning: the next message is shown", async () => {
      const { root, store } = await channelOf(3);
      await root.setCursor("ch", "bob", "50");
      const peeked = await store.read("ch", { as: "bob", peek: true });
      expect(peeked.warnings.join("\n")).toContain(
        "the cursor of bob is at #50, past the channel's last message #3",
      );
      const read = await store.read("ch", { as: "bob" });
      expect(read.messages).toEqual([]);
      expect(read.warnings.join("\n")).toContain("set back to #3");
      expect(await store.cursor("ch", "bob")).toBe(3);
      await store.post("ch", { from: "alice", body: "m4" });
      const next = await store.read("ch", { as: "bob" });
      expect(next.messages.map((m) => m.body)).toEqual(["m4"]);
      expect(next.warnings).toEqual([]);
    });

    it("a wait from a cursor past the end wakes for the next message", async () => {
      const { root, store } = await channelOf(2);
      await root.setCursor("ch", "bob", "9");
      const waiting = store.wait(["ch"], { as: "bob", timeoutMs: 20_000, intervalMs: 50 });
      const other = await root.open();
      opened.push(other);
      // The wait's first look sets the cursor back; a message posted before it looked would be
      // below the cursor it found, as good as read.
      await expect.poll(() => other.cursor("ch", "bob"), { timeout: 10_000, interval: 10 }).toBe(2);
      await other.post("ch", { from: "alice", body: "m3" });
      const result = await waiting;
      expect(result.messages.map((m) => m.body)).toEqual(["m3"]);
      expect(result.warnings.join("\n")).toContain("set back to #2");
    });
  });
}

cursorCases("folder", async () => {
  const tmp = tempDir("agent-chat-cursors-");
  cleanups.push(tmp.cleanup);
  return {
    open: () => openStore(tmp.dir),
    setCursor: async (channel, agent, text) => {
      mkdirSync(join(tmp.dir, channel, ".cursors"), { recursive: true });
      writeFileSync(join(tmp.dir, channel, ".cursors", `${agent}.txt`), text);
    },
  };
});

describe("cursors on a folder: the channel's end counts files that do not parse", () => {
  it("a cursor at a malformed newest file is no cursor past the end; the next post is shown", async () => {
    const tmp = tempDir("agent-chat-cursors-");
    cleanups.push(tmp.cleanup);
    const store = await openStore(tmp.dir);
    opened.push(store);
    await store.init("ch");
    await store.post("ch", { from: "alice", body: "m1" });
    writeFileSync(join(tmp.dir, "ch", "0002-alice-broken.md"), "no frontmatter at all\n");
    writeFileSync(join(tmp.dir, "ch", ".cursors", "bob.txt"), "2");
    const read = await store.read("ch", { as: "bob" });
    expect(read.warnings.join("\n")).not.toContain("past the channel's last message");
    expect(await store.cursor("ch", "bob")).toBe(2);
    expect((await store.post("ch", { from: "alice", body: "m3" })).seq).toBe(3);
    expect((await store.read("ch", { as: "bob" })).messages.map((m) => m.body)).toEqual(["m3"]);
  });

  it("the CLI says so and exits 1; read --all reads on", async () => {
    const tmp = tempDir("agent-chat-cursors-");
    cleanups.push(tmp.cleanup);
    expect((await runCli(["init", "ch"], { root: tmp.dir })).code).toBe(0);
    await runCli(["post", "ch", "--from", "alice", "--body", "hello"], { root: tmp.dir });
    writeFileSync(join(tmp.dir, "ch", ".cursors", "bob.txt"), "abc");
    const refused = await runCli(["read", "ch", "--as", "bob"], { root: tmp.dir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('holds "abc", not a message number');
    expect(refused.stdout).toBe("");
    const all = await runCli(["read", "ch", "--as", "bob", "--all"], { root: tmp.dir });
    expect(all.code).toBe(0);
    expect(all.stdout).toContain("hello");
  });
});

describeNats("cursors that cannot be trusted: nats", (server) => {
  let n = 0;
  cursorCases("nats", async () => {
    const url = server().url(`cursors${process.pid}-${++n}`);
    return {
      open: () => openStore(url),
      setCursor: async (channel, agent, text) => {
        const raw = (await import("../../src/store/nats/nats-store.js")).NatsStore;
        const store: NatsStore = await raw.open(url);
        try {
          const kv = (store as unknown as { kv: { put(k: string, v: string): Promise<number> } })
            .kv;
          await kv.put(`cursor.${channel}.${agent}`, text);
        } finally {
          await store.close();
        }
      },
    };
  });
});
