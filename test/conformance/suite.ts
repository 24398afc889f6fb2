import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openStore } from "../../src/client/open.js";
import { AgentChatError } from "../../src/core/errors.js";
import type { Message } from "../../src/core/message.js";
import { readReferenceEvent, referenceEvent } from "../../src/core/reference-event.js";
import {
  decide,
  govern,
  pendingRequests,
  requestAction,
} from "../../src/features/governance/index.js";
import { generateKeyPair, signerFromPem } from "../../src/features/trust/ed25519.js";
import { PAGE_SIZE, wholeChannel } from "../../src/store/paging.js";
import { SKEW_GRACE_MS } from "../../src/store/shared/index.js";
import type { Retention, Store } from "../../src/store/types.js";
import { ViewerModel } from "../../src/viewer/model.js";
import { waitParked } from "../helpers/parked.js";

/**
 * The ONE behavioural suite of the Store contract (docs/design.md §4). Every backend runs it through
 * a tiny driver file beside this one. `open()` must return a new, independent connection to
 * the same namespace each time (another "process" as far as the store can tell).
 */
export interface Backend {
  open(): Promise<Store>;
  cleanup(): Promise<void>;
  /** Wakes waiters by its sleep-poll alone (a folder store without a file watch). */
  pollOnly?: boolean;
  /**
   * For a store across a socket (the daemon), which a post's signer cannot reach: the same data
   * opened in this process, where a signed post goes instead.
   */
  local?: () => Promise<Store>;
}

/**
 * `makeBackend` gets the clock its stores must measure leases by (the `now` store option): the
 * suite moves it forward to expire a lease without sleeping.
 */
export function storeConformance(
  name: string,
  makeBackend: (clock: () => number) => Promise<Backend>,
): void {
  describe(`Store conformance: ${name}`, () => {
    let backend: Backend;
    let skew = 0;
    const clock = () => Date.now() + skew;
    /** Moves every store's clock past a lease of `ms`. */
    const advance = (ms: number) => {
      skew += ms;
    };
    let store: Store;
    const opened: Store[] = [];

    async function another(): Promise<Store> {
      const s = await backend.open();
      opened.push(s);
      return s;
    }

    beforeEach(async () => {
      skew = 0;
      backend = await makeBackend(clock);
      store = await another();
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
      await backend.cleanup();
    });

    async function expectCode(promise: Promise<unknown>, code: string): Promise<AgentChatError> {
      const err = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, `expected ${code}`).toBeInstanceOf(AgentChatError);
      expect((err as AgentChatError).code).toBe(code);
      return err as AgentChatError;
    }

    describe("channels", () => {
      it("init creates a channel once; a second init fails with CHANNEL_EXISTS", async () => {
        const meta = await store.init("review", { members: ["alice", "bob"], topic: "schema" });
        expect(meta).toMatchObject({
          channel: "review",
          members: ["alice", "bob"],
          topic: "schema",
        });
        expect(meta.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
        await expectCode(store.init("review"), "CHANNEL_EXISTS");
      });

      it("exactly one of several concurrent inits of one channel wins", async () => {
        const stores = await Promise.all([1, 2, 3, 4].map(() => another()));
        const results = await Promise.allSettled(stores.map((s) => s.init("race")));
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      });

      it("roster returns the metadata; an unknown channel is CHANNEL_NOT_FOUND", async () => {
        await store.init("review", { members: ["alice"], topic: "t" });
        expect(await store.roster("review")).toMatchObject({ members: ["alice"], topic: "t" });
        await expectCode(store.roster("nope"), "CHANNEL_NOT_FOUND");
        await expectCode(store.post("nope", { from: "a", body: "x" }), "CHANNEL_NOT_FOUND");
      });

      it("channels lists every channel with its last seq", async () => {
        await store.init("b-chan");
        await store.init("a-chan", { topic: "first" });
        await store.post("a-chan", { from: "alice", body: "one" });
        await store.post("a-chan", { from: "alice", body: "two" });
        const list = await (await another()).channels();
        expect(list.map((c) => [c.name, c.lastSeq, c.topic])).toEqual([
          ["a-chan", 2, "first"],
          ["b-chan", 0, ""],
        ]);
      });

      it.each([
        "..",
        "a/b",
        "a\\b",
        "/abs",
        "C:x",
        "nul\0",
        ".hidden",
        "_meta",
        "x".repeat(65),
        "",
        "con",
      ])("refuses the channel name %j with INVALID_NAME", async (bad) => {
        const err = await expectCode(store.init(bad), "INVALID_NAME");
        expect(err.message).toMatch(/channel name/);
      });
    });

    describe("post", () => {
      beforeEach(async () => {
        await store.init("ch");
      });

      it("allocates 1, 2, 3 … and returns the seq", async () => {
        const seqs = [];
        for (let i = 0; i < 5; i++)
          seqs.push((await store.post("ch", { from: "a", body: `m${i}` })).seq);
        expect(seqs).toEqual([1, 2, 3, 4, 5]);
      });

      it("gives concurrent posters from several connections distinct, gapless numbers", async () => {
        const stores = [store, await another(), await another(), await another()];
        const posts = stores.flatMap((s, i) =>
          Array.from({ length: 15 }, (_, j) => s.post("ch", { from: `p${i}`, body: `${i}/${j}` })),
        );
        const seqs = (await Promise.all(posts)).map((r) => r.seq).sort((a, b) => a - b);
        expect(seqs).toEqual(Array.from({ length: 60 }, (_, k) => k + 1));
        const all = await store.read("ch", { as: "reader", all: true, peek: true });
        expect(new Set(all.messages.map((m) => m.body)).size).toBe(60);
      });

      it("keeps every field, and the body right-trimmed", async () => {
        await store.post("ch", { from: "alice", body: "q" });
        const r = await store.post("ch", {
          from: "bob",
          to: ["alice", "carol"],
          title: "Re: schema: v2",
          body: "line 1\n\n```\ncode\n```\n\n",
          status: "proposal",
          replyTo: 1,
        });
        const [m] = (await store.read("ch", { as: "alice" })).messages.filter(
          (x) => x.seq === r.seq,
        );
        expect(m).toMatchObject({
          seq: 2,
          from: "bob",
          to: "alice,carol",
          title: "Re: schema: v2",
          body: "line 1\n\n```\ncode\n```",
          status: "proposal",
          replyTo: 1,
          channel: "ch",
        });
      });

      it("cannot be made to forge frontmatter through title, to, from or status", async () => {
        await store.post("ch", {
          from: "mallory",
          title: "hi\nseq: 99\n---\nto: bob",
          status: "x\r\nfrom: bob",
          body: "---\nseq: 7\n---\nbody",
        });
        const [m] = (await store.read("ch", { as: "reader" })).messages;
        expect(m?.seq).toBe(1);
        expect(m?.from).toBe("mallory");
        expect(m?.to).toBe("all");
        expect(m?.title).toBe("hi seq: 99 --- to: bob");
        expect(m?.status).toBe("x from: bob");
        expect(m?.body).toBe("---\nseq: 7\n---\nbody");
        await expectCode(store.post("ch", { from: "bob\nseq: 1", body: "x" }), "INVALID_NAME");
        await expectCode(
          store.post("ch", { from: "bob", to: "carol\nx", body: "x" }),
          "INVALID_NAME",
        );
      });

      it("refuses an empty body and one over the size limit, writing nothing", async () => {
        await expectCode(store.post("ch", { from: "a", body: "  \n" }), "INVALID_ARGUMENT");
        await expectCode(
          store.post("ch", { from: "a", body: "x".repeat(1024 * 1024 + 1) }),
          "TOO_LARGE",
        );
        expect(await store.peek("ch", 10)).toEqual([]);
        expect((await store.post("ch", { from: "a", body: "ok" })).seq).toBe(1);
      });

      it("refuses a NUL byte anywhere in a post, which readers would skip as binary, writing nothing", async () => {
        for (const post of [
          { from: "a", body: "a\0b" },
          { from: "a", body: "ok", title: "t\0" },
          { from: "a", body: "ok", status: "s\0" },
          { from: "a", body: "ok", extra: { note: "n\0" } },
        ]) {
          await expect(store.post("ch", post)).rejects.toMatchObject({
            code: "INVALID_ARGUMENT",
            message: expect.stringContaining("holds a NUL byte"),
          });
        }
        expect(await store.peek("ch", 10)).toEqual([]);
      });

      it("one body limit: the channel's (max_body_bytes, else 1 MiB) is what posts take and reads read", async () => {
        await store.init("big", { extra: { max_body_bytes: 3000 } });
        const refused = store.post("big", { from: "a", body: "x".repeat(3001) });
        await expect(refused).rejects.toMatchObject({
          code: "TOO_LARGE",
          message: expect.stringMatching(
            /channel big takes at most 3000, the most its readers read/,
          ),
        });
        expect((await store.post("big", { from: "a", body: "y".repeat(3000) })).seq).toBe(1);
        const read = await store.read("big", { as: "b" });
        expect(read.messages.map((m) => m.body.length)).toEqual([3000]);
        // A planted limit beyond 64 MiB is no limit of the channel: the default holds.
        await store.init("odd", { extra: { max_body_bytes: 2 ** 40 } });
        await expectCode(
          store.post("odd", { from: "a", body: "x".repeat(1024 * 1024 + 1) }),
          "TOO_LARGE",
        );
      });

      it("titles default to the body's first line", async () => {
        await store.post("ch", { from: "a", body: "\n# Heading here\nmore" });
        const [m] = await store.peek("ch", 1);
        expect(m?.title).toBe("Heading here");
      });
    });

    describe("read, cursors and relevance", () => {
      beforeEach(async () => {
        await store.init("ch");
      });

      it("delivers broadcasts and messages to me, never my own or others'", async () => {
        await store.post("ch", { from: "alice", body: "to all" });
        await store.post("ch", { from: "alice", to: "bob", body: "to bob" });
        await store.post("ch", { from: "alice", to: "carol", body: "to carol" });
        await store.post("ch", { from: "bob", body: "bob's own" });
        await store.post("ch", { from: "alice", to: "*", body: "star" });
        await store.post("ch", { from: "alice", to: "ALL", body: "ALL" });
        await store.post("ch", { from: "alice", to: ["carol", "Bob"], body: "list" });
        const r = await store.read("ch", { as: "bob" });
        expect(bodies(r.messages)).toEqual(["to all", "to bob", "star", "ALL", "list"]);
        expect(r.cursor).toBe(7);
      });

      it("advances the cursor past irrelevant messages, so the next read is empty", async () => {
        await store.post("ch", { from: "alice", to: "carol", body: "not for bob" });
        const first = await store.read("ch", { as: "bob" });
        expect(first.messages).toEqual([]);
        expect(first.cursor).toBe(1);
        expect(await store.cursor("ch", "bob")).toBe(1);
        await store.post("ch", { from: "alice", body: "now" });
        expect(bodies((await store.read("ch", { as: "bob" })).messages)).toEqual(["now"]);
        expect((await store.read("ch", { as: "bob" })).messages).toEqual([]);
      });

      it("peek reads without moving the cursor; all reads from the start", async () => {
        await store.post("ch", { from: "alice", body: "one" });
        expect((await store.read("ch", { as: "bob", peek: true })).messages).toHaveLength(1);
        expect(await store.cursor("ch", "bob")).toBe(0);
        await store.read("ch", { as: "bob" });
        expect(bodies((await store.read("ch", { as: "bob", all: true })).messages)).toEqual([
          "one",
        ]);
      });

      it("everyone reads every message, whoever it is for, and moves the cursor like a read", async () => {
        await store.post("ch", { from: "alice", to: "carol", body: "for carol" });
        await store.post("ch", { from: "bob", body: "own" });
        await store.post("ch", { from: "alice", to: "bob", body: "for bob" });
        expect(bodies((await store.read("ch", { as: "bob", all: true })).messages)).toEqual([
          "for bob",
        ]);
        const r = await store.read("ch", { as: "bob", all: true, everyone: true });
        expect(bodies(r.messages)).toEqual(["for carol", "own", "for bob"]);
        expect(r.cursor).toBe(3);
        expect(await store.cursor("ch", "bob")).toBe(3);
      });

      it("treats Bob and bob as one identity for cursors and relevance alike", async () => {
        await store.post("ch", { from: "Bob", body: "from Bob" });
        await store.post("ch", { from: "alice", to: "BOB", body: "to BOB" });
        const r = await store.read("ch", { as: "bob" });
        expect(bodies(r.messages)).toEqual(["to BOB"]);
        expect(await store.cursor("ch", "BOB")).toBe(2);
      });

      it("cursors are per agent and per channel", async () => {
        await store.init("other");
        await store.post("ch", { from: "alice", body: "x" });
        await store.post("other", { from: "alice", body: "y" });
        await store.read("ch", { as: "bob" });
        expect(await store.cursor("ch", "bob")).toBe(1);
        expect(await store.cursor("ch", "carol")).toBe(0);
        expect(await store.cursor("other", "bob")).toBe(0);
      });

      it("a bounded read or wait returns at most its limit and moves the cursor only past that", async () => {
        for (let i = 1; i <= 5; i++) await store.post("ch", { from: "alice", body: `m${i}` });
        const first = await store.read("ch", { as: "bob", limit: { messages: 2 } });
        expect(bodies(first.messages)).toEqual(["m1", "m2"]);
        expect(first).toMatchObject({ cursor: 2, more: 3 });
        // The first message is returned whatever its size: a read always makes progress.
        const big = await store.read("ch", { as: "bob", limit: { bytes: 1 } });
        expect(bodies(big.messages)).toEqual(["m3"]);
        const waited = await store.wait(["ch"], { as: "bob", limit: { messages: 1 } });
        expect(bodies(waited.messages)).toEqual(["m4"]);
        expect(waited).toMatchObject({ cursors: { ch: 4 }, more: 1 });
        const rest = await store.read("ch", { as: "bob", limit: { messages: 10 } });
        expect(bodies(rest.messages)).toEqual(["m5"]);
        expect(rest.more).toBeUndefined();
        expect(await store.cursor("ch", "bob")).toBe(5);
      });

      it("peek returns the last n messages whoever they were for", async () => {
        for (let i = 1; i <= 5; i++) await store.post("ch", { from: "a", to: "z", body: `m${i}` });
        expect(bodies(await store.peek("ch", 3))).toEqual(["m3", "m4", "m5"]);
        expect(bodies(await store.peek("ch"))).toEqual(["m3", "m4", "m5"]);
      });
    });

    describe("wait", () => {
      beforeEach(async () => {
        await store.init("ch");
        await store.init("ch2");
      });

      it("returns at once when a relevant message is already there, and advances the cursor", async () => {
        await store.post("ch", { from: "alice", body: "waiting" });
        const r = await store.wait(["ch"], { as: "bob", timeoutMs: 5000 });
        expect(bodies(r.messages)).toEqual(["waiting"]);
        expect(r.cursors).toEqual({ ch: 1 });
        expect(await store.cursor("ch", "bob")).toBe(1);
      });

      /**
       * A wake test's wait: the sleep-poll is set far beyond the wait's limit, so that only the
       * backend's own wake-up (file watch, NATS subscription, the daemon's in-process notice)
       * can answer in time; a backend without one is tested on its poll. The limit is generous
       * (a loaded machine can take seconds to post), the poll three times beyond it.
       */
      function waitForBob(channels: string[]) {
        return store.wait(channels, {
          as: "bob",
          timeoutMs: 20_000,
          intervalMs: backend.pollOnly ? 100 : 60_000,
        });
      }

      it("wakes when another connection posts", async () => {
        const poster = await another();
        const waiting = waitForBob(["ch"]);
        // Once the wait is parked, so that the posts must wake it.
        await waitParked(store, "ch", "bob");
        await poster.post("ch", { from: "alice", to: "carol", body: "not for bob" });
        // Spacing under test: the wait, woken by a message not for bob, must sleep and wake again.
        await delay(30);
        await poster.post("ch", { from: "alice", to: "bob", body: "for bob" });
        const r = await waiting;
        expect(bodies(r.messages)).toEqual(["for bob"]);
        expect(await store.cursor("ch", "bob")).toBe(2);
      });

      it("is not woken by the waiter's own message", async () => {
        const waiting = store.wait(["ch"], { as: "bob", timeoutMs: 400, intervalMs: 50 });
        await (await another()).post("ch", { from: "bob", body: "mine" });
        await expectCode(waiting, "TIMEOUT");
      });

      it("waits on several channels and says which one answered", async () => {
        const waiting = waitForBob(["ch", "ch2"]);
        // Once the wait is parked, as above.
        await waitParked(store, "ch2", "bob");
        await (await another()).post("ch2", { from: "alice", body: "over here" });
        const r = await waiting;
        expect(r.messages.map((m) => [m.channel, m.body])).toEqual([["ch2", "over here"]]);
      });

      it("times out with TIMEOUT and honours an AbortSignal", async () => {
        await expectCode(store.wait(["ch"], { as: "bob", timeoutMs: 100 }), "TIMEOUT");
        const ac = new AbortController();
        const waiting = store.wait(["ch"], { as: "bob", timeoutMs: 10_000, signal: ac.signal });
        // Timing under test: the abort comes while the wait is pending, not before it starts.
        setTimeout(() => ac.abort(), 30);
        await expectCode(waiting, "ABORTED");
        expect(await store.cursor("ch", "bob")).toBe(0);
      });

      it("refuses an unknown channel before waiting", async () => {
        await expectCode(
          store.wait(["ch", "nope"], { as: "bob", timeoutMs: 5000 }),
          "CHANNEL_NOT_FOUND",
        );
      });
    });

    describe("watch", () => {
      it("yields every new message in order, from any connection", async () => {
        await store.init("ch");
        await store.post("ch", { from: "a", body: "old" });
        const ac = new AbortController();
        const seen: Message[] = [];
        // Starting after #1 explicitly: "new" would otherwise mean "after whatever is newest
        // when the subscription reaches the backend", which a loaded machine can delay past
        // the first post below.
        const watching = store.watch(["ch"], { signal: ac.signal, intervalMs: 100, after: 1 });
        const done = (async () => {
          for await (const m of watching) {
            seen.push(m);
            if (seen.length === 5) ac.abort();
          }
        })();
        const poster = await another();
        for (let i = 1; i <= 5; i++) await poster.post("ch", { from: "b", to: "z", body: `n${i}` });
        await done;
        expect(bodies(seen)).toEqual(["n1", "n2", "n3", "n4", "n5"]);
        expect(seen.map((m) => m.seq)).toEqual([2, 3, 4, 5, 6]);
      });

      it("starts after the newest message when no start is given", async () => {
        await store.init("ch");
        await store.post("ch", { from: "a", body: "old" });
        const ac = new AbortController();
        const seen: Message[] = [];
        const done = (async () => {
          for await (const m of store.watch(["ch"], { signal: ac.signal, intervalMs: 100 })) {
            seen.push(m);
            ac.abort();
          }
        })();
        // "New" means after whatever is newest when the subscription reaches the backend, which
        // nothing outside tells: post until the watch yields; it must never yield "old".
        const poster = await another();
        let posted = 0;
        await vi.waitFor(
          async () => {
            if (seen.length === 0) await poster.post("ch", { from: "b", body: `new ${++posted}` });
            expect(seen).not.toHaveLength(0);
          },
          { timeout: 5_000, interval: 100 },
        );
        await done;
        // One look may yield several of the posts before the abort is seen.
        for (const body of bodies(seen)) expect(body).toMatch(/^new \d+$/);
      });
    });

    describe("names that share a cursor key (bob_x, bob-x, bob.x)", () => {
      it("init refuses members that would be one identity, naming both", async () => {
        const err = await expectCode(
          store.init("ch", { members: ["bob_x", "alice", "bob-x"] }),
          "INVALID_ARGUMENT",
        );
        expect(err.message).toContain('"bob_x" and "bob-x" would be one identity');
        await expectCode(store.roster("ch"), "CHANNEL_NOT_FOUND");
        await store.init("ch", { members: ["alice", "Bob"] });
      });

      it("a channel with members refuses a name that collides with one, in every operation", async () => {
        await store.init("ch", { members: ["alice", "bob_x"] });
        await store.addTask("ch", { id: "1", title: "t", from: "alice" });
        await store.claim("ch", "1", "bob_x");
        const other = await another();
        for (const [s, name] of [
          [store, "bob.x"],
          [other, "bob-x"],
          [other, "Bob.X"],
        ] as const) {
          const refusals = [
            () => s.post("ch", { from: name, body: "hi" }),
            () => s.read("ch", { as: name }),
            () => s.wait(["ch"], { as: name, timeoutMs: 50 }),
            () => s.claim("ch", "1", name),
            () => s.release("ch", "1", name),
            () => s.addTask("ch", { title: "t2", from: name }),
          ];
          for (const refused of refusals) {
            const err = await expectCode(refused(), "NOT_A_MEMBER");
            expect(err.message).toContain("collides with bob_x, a member of the channel");
          }
        }
        // bob_x's claim and cursor are untouched; BOB_X is bob_x.
        expect((await store.tasks("ch"))[0]).toMatchObject({ state: "claimed", holder: "bob-x" });
        expect(await store.cursor("ch", "bob_x")).toBe(0);
        await store.post("ch", { from: "BOB_X", body: "still me" });
        expect((await other.release("ch", "1", "bob_x")).state).toBe("open");
      });

      it("an open channel declares no names: the rule starts with its members", async () => {
        await store.init("ch");
        await store.post("ch", { from: "bob_x", body: "first" });
        expect((await store.post("ch", { from: "bob.x", body: "no members, no rule" })).seq).toBe(
          2,
        );
      });

      it("the maintainer in _meta.json is a known name too", async () => {
        await store.init("ch", { extra: { maintainer: "alice" } });
        const err = await expectCode(
          store.post("ch", {
            from: "alice.",
            to: "bob",
            replyTo: 1,
            status: "approved",
            body: "ok",
          }),
          "NOT_A_MEMBER",
        );
        expect(err.message).toContain("collides with alice, its maintainer");
        await expectCode(
          store.init("ch2", { members: ["alice"], extra: { maintainer: "alice." } }),
          "INVALID_ARGUMENT",
        );
      });
    });

    describe("tasks and claims", () => {
      beforeEach(async () => {
        await store.init("ch");
      });

      it("adds tasks exclusively and lists them open and claimed with holders", async () => {
        const t1 = await store.addTask("ch", { title: "first", from: "alice" });
        const t2 = await store.addTask("ch", { id: "build-x", title: "second", from: "alice" });
        expect([t1.id, t2.id]).toEqual(["1", "build-x"]);
        await expectCode(
          store.addTask("ch", { id: "1", title: "dup", from: "alice" }),
          "TASK_EXISTS",
        );
        await store.claim("ch", "task-1.md", "bob");
        expect(
          (await store.tasks("ch")).map((t) => [t.id, t.state, t.holder ?? null, t.title]),
        ).toEqual([
          ["1", "claimed", "bob", "first"],
          ["build-x", "open", null, "second"],
        ]);
        await expectCode(
          store.addTask("ch", { id: "1", title: "again", from: "alice" }),
          "TASK_EXISTS",
        );
      });

      it("lets exactly one of many concurrent claimants win", async () => {
        await store.addTask("ch", { id: "7", title: "contested", from: "alice" });
        const stores = await Promise.all(Array.from({ length: 8 }, () => another()));
        const results = await Promise.allSettled(
          stores.map((s, i) => s.claim("ch", ["7", "task-7", "task-7.md"][i % 3]!, `agent${i}`)),
        );
        const won = results.filter((r) => r.status === "fulfilled");
        expect(won).toHaveLength(1);
        for (const r of results) {
          if (r.status === "rejected") expect((r.reason as AgentChatError).code).toBe("CLAIM_LOST");
        }
      });

      it("lets only the holder release; a released task can be claimed again", async () => {
        await store.addTask("ch", { id: "3", title: "t", from: "alice" });
        await store.claim("ch", "3", "bob");
        await expectCode(store.claim("ch", "3", "carol"), "CLAIM_LOST");
        await expectCode(store.release("ch", "3", "carol"), "NOT_HOLDER");
        const released = await store.release("ch", "3", "Bob");
        expect(released.state).toBe("open");
        expect((await store.claim("ch", "3", "carol")).holder).toBe("carol");
      });

      it("claiming a task that does not exist is TASK_NOT_FOUND; bad ids are INVALID_NAME", async () => {
        await expectCode(store.claim("ch", "99", "bob"), "TASK_NOT_FOUND");
        await expectCode(store.claim("ch", "../x", "bob"), "INVALID_NAME");
      });

      it("task: one task as tasks lists it, by id or file name; TASK_NOT_FOUND, INVALID_NAME", async () => {
        await store.addTask("ch", { id: "4", title: "one", from: "alice" });
        await store.addTask("ch", { id: "5", title: "other", from: "alice" });
        await store.claim("ch", "4", "bob", { ttlMs: 60_000 });
        const listed = (await store.tasks("ch")).find((t) => t.id === "4");
        expect(await store.task("ch", "4")).toEqual(listed);
        expect(await store.task("ch", "task-5.md")).toMatchObject({ id: "5", state: "open" });
        await expectCode(store.task("ch", "99"), "TASK_NOT_FOUND");
        await expectCode(store.task("ch", "../x"), "INVALID_NAME");
        await expectCode(store.task("nowhere", "4"), "CHANNEL_NOT_FOUND");
      });

      it("renew, done and release in an unknown channel are CHANNEL_NOT_FOUND, a TTL given or not", async () => {
        await expectCode(store.renew("nowhere", "4", "bob"), "CHANNEL_NOT_FOUND");
        await expectCode(
          store.renew("nowhere", "4", "bob", { ttlMs: 60_000 }),
          "CHANNEL_NOT_FOUND",
        );
        await expectCode(store.done("nowhere", "4", "bob"), "CHANNEL_NOT_FOUND");
        await expectCode(store.release("nowhere", "4", "bob"), "CHANNEL_NOT_FOUND");
      });
    });

    describe("leases and fencing tokens", () => {
      const MINUTE = 60_000;
      beforeEach(async () => {
        await store.init("ch");
        await store.addTask("ch", { id: "1", title: "build", from: "alice" });
      });

      it("a claim grants token 1 with an expiry; tasks shows holder, token and time left", async () => {
        const before = clock();
        const claimed = await store.claim("ch", "1", "bob", { ttlMs: 10 * MINUTE });
        expect(claimed).toMatchObject({ state: "claimed", holder: "bob", token: 1 });
        const expires = Date.parse(claimed.expiresAt!);
        expect(expires).toBeGreaterThanOrEqual(before + 10 * MINUTE);
        expect(expires).toBeLessThanOrEqual(clock() + 10 * MINUTE);
        const [listed] = await store.tasks("ch");
        expect(listed).toMatchObject({ state: "claimed", holder: "bob", token: 1 });
        expect(listed!.expiresAt).toBe(claimed.expiresAt);
      });

      it("the default lease is 30 minutes, or the channel's task_ttl seconds", async () => {
        const t0 = clock();
        const d = await store.claim("ch", "1", "bob");
        expect(Date.parse(d.expiresAt!) - t0).toBeGreaterThanOrEqual(30 * MINUTE);
        expect(Date.parse(d.expiresAt!) - clock()).toBeLessThanOrEqual(30 * MINUTE);
        await store.init("short", { extra: { task_ttl: 90 } });
        await store.addTask("short", { id: "1", title: "t", from: "alice" });
        const t1 = clock();
        const s = await store.claim("short", "1", "bob");
        expect(Date.parse(s.expiresAt!) - t1).toBeGreaterThanOrEqual(90_000);
        expect(Date.parse(s.expiresAt!) - clock()).toBeLessThanOrEqual(90_000);
      });

      it("refuses a TTL that is zero, negative, fractional or past the year 9999", async () => {
        for (const ttlMs of [0, -1, 1.5, 8_000 * 365 * 24 * 60 * MINUTE]) {
          await expectCode(store.claim("ch", "1", "bob", { ttlMs }), "INVALID_ARGUMENT");
        }
        expect((await store.tasks("ch"))[0]!.state).toBe("open");
      });

      it("an expired lease makes the task claimable again with the next token; the late holder is fenced out", async () => {
        await store.claim("ch", "1", "bob", { ttlMs: MINUTE });
        expect((await store.fence("ch", "1", 1)).live).toBe(true);
        await expectCode(store.claim("ch", "1", "carol"), "CLAIM_LOST");
        advance(MINUTE + SKEW_GRACE_MS + 1);
        const expired = (await store.tasks("ch"))[0]!;
        expect(expired).toMatchObject({ state: "expired", holder: "bob", token: 1 });
        expect((await store.fence("ch", "1", 1)).live).toBe(false);

        const other = await another();
        const taken = await other.claim("ch", "1", "carol", { ttlMs: 10 * MINUTE });
        expect(taken).toMatchObject({ state: "claimed", holder: "carol", token: 2 });

        // bob comes back late: with or without his token, nothing he does changes carol's task.
        for (const late of [
          () => store.done("ch", "1", "bob", { token: 1, note: "finished" }),
          () => store.renew("ch", "1", "bob", { token: 1 }),
          () => store.release("ch", "1", "bob", { token: 1 }),
          () => store.done("ch", "1", "bob"),
        ]) {
          const err = await expectCode(late(), "NOT_HOLDER");
          expect(err.message).toContain("carol");
          expect(err.message).toContain("token 2");
        }
        // carol herself with a stale token is refused too.
        const stale = await expectCode(store.done("ch", "1", "carol", { token: 1 }), "NOT_HOLDER");
        expect(stale.message).toContain("token 2");
        expect((await store.tasks("ch"))[0]).toMatchObject({
          state: "claimed",
          holder: "carol",
          token: 2,
        });
        expect((await store.fence("ch", "1", 2)).live).toBe(true);
        expect((await store.fence("ch", "1", 1)).live).toBe(false);
      });

      it("the holder's post or read in the channel renews its lease; nobody else's does", async () => {
        await store.claim("ch", "1", "bob"); // the default lease: 30 minutes
        advance(15 * MINUTE);
        await (await another()).post("ch", { from: "bob", body: "still on it" });
        advance(25 * MINUTE); // 40 minutes after the claim: past the lease it was granted
        expect((await store.tasks("ch"))[0]).toMatchObject({ state: "claimed", holder: "bob" });
        await (await another()).read("ch", { as: "bob" }); // 5 minutes left: renewed again
        advance(25 * MINUTE);
        expect((await store.tasks("ch"))[0]).toMatchObject({ state: "claimed", holder: "bob" });
        const carol = await another();
        await carol.post("ch", { from: "carol", body: "anyone on task 1?" });
        await carol.read("ch", { as: "carol" });
        advance(6 * MINUTE); // 31 minutes after bob's last activity
        expect((await store.tasks("ch"))[0]).toMatchObject({ state: "expired", holder: "bob" });
        expect(await carol.claim("ch", "1", "carol")).toMatchObject({ holder: "carol", token: 2 });
      });

      it("renew moves the expiry from now; the holder's own expired lease cannot be renewed", async () => {
        await store.claim("ch", "1", "bob", { ttlMs: MINUTE });
        advance(MINUTE / 2);
        const renewed = await store.renew("ch", "1", "Bob", { token: 1, ttlMs: MINUTE });
        expect(renewed).toMatchObject({ state: "claimed", token: 1 });
        expect(Date.parse(renewed.expiresAt!)).toBeGreaterThanOrEqual(clock() + MINUTE - 1000);
        advance(MINUTE / 2 + 1);
        expect((await store.fence("ch", "1", 1)).live).toBe(true);
        advance(MINUTE);
        await expectCode(store.renew("ch", "1", "bob"), "NOT_HOLDER");
        // Claiming again is how it comes back: a new grant, a new token.
        expect((await store.claim("ch", "1", "bob")).token).toBe(2);
      });

      it("done ends the task with who finished it; it cannot be claimed again", async () => {
        await store.claim("ch", "1", "bob");
        await expectCode(store.done("ch", "1", "carol"), "NOT_HOLDER");
        const done = await store.done("ch", "1", "bob", { token: 1, note: "shipped\nin 0.2" });
        expect(done).toMatchObject({
          state: "done",
          holder: "bob",
          token: 1,
          note: "shipped in 0.2",
        });
        expect(done.doneAt).toBeDefined();
        expect((await store.tasks("ch"))[0]).toMatchObject({ state: "done", holder: "bob" });
        expect((await store.fence("ch", "1", 1)).live).toBe(false);
        await expectCode(store.claim("ch", "1", "carol"), "CLAIM_LOST");
        await expectCode(store.release("ch", "1", "bob"), "NOT_HOLDER");
      });

      it("tokens survive release: the next grant gets one more, never a reused number", async () => {
        await store.claim("ch", "1", "bob");
        const released = await store.release("ch", "1", "bob", { token: 1 });
        expect(released).toMatchObject({ state: "open", token: 1 });
        expect((await store.fence("ch", "1", 1)).live).toBe(false);
        expect((await store.claim("ch", "1", "carol")).token).toBe(2);
        advance(31 * MINUTE);
        expect((await store.claim("ch", "1", "bob")).token).toBe(3);
      });

      it("16 concurrent claimants of an expired task: exactly one wins, with token + 1", async () => {
        await store.claim("ch", "1", "bob", { ttlMs: MINUTE });
        advance(MINUTE + SKEW_GRACE_MS + 1);
        const stores = await Promise.all(Array.from({ length: 16 }, () => another()));
        const results = await Promise.allSettled(
          stores.map((s, i) => s.claim("ch", "1", `agent${i}`)),
        );
        const won = results.filter((r) => r.status === "fulfilled");
        expect(won).toHaveLength(1);
        for (const r of results) {
          if (r.status === "rejected") expect((r.reason as AgentChatError).code).toBe("CLAIM_LOST");
        }
        const winner = (won[0] as PromiseFulfilledResult<{ holder: string; token: number }>).value;
        expect(winner.token).toBe(2);
        expect((await store.tasks("ch"))[0]).toMatchObject({ holder: winner.holder, token: 2 });
      });

      it("fence refuses a token that is not a positive integer", async () => {
        await expectCode(store.fence("ch", "1", 0), "INVALID_ARGUMENT");
        await expectCode(store.fence("ch", "1", -2), "INVALID_ARGUMENT");
        expect((await store.fence("ch", "1", 1)).live).toBe(false);
      });
    });

    describe("path leases", () => {
      const MINUTE = 60_000;
      beforeEach(async () => {
        await store.init("ch");
      });

      it("an exclusive lease is granted with a token; another agent's overlapping one is refused naming it", async () => {
        const mine = await store.addPathLease("ch", "./src/store/**", "bob", {
          ttlMs: 10 * MINUTE,
          reason: "backend core",
        });
        expect(mine).toMatchObject({
          token: 1,
          pattern: "src/store/**",
          holder: "bob",
          exclusive: true,
          state: "live",
          reason: "backend core",
        });
        const other = await another();
        for (const pattern of ["src/store/fs/fs-store.ts", "src/**", "src", "**/*.ts"]) {
          const err = await expectCode(other.addPathLease("ch", pattern, "carol"), "CLAIM_LOST");
          expect(err.message).toContain("bob holds src/store/**");
          expect(err.message).toContain("token 1");
        }
        await expectCode(
          other.addPathLease("ch", "src/store/x", "carol", { shared: true }),
          "CLAIM_LOST",
        );
        const apart = await other.addPathLease("ch", "docs/**", "carol");
        expect(apart).toMatchObject({ token: 2, holder: "carol" });
        // bob's own leases never conflict with each other.
        expect((await store.addPathLease("ch", "src/store/fs/**", "bob")).token).toBe(3);
        const listed = await other.pathLeases("ch");
        expect(listed.map((l) => [l.token, l.holder, l.pattern])).toEqual([
          [1, "bob", "src/store/**"],
          [2, "carol", "docs/**"],
          [3, "bob", "src/store/fs/**"],
        ]);
      });

      it("shared leases coexist; --force records a conflicting lease and the leases it overrode", async () => {
        await store.addPathLease("ch", "README.md", "bob", { shared: true });
        expect(
          await store.addPathLease("ch", "README.md", "carol", { shared: true }),
        ).toMatchObject({ token: 2, exclusive: false });
        const forced = await store.addPathLease("ch", "*.md", "dave", { force: true });
        expect(forced.forced).toHaveLength(2);
        expect(forced.forced!.join(" ")).toContain("bob holds README.md");
        expect((await store.pathLeases("ch")).find((l) => l.token === 3)?.forced).toHaveLength(2);
      });

      it("refuses TTLs and patterns that are out of bounds", async () => {
        for (const ttlMs of [0, -1, 1.5, 8_000 * 365 * 24 * 60 * MINUTE]) {
          await expectCode(
            store.addPathLease("ch", "src/**", "bob", { ttlMs }),
            "INVALID_ARGUMENT",
          );
        }
        for (const pattern of [
          "../x",
          "/etc/passwd",
          "src/../../x",
          "C:/x",
          "{..,src}/x",
          "",
          "!src",
        ]) {
          await expectCode(store.addPathLease("ch", pattern, "bob"), "INVALID_ARGUMENT");
        }
        expect(await store.pathLeases("ch")).toEqual([]);
        await expectCode(store.addPathLease("nope", "src/**", "bob"), "CHANNEL_NOT_FOUND");
      });

      it("an expired lease reserves nothing; its late holder can neither renew nor release it", async () => {
        await store.addPathLease("ch", "src/**", "bob", { ttlMs: MINUTE });
        advance(MINUTE + SKEW_GRACE_MS + 1);
        expect((await store.pathLeases("ch"))[0]).toMatchObject({
          state: "expired",
          holder: "bob",
        });
        const other = await another();
        expect(await other.addPathLease("ch", "src/a.ts", "carol")).toMatchObject({ token: 2 });
        for (const late of [
          () => store.renewPathLease("ch", "1", "bob", { token: 1 }),
          () => store.releasePathLease("ch", "src/**", "bob"),
        ]) {
          const err = await expectCode(late(), "NOT_HOLDER");
          expect(err.message).toContain("expired");
        }
        // Asking again is how it comes back: a new grant, a new token (refused while carol holds a part).
        await expectCode(store.addPathLease("ch", "src/**", "bob"), "CLAIM_LOST");
      });

      it("renew and release by token or pattern: only the holder, only with the live token", async () => {
        await store.addPathLease("ch", "src/**", "bob", { ttlMs: MINUTE });
        const other = await another();
        const err = await expectCode(other.releasePathLease("ch", "1", "carol"), "NOT_HOLDER");
        expect(err.message).toContain("bob holds src/**");
        await expectCode(store.renewPathLease("ch", "src/**", "bob", { token: 7 }), "NOT_HOLDER");
        await expectCode(store.releasePathLease("ch", "lib/**", "bob"), "NOT_FOUND");
        advance(MINUTE / 2);
        // Owners are compared as chat.py compares them, exactly: `Bob` is not `bob`.
        await expectCode(store.renewPathLease("ch", "src/**", "Bob", { token: 1 }), "NOT_HOLDER");
        const renewed = await store.renewPathLease("ch", "src/**", "bob", { token: 1 });
        expect(renewed).toMatchObject({ token: 1, state: "live" });
        expect(Date.parse(renewed.expiresAt)).toBeGreaterThanOrEqual(clock() + MINUTE - 1000);
        // Asking again for a pattern one holds renews it: same token.
        expect((await store.addPathLease("ch", "src/**", "bob")).token).toBe(1);
        const released = await store.releasePathLease("ch", "1", "bob", { token: 1 });
        expect(released).toMatchObject({ token: 1, state: "released" });
        expect(await store.pathLeases("ch")).toEqual([]);
        expect((await other.addPathLease("ch", "src/**", "carol")).token).toBe(2);
      });

      it("the holder's post or read renews its path leases; nobody else's does", async () => {
        await store.addPathLease("ch", "src/**", "bob", { ttlMs: 30 * MINUTE });
        advance(15 * MINUTE);
        await (await another()).post("ch", { from: "bob", body: "still on it" });
        advance(25 * MINUTE);
        expect((await store.pathLeases("ch"))[0]).toMatchObject({ state: "live", holder: "bob" });
        const carol = await another();
        await carol.post("ch", { from: "carol", body: "anyone in src?" });
        advance(31 * MINUTE);
        expect((await store.pathLeases("ch"))[0]).toMatchObject({ state: "expired" });
      });

      it("8 agents racing for overlapping exclusive leases: exactly one wins", async () => {
        const stores = await Promise.all(Array.from({ length: 8 }, () => another()));
        const results = await Promise.allSettled(
          stores.map((s, i) => s.addPathLease("ch", i % 2 ? "src/**" : "src/a.ts", `agent${i}`)),
        );
        const won = results.filter((r) => r.status === "fulfilled");
        expect(won).toHaveLength(1);
        for (const r of results) {
          if (r.status === "rejected") expect((r.reason as AgentChatError).code).toBe("CLAIM_LOST");
        }
        expect(await store.pathLeases("ch")).toHaveLength(1);
      });
    });

    describe("delivery: receipts, waitFor, presence (docs/delivery.md)", () => {
      beforeEach(async () => {
        await store.init("team", { members: ["alice", "bob", "carol"] });
      });

      const stateOf = (r: { addressees: Array<{ agent: string; state: string }> }, agent: string) =>
        r.addressees.find((a) => a.agent === agent)?.state;

      it("a message goes stored → notified → read → answered, with a time for each step", async () => {
        const { seq } = await store.post("team", { from: "alice", to: "bob", body: "ship it?" });
        const bob = await another();
        let r = await store.receipts("team", seq);
        expect(r).toMatchObject({ channel: "team", seq, from: "alice" });
        expect(r.addressees).toEqual([{ agent: "bob", state: "stored" }]);
        await bob.notify("team", "bob", seq);
        r = await store.receipts("team", seq);
        expect(r.addressees[0]).toMatchObject({
          state: "notified",
          notifiedAt: expect.any(String),
        });
        await bob.read("team", { as: "bob" });
        r = await store.receipts("team", seq);
        expect(r.addressees[0]).toMatchObject({ state: "read", readAt: expect.any(String) });
        const answer = await bob.post("team", {
          from: "bob",
          to: "alice",
          body: "yes",
          replyTo: seq,
        });
        r = await store.receipts("team", seq);
        expect(r.addressees[0]).toMatchObject({ state: "answered", answer: answer.seq });
        expect(Date.parse(r.addressees[0]!.answeredAt!)).toBeGreaterThan(0);
        // The answer's ts has whole seconds, the steps milliseconds: still shown in order.
        const { notifiedAt, readAt, answeredAt } = r.addressees[0]!;
        const [n, rd, a] = [notifiedAt, readAt, answeredAt].map((t) => Date.parse(t!));
        expect(n).toBeLessThanOrEqual(rd!);
        expect(rd, `read at ${readAt}, answered at ${answeredAt}`).toBeLessThanOrEqual(a!);
      });

      it("a broadcast's addressees are the members but its sender; notify never goes back", async () => {
        const { seq } = await store.post("team", { from: "alice", body: "hello all" });
        await store.notify("team", "carol", seq);
        await store.notify("team", "carol", 1);
        const r = await store.receipts("team", seq);
        expect(r.addressees.map((a) => a.agent).sort()).toEqual(["bob", "carol"]);
        expect(stateOf(r, "carol")).toBe("notified");
        expect(stateOf(r, "bob")).toBe("stored");
      });

      it("receipts of a missing message, channel or a bad seq: clear errors", async () => {
        await expectCode(store.receipts("team", 5), "NOT_FOUND");
        await expectCode(store.receipts("nope", 1), "CHANNEL_NOT_FOUND");
        await expectCode(store.receipts("team", 0), "INVALID_ARGUMENT");
        await expectCode(store.notify("team", "bob", -1), "INVALID_ARGUMENT");
      });

      it("waitFor read returns once the addressee reads", async () => {
        const { seq } = await store.post("team", { from: "alice", to: "bob", body: "read me" });
        const bob = await another();
        const waiting = store.waitFor("team", seq, {
          state: "read",
          timeoutMs: 10_000,
          intervalMs: 50,
        });
        await bob.read("team", { as: "bob" });
        const r = await waiting;
        expect(stateOf(r, "bob")).toBe("read");
      });

      it("waitFor times out naming who has not, and why; an unknown state is refused", async () => {
        const { seq } = await store.post("team", { from: "alice", to: "bob", body: "anyone?" });
        const err = await expectCode(
          store.waitFor("team", seq, { state: "answered", timeoutMs: 300, intervalMs: 50 }),
          "TIMEOUT",
        );
        expect(err.message).toMatch(/bob: never notified; never seen/);
        await expectCode(
          store.waitFor("team", seq, { state: "seen" as "read", timeoutMs: 300 }),
          "INVALID_ARGUMENT",
        );
      });

      it("who lists members: active, never seen, unread and what each owes an answer", async () => {
        const q = await store.post("team", {
          from: "alice",
          to: "bob",
          body: "which schema?",
          status: "question",
        });
        const who = await store.who("team");
        expect(who.map((p) => p.agent)).toEqual(["alice", "bob", "carol"]);
        const [alice, bob, carol] = who;
        expect(alice).toMatchObject({ state: "active", harness: "cli" });
        expect(bob).toMatchObject({ state: "never-seen", unread: 1, owes: [q.seq] });
        expect(bob!.oldestUnread).toEqual(expect.any(String));
        expect(carol).toMatchObject({ state: "never-seen", unread: 0, owes: [] });
        await store.post("team", { from: "bob", to: "alice", body: "v2", replyTo: q.seq });
        expect((await store.who("team")).find((p) => p.agent === "bob")?.owes).toEqual([]);
      });

      it("a parked wait shows as waiting on its channels, and not once it returns", async () => {
        const bob = await another();
        const controller = new AbortController();
        const waiting = bob.wait(["team"], {
          as: "bob",
          timeoutMs: 10_000,
          signal: controller.signal,
        });
        await until(
          async () => (await store.who("team")).find((p) => p.agent === "bob")?.state === "waiting",
        );
        expect((await store.who()).find((p) => p.agent === "bob")?.parkedOn).toEqual(["team"]);
        await store.post("team", { from: "alice", to: "bob", body: "wake" });
        await waiting;
        await until(
          async () => (await store.who("team")).find((p) => p.agent === "bob")?.state === "active",
        );
      });

      it("a parked wait silent past the threshold is gone", async () => {
        const bob = await another();
        const controller = new AbortController();
        const waiting = bob
          .wait(["team"], { as: "bob", timeoutMs: 10_000, signal: controller.signal })
          .catch(() => undefined);
        await until(
          async () => (await store.who("team")).find((p) => p.agent === "bob")?.state === "waiting",
        );
        advance(5 * 60_000);
        const bobNow = (await store.who("team")).find((p) => p.agent === "bob");
        expect(bobNow).toMatchObject({ state: "gone", parkedOn: ["team"] });
        expect(bobNow?.why).toMatch(/silent/);
        controller.abort();
        await waiting;
      });
    });

    describe("retention", () => {
      /** #1–#3 kept beside the channel (a folder's `_archive/`), or exported first (NATS). */
      async function expectArchived(exportTo: string): Promise<void> {
        const seqs = (ms: Message[]) => ms.map((m) => m.seq);
        const all = seqs(await store.peek("old", 10, { archived: true }));
        if (all[0] === 1) return expect(all).toEqual([1, 2, 3, 4, 5, 6, 7]);
        expect(all).toEqual([4, 5, 6, 7]);
        const exported = await openStore(exportTo);
        expect(seqs(await exported.peek("old", 10))).toEqual([1, 2, 3]);
        await exported.close();
      }

      /** The store that archives: this one, or a daemon's folder (it archives nothing itself). */
      async function archiver(): Promise<Retention> {
        const local = store.retention ? store : await backend.local?.();
        if (!local?.retention) throw new Error(`${name} has no archive, on itself or its folder`);
        if (local !== store) opened.push(local);
        return local.retention;
      }

      it("archive: old messages leave the channel, still reachable; numbering and cursors go on", async () => {
        await store.init("old");
        const post = (i: number) =>
          store.post("old", { from: "alice", title: `note ${i}`, body: `common word${i}` });
        await Promise.all([1, 2, 3, 4].map((i) => post(i)));
        const bob = await another();
        await bob.read("old", { as: "bob" });
        await Promise.all([5, 6].map((i) => post(i)));
        const exportTo = mkdtempSync(join(tmpdir(), "agent-chat-archive-"));
        try {
          const result = await (await archiver()).archive("old", { before: 4, exportTo });
          expect(result.moved).toEqual([1, 2, 3]);
          const seqs = (ms: Message[]) => ms.map((m) => m.seq);
          expect(seqs(await store.peek("old", 10))).toEqual([4, 5, 6]);
          expect((await post(7)).seq).toBe(7);
          expect(seqs((await bob.read("old", { as: "bob" })).messages)).toEqual([5, 6, 7]);
          expect((await store.search("common")).hits.map((h) => h.seq)).toEqual([7, 6, 5, 4]);
          await expectArchived(exportTo);
        } finally {
          rmSync(exportTo, { recursive: true, force: true });
        }
      });
    });

    describe("search and threads", () => {
      async function seed(): Promise<void> {
        await store.init("plan");
        await store.init("ops");
        await store.post("plan", {
          from: "alice",
          title: "Schema v2",
          body: "We decided on Postgres.",
        });
        await store.post("plan", {
          from: "bob",
          to: "alice",
          title: "Re: schema",
          body: "Postgres is fine; the migration tool (regex: a.*b) waits.",
          replyTo: 1,
          status: "ack",
        });
        await store.post("ops", {
          from: "carol",
          title: "Deploy",
          body: "postgresql upgrade at noon",
        });
        await store.post("plan", { from: "alice", title: "Lunch", body: "Pizza?", replyTo: 2 });
      }

      it("finds words, phrases and prefixes in titles and bodies, newest first", async () => {
        await seed();
        const words = await store.search("postgres");
        expect(words.hits.map((h) => `${h.channel}#${h.seq}`)).toEqual(["plan#2", "plan#1"]);
        expect(words.hits[0]).toMatchObject({ from: "bob", title: "Re: schema", replyTo: 1 });
        expect(words.hits[0]!.snippet).toContain("⟦Postgres⟧");
        // Time stamps have whole seconds: across channels, posts of one second come in any order.
        const prefix = await store.search("postgres*");
        expect(prefix.hits.filter((h) => h.channel === "plan").map((h) => h.seq)).toEqual([2, 1]);
        expect(prefix.hits.filter((h) => h.channel === "ops").map((h) => h.seq)).toEqual([1]);
        expect((await store.search('"decided on postgres"')).hits.map((h) => h.seq)).toEqual([1]);
        expect((await store.search('"postgres decided"')).total).toBe(0);
        expect((await store.search("SCHEMA")).hits.map((h) => h.seq)).toEqual([2, 1]);
      });

      it("filters by channel, sender, recipient, status, time and limit", async () => {
        await seed();
        const ids = async (o: Parameters<Store["search"]>[1]) =>
          (await store.search("postgres*", o)).hits.map((h) => `${h.channel}#${h.seq}`);
        expect(await ids({ channels: ["ops"] })).toEqual(["ops#1"]);
        expect(await ids({ from: "Alice" })).toEqual(["plan#1"]);
        expect(await ids({ to: "alice" })).toEqual(["plan#2"]);
        expect(await ids({ status: "ack" })).toEqual(["plan#2"]);
        expect(await ids({ since: "1d", until: "2999-01-01" })).toHaveLength(3);
        expect(await ids({ until: "2000-01-01" })).toEqual([]);
        const limited = await store.search("postgres*", { limit: 1 });
        expect(limited).toMatchObject({ total: 3 });
        expect(limited.hits).toHaveLength(1);
        await expectCode(store.search("x", { channels: ["nope"] }), "CHANNEL_NOT_FOUND");
      });

      it("a store searched again (the daemon's index) sees new and only current messages", async () => {
        await seed();
        const other = await another();
        expect((await other.search("pizza")).total).toBe(1);
        expect((await other.search("pizza")).total).toBe(1);
        await store.post("ops", { from: "dave", title: "More pizza", body: "pepperoni" });
        const again = await other.search("pizza");
        expect(again.hits.map((h) => `${h.channel}#${h.seq}`).sort()).toEqual(["ops#2", "plan#3"]);
        expect((await other.search("pepp*")).total).toBe(1);
        expect((await other.search("a.*b")).total).toBe(1);
      });

      it("bad queries are clear errors or literal matches, quickly", async () => {
        await seed();
        const started = Date.now();
        await expectCode(store.search(""), "INVALID_ARGUMENT");
        await expectCode(store.search('  "" '), "INVALID_ARGUMENT");
        await expectCode(store.search("a".repeat(10_240)), "INVALID_ARGUMENT");
        await expectCode(store.search("(a+)+$ ".repeat(1_000)), "INVALID_ARGUMENT");
        await expectCode(store.search("x", { since: "last tuesday" }), "INVALID_ARGUMENT");
        await expectCode(store.search("x", { until: "2026-13-45" }), "INVALID_ARGUMENT");
        await expectCode(store.search("x", { limit: 0 }), "INVALID_ARGUMENT");
        // Regex characters are matched as written, never compiled.
        expect((await store.search("a.*b")).hits.map((h) => h.seq)).toEqual([2]);
        expect((await store.search("(zz+)+$")).total).toBe(0);
        expect((await store.search("[")).total).toBe(0);
        expect((await store.search("(regex:")).hits.map((h) => h.seq)).toEqual([2]);
        expect(Date.now() - started).toBeLessThan(5_000);
      });

      it("thread: the root of a message with its whole reply tree", async () => {
        await seed();
        await store.post("plan", { from: "carol", title: "Other", body: "unrelated" });
        await store.post("plan", { from: "carol", title: "Also", body: "to #1", replyTo: 1 });
        const tree = await store.thread("plan", 3);
        expect(tree.message.seq).toBe(1);
        const shape = (n: Awaited<ReturnType<Store["thread"]>>): unknown => [
          n.message.seq,
          n.replies.map(shape),
        ];
        expect(shape(tree)).toEqual([
          1,
          [
            [2, [[3, []]]],
            [5, []],
          ],
        ]);
        expect(shape(await store.thread("plan", 4))).toEqual([4, []]);
        await expectCode(store.thread("plan", 99), "NOT_FOUND");
        await expectCode(store.thread("nope", 1), "CHANNEL_NOT_FOUND");
        await expectCode(store.thread("plan", 0), "INVALID_ARGUMENT");
      });
    });

    describe("signatures (docs/signatures.md)", () => {
      const alice = signerFromPem(generateKeyPair().pem);
      const mallory = signerFromPem(generateKeyPair().pem);

      beforeEach(async () => {
        await store.init("signed");
      });

      it("every message read, peeked, waited for or watched says verified, unsigned or forged", async () => {
        const reader = await another();
        const watched = (async () => {
          const out: Message[] = [];
          const stop = new AbortController();
          for await (const m of reader.watch(["signed"], { signal: stop.signal, after: 0 })) {
            out.push(m);
            if (out.length === 3) stop.abort();
          }
          return out;
        })();
        const poster = backend.local ? await backend.local() : store;
        if (poster !== store) opened.push(poster);
        await poster.post("signed", { from: "alice", body: "one", signer: alice });
        await store.post("signed", { from: "bob", body: "two" });
        // The first good key for a name is pinned: mallory's signature as alice is forged.
        await poster.post("signed", { from: "alice", body: "three", signer: mallory });
        const trust = (ms: Message[]) => ms.map((m) => m.trust);
        expect(trust(await reader.peek("signed"))).toEqual(["verified", "unsigned", "forged"]);
        const read = await reader.read("signed", { as: "carol" });
        expect(trust(read.messages)).toEqual(["verified", "unsigned", "forged"]);
        expect(read.messages[2]!.trustNote).toContain("pinned key");
        const waited = await (await another()).wait(["signed"], { as: "dave", timeoutMs: 5000 });
        expect(trust(waited.messages)).toEqual(["verified", "unsigned", "forged"]);
        expect(trust(await watched)).toEqual(["verified", "unsigned", "forged"]);
      });

      it("policy: require refuses unsigned posts, strict refuses non-members; a signed member posts", async () => {
        await store.init("strict", {
          members: ["alice"],
          extra: { signatures: "require", membership: "strict" },
        });
        await expectCode(store.post("strict", { from: "alice", body: "unsigned" }), "POLICY");
        await expectCode(store.post("strict", { from: "mallory", body: "x" }), "NOT_A_MEMBER");
        const poster = backend.local ? await backend.local() : store;
        if (poster !== store) opened.push(poster);
        await poster.post("strict", { from: "alice", body: "signed", signer: alice });
        const read = await (await another()).read("strict", { as: "bob" });
        expect(read.messages.map((m) => [m.body, m.trust])).toEqual([["signed", "verified"]]);
      });

      it("a signer never crosses a socket silently: refused there, signed everywhere else", async () => {
        const posted = store.post("signed", { from: "alice", body: "x", signer: alice });
        if (backend.local) {
          await expectCode(posted, "INVALID_ARGUMENT");
        } else {
          await posted;
          expect((await store.peek("signed"))[0]!.extra.sig).toMatch(/^ed25519:/);
        }
      });
    });

    // What the commands above the contract do with it (issue 44): the same on every path.
    describe("features above the store: governance, events, the viewer", () => {
      beforeEach(async () => {
        await store.init("gov", { members: ["alice", "bob"], topic: "t" });
      });

      it("updateMeta: changes from several connections at once all land; the reference's keys stay", async () => {
        const stores = await Promise.all([0, 1, 2, 3].map(() => another()));
        await Promise.all(
          stores.map((s) =>
            s.updateMeta!("gov", (m) => ({ ...m, [`k${stores.indexOf(s)}`]: 1, topic: "moved" })),
          ),
        );
        const meta = await (await another()).roster("gov");
        expect(meta).toMatchObject({ k0: 1, k1: 1, k2: 1, k3: 1, topic: "t" });
        expect(meta.members).toEqual(["alice", "bob"]);
      });

      it("govern, request, pending, approve: a request waits for the maintainer's verdict", async () => {
        await govern(store, "gov", { maintainer: "alice", bands: { merge: "approval" } }, "alice");
        await expectCode(
          govern(store, "gov", { bands: { merge: "auto" } }, "bob"),
          "NOT_MAINTAINER",
        );
        const bob = await another();
        const outcome = requestAction(bob, "gov", {
          as: "bob",
          action: "merge",
          title: "Ship it",
          timeoutMs: 60_000,
          intervalMs: 100,
        });
        await until(async () => (await pendingRequests(store, "gov")).requests.length === 1);
        const { requests } = await pendingRequests(store, "gov");
        expect(requests.map((r) => [r.seq, r.action, r.from, r.title])).toEqual([
          [1, "merge", "bob", "Ship it"],
        ]);
        const decided = await decide(store, "gov", 1, { as: "alice", verdict: "approved" });
        expect(await outcome).toMatchObject({ result: "approved", proceed: true, by: "alice" });
        expect((await outcome) as { decisionSeq?: number }).toMatchObject({
          decisionSeq: decided.seq,
        });
        expect((await pendingRequests(store, "gov")).requests).toEqual([]);
      });

      it("a whole channel longer than a page is read page by page, every message once (event read)", async () => {
        const total = PAGE_SIZE * 2 + 3;
        const event = (i: number) =>
          referenceEvent({
            type: "status",
            agent: "bob",
            harness: "cli",
            status: "busy",
            detail: `#${i}`,
            ts: "2026-01-01T00:00:00+00:00",
          });
        for (let i = 1; i <= total; i += 25) {
          const batch = Array.from({ length: Math.min(25, total - i + 1) }, (_, k) => i + k);
          const posts = batch.map((n) =>
            n % 100 === 1 ? { from: "bob", ...event(n) } : { from: "bob", body: `m${n}` },
          );
          // 25 at a time: the events stay in order, one per batch at most.
          await Promise.all(posts.map((post) => store.post("gov", post)));
        }
        const all = await wholeChannel(await another(), "gov");
        expect(all.map((m) => m.seq)).toEqual(Array.from({ length: total }, (_, k) => k + 1));
        const events = all.flatMap((m) => {
          const event = readReferenceEvent(m.status, m.body);
          return event ? [event] : [];
        });
        expect(events.map((e) => e.detail)).toEqual(["#1", "#101", "#201", "#301", "#401"]);
        expect(await wholeChannel(store, "gov", { after: total - 2 })).toHaveLength(2);
        const range = await wholeChannel(store, "gov", { after: 150, upTo: PAGE_SIZE + 160 });
        expect(range.map((m) => m.seq)).toEqual(
          Array.from({ length: PAGE_SIZE + 10 }, (_, k) => k + 151),
        );
        expect(await store.cursor("gov", "alice")).toBe(0);
      });

      it("the viewer's model: channels with their counts, pages of messages, the live ones", async () => {
        for (let i = 1; i <= 5; i++) await store.post("gov", { from: "alice", body: `m${i}` });
        const model = new ViewerModel(await another(), []);
        try {
          const channel = (await model.state()).channels.find((c) => c.name === "gov");
          expect(channel).toMatchObject({ messageCount: 5, lastSeq: 5, open: false });
          const page = await model.messages("gov", { limit: 2 });
          expect(page.messages.map((m) => m.seq)).toEqual([4, 5]);
          expect(page).toMatchObject({ hasEarlier: true, earlierCount: 3, total: 5 });
          const before = await model.messages("gov", { before: 4, limit: 10 });
          expect(before.messages.map((m) => m.seq)).toEqual([1, 2, 3]);
        } finally {
          await model.close();
        }
      });

      it("chat.py 0.7's structured tasks: served on a folder root, elsewhere refused saying so", async () => {
        const made = store.createStructuredTask("gov", { id: "t1", title: "T", from: "alice" });
        if (store.capabilities.specFolder) {
          expect(await made).toMatchObject({ id: "t1", state: "open" });
          return;
        }
        const err = await expectCode(made, "UNSUPPORTED");
        expect(err.message).toMatch(/live on a folder root/);
      });
    });
  });
}

/** Polls `condition` until it holds (20 s at most: a bound on a hang, generous under load). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met within 20 s");
    await delay(20);
  }
}

function bodies(messages: Message[]): string[] {
  return messages.map((m) => m.body);
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
