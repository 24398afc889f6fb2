import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { collect, runCli, startCli, watching } from "../helpers/cli.js";
import { waitParked } from "../helpers/parked.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: FsStore;

beforeEach(async () => {
  tmp = tempDir();
  store = new FsStore(tmp.dir);
  await store.init("ch");
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

describe("wait wakes through the file watch, not the poll", () => {
  // How fast the watch wakes a waiter is measured in bench/ ("wake latency"); here the poll is
  // set far beyond the wait's timeout, so that an answer at all proves the watch woke it.
  it("an in-process waiter is woken by another process's post through the file watch (poll set to 60 s)", async () => {
    const waiting = store.wait(["ch"], { as: "bob", timeoutMs: 20_000, intervalMs: 60_000 });
    await waitParked(store, "ch", "bob");
    const post = await runCli(["post", "ch", "--from", "alice", "--json", "--body", "ping"], {
      root: tmp.dir,
    });
    expect(post.code).toBe(0);
    const r = await waiting;
    expect(r.messages.map((m) => m.body)).toEqual(["ping"]);
  });

  it("a CLI wait in one process returns when another process posts, exit 0 with the message", async () => {
    const waiter = startCli(["wait", "ch", "--as", "bob", "--timeout", "20", "--interval", "60"], {
      root: tmp.dir,
    });
    await watching(waiter);
    await store.post("ch", { from: "alice", to: "bob", title: "wake", body: "up" });
    const r = await collect(waiter);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("title: wake\n---\nup\n");
    expect(await store.cursor("ch", "bob")).toBe(1);
  });

  it("without a file watch, the sleep-poll alone still delivers", async () => {
    const polling = new FsStore(tmp.dir, { watch: false });
    const waiting = polling.wait(["ch"], { as: "bob", timeoutMs: 10_000, intervalMs: 50 });
    // Once the wait is parked, so that the post must be found by the poll.
    await waitParked(polling, "ch", "bob");
    await store.post("ch", { from: "alice", body: "polled" });
    expect((await waiting).messages.map((m) => m.body)).toEqual(["polled"]);
    await polling.close();
  });

  it("a waiter on the same store as the poster (a daemon's) wakes at once, without the watch or the poll", async () => {
    // No watch and a 60 s poll: only the post telling its own store's waiters can wake this one.
    const shared = new FsStore(tmp.dir, { watch: false });
    const waiting = shared.wait(["ch"], { as: "bob", timeoutMs: 20_000, intervalMs: 60_000 });
    await waitParked(shared, "ch", "bob");
    await shared.post("ch", { from: "alice", body: "same process" });
    const r = await waiting;
    expect(r.messages.map((m) => m.body)).toEqual(["same process"]);
    await shared.close();
  });

  it("messages for others do not end a wait; the next one for the waiter does, with only it", async () => {
    const poster = new FsStore(tmp.dir);
    const waiting = store.wait(["ch"], { as: "bob", timeoutMs: 10_000 });
    await waitParked(store, "ch", "bob");
    for (let i = 0; i < 5; i++)
      await poster.post("ch", { from: "alice", to: "carol", body: `c${i}` });
    // Each post for carol wakes the wait, which must go back to sleep: one that ended on them
    // would answer without "for bob" below.
    await poster.post("ch", { from: "alice", to: "Bob,dave", body: "for bob" });
    const r = await waiting;
    expect(r.messages.map((m) => m.body)).toEqual(["for bob"]);
    expect(r.cursors).toEqual({ ch: 6 });
    expect(await store.cursor("ch", "bob")).toBe(6);
    await poster.close();
  });

  it("never misses a message posted between its scans: 200 posts, 1 waiter in a loop", async () => {
    const reader = new FsStore(tmp.dir);
    const got: number[] = [];
    const loop = (async () => {
      while (got.length < 200) {
        const r = await reader.wait(["ch"], { as: "bob", timeoutMs: 10_000, intervalMs: 1000 });
        got.push(...r.messages.map((m) => m.seq));
      }
    })();
    const writer = new FsStore(tmp.dir);
    for (let i = 0; i < 200; i++) await writer.post("ch", { from: "alice", body: `n${i}` });
    await loop;
    expect(got).toEqual(Array.from({ length: 200 }, (_, k) => k + 1));
    await reader.close();
    await writer.close();
  });
});
