import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CasWriter } from "../../src/store/nats/kv-cas.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { describeCluster } from "../helpers/describe-cluster.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { aroundCursorWrites, cursorEntry, lagCursorReads } from "../helpers/nats-cursors.js";

/**
 * A cluster's checked writes make two reads: the stream's (or bucket's) last sequence, and the
 * channel's (or key's) last entry. Around a healed partition a cut-off leader still answers
 * from its stale copy, so one of the two answers may lag the other. These tests give a writer
 * such a lagging answer on purpose: the write must not pass on the fresh one alone.
 */
let cluster: NatsCluster;
let counter = 0;
const ns = () => `stale${process.pid}-${++counter}`;

describeCluster("nats cluster: a checked write given one stale answer", () => {
  beforeAll(async () => {
    cluster = await NatsCluster.start();
  }, 60_000);
  afterAll(async () => {
    await cluster?.dispose();
  });

  /**
   * Three posts, then a new store whose reads of the channel's last message answer with the
   * second for `staleReads` times (a store that lags), then the truth.
   */
  async function postAfterStaleReads(staleReads: number) {
    const url = cluster.url(ns());
    const first = await NatsStore.open(url, { replicas: 3 });
    await first.init("ch");
    for (const body of ["one", "two"]) await first.post("ch", { from: "a", body });
    const stale = await first.lastOf("ch");
    await first.post("ch", { from: "a", body: "three" });
    const late = await NatsStore.open(url);
    const fresh = late.lastOf.bind(late);
    let left = staleReads;
    late.lastOf = (channel) => (left-- > 0 ? Promise.resolve(stale) : fresh(channel));
    const posted = await late.post("ch", { from: "b", body: "four" });
    const read = await first.read("ch", { as: "reader", all: true, everyone: true, peek: true });
    await Promise.all([first.close(), late.close()]);
    return { posted, read };
  }

  it("a post that read a stale last message is refused and renumbered, never stored under a taken number", async () => {
    const { posted, read } = await postAfterStaleReads(1);
    expect(posted.seq).toBe(4);
    expect(read.messages.map((m) => [m.seq, m.body])).toEqual([
      [1, "one"],
      [2, "two"],
      [3, "three"],
      [4, "four"],
    ]);
    expect(read.warnings, "stored posts that readers skip").toEqual([]);
  });

  it("the same when the post takes its turn after losing twice (the read after its turn marker is stale too)", async () => {
    const { posted, read } = await postAfterStaleReads(3);
    expect(posted.seq).toBe(4);
    expect(read.messages.map((m) => m.body)).toEqual(["one", "two", "three", "four"]);
    expect(read.warnings, "stored posts that readers skip").toEqual([]);
  });

  it("a post that read the channel's few newest messages from a lagging copy (the newest missing) is refused and renumbered", async () => {
    const url = cluster.url(ns());
    const first = await NatsStore.open(url, { replicas: 3 });
    await first.init("ch");
    for (const body of ["one", "two"]) await first.post("ch", { from: "a", body });
    const lagsAt = (await first.lastOf("ch")).streamSeq;
    await first.post("ch", { from: "a", body: "three" });
    const late = await NatsStore.open(url);
    // Its reads of messages answer as a copy that ends at "two", until its first publish.
    const { streams } = (late as unknown as { quick: { jsm: JetStreamManager } }).quick.jsm;
    const real = streams.getMessage.bind(streams);
    let lagging = true;
    let lagged = 0;
    streams.getMessage = async (stream, query) => {
      const answer = await real(stream, query);
      if (!lagging || stream !== late.streamName || !answer || answer.seq <= lagsAt) return answer;
      lagged++;
      return null;
    };
    const publish = late.js.publish.bind(late.js);
    late.js.publish = (...args) =>
      publish(...args).finally(() => {
        lagging = false;
      });
    const posted = await late.post("ch", { from: "b", body: "four" });
    expect(lagged, "the lagging answer was given").toBeGreaterThan(0);
    expect(posted.seq).toBe(4);
    const read = await first.read("ch", { as: "reader", all: true, everyone: true, peek: true });
    expect(read.messages.map((m) => [m.seq, m.body])).toEqual([
      [1, "one"],
      [2, "two"],
      [3, "three"],
      [4, "four"],
    ]);
    expect(read.warnings, "stored posts that readers skip").toEqual([]);
    await Promise.all([first.close(), late.close()]);
  });

  it("a wait whose cursor save landed unanswered, then read back stale many times, still returns its messages once", async () => {
    const url = cluster.url(ns());
    const poster = await NatsStore.open(url, { replicas: 3 });
    await poster.init("ch");
    await poster.post("ch", { from: "a", to: "w", body: "for w" });
    const waiter = await NatsStore.open(url);
    let staleReads = 0;
    // The next ten reads of the cursor answer as before the write (a leader that lags).
    lagCursorReads(waiter, "ch", "w", () => (staleReads-- > 0 ? null : undefined));
    const undo = aroundCursorWrites(waiter, async (send) => {
      await send();
      staleReads = 10;
      throw Object.assign(new Error("TIMEOUT"), { name: "TimeoutError" });
    });
    const woken = await waiter.wait(["ch"], { as: "w", timeoutMs: 20_000 });
    undo();
    expect(woken.messages.map((m) => m.body)).toEqual(["for w"]);
    // Once: the cursor did move.
    await expect(waiter.wait(["ch"], { as: "w", timeoutMs: 500 })).rejects.toMatchObject({
      code: "TIMEOUT",
    });
    await Promise.all([poster.close(), waiter.close()]);
  });

  it("a wait whose cursor save was refused by a cut-off leader while the real one stored it returns its messages, once", async () => {
    const url = cluster.url(ns());
    const poster = await NatsStore.open(url, { replicas: 3 });
    await poster.init("ch");
    await poster.post("ch", { from: "a", to: "w", body: "for w" });
    const waiter = await NatsStore.open(url);
    let refused = 0;
    const undo = aroundCursorWrites(waiter, async (send) => {
      const ack = await send();
      if (refused++ > 0) return ack;
      // Both leaders got the write; the cut-off one, whose copy lags, answered first.
      throw Object.assign(new Error("wrong last sequence: 0"), { api_error: { err_code: 10071 } });
    });
    const woken = await waiter.wait(["ch"], { as: "w", timeoutMs: 20_000 });
    undo();
    expect(refused, "the refusal was given").toBeGreaterThan(0);
    expect(woken.messages.map((m) => m.body)).toEqual(["for w"]);
    await expect(waiter.wait(["ch"], { as: "w", timeoutMs: 500 })).rejects.toMatchObject({
      code: "TIMEOUT",
    });
    await Promise.all([poster.close(), waiter.close()]);
  });

  /**
   * `w` was woken with its first message; then a second one for it is posted, and a store reads
   * w's cursor once as it was before that wake (a cut-off leader, around a heal, answers from
   * its stale copy): a new store (a new CLI process), or `sameStore`, the one that woke w (an
   * agent's loop in one process), which remembers the revision it saved.
   */
  async function afterOneStaleCursorRead(sameStore = false) {
    const url = cluster.url(ns());
    const poster = await NatsStore.open(url, { replicas: 3 });
    await poster.init("ch");
    await poster.post("ch", { from: "a", to: "w", body: "first" });
    const stale = await cursorEntry(poster, "ch", "w");
    const woken = await poster.wait(["ch"], { as: "w", timeoutMs: 20_000 });
    expect(woken.messages.map((m) => m.body)).toEqual(["first"]);
    await poster.post("ch", { from: "a", to: "w", body: "second" });
    const late = sameStore ? poster : await NatsStore.open(url);
    let cursorReads = 0;
    lagCursorReads(late, "ch", "w", () => (cursorReads++ === 0 ? stale : undefined));
    return { poster, late, staleGiven: () => cursorReads > 0 };
  }

  it("a wait that read its cursor stale is woken with what came after the real cursor only, never again with what an earlier wait returned", async () => {
    const { poster, late, staleGiven } = await afterOneStaleCursorRead();
    const woken = await late.wait(["ch"], { as: "w", timeoutMs: 20_000 });
    expect(staleGiven(), "the stale answer was given").toBe(true);
    expect(woken.messages.map((m) => m.body)).toEqual(["second"]);
    expect(await poster.cursor("ch", "w")).toBe(2);
    await Promise.all([poster.close(), late.close()]);
  });

  it("the same for a waiter in a loop, whose store remembers the cursor it saved", async () => {
    const { poster, staleGiven } = await afterOneStaleCursorRead(true);
    const woken = await poster.wait(["ch"], { as: "w", timeoutMs: 20_000 });
    expect(staleGiven(), "the stale answer was given").toBe(true);
    expect(woken.messages.map((m) => m.body)).toEqual(["second"]);
    expect(await poster.cursor("ch", "w")).toBe(2);
    await poster.close();
  });

  it("a wait on two channels, one cursor read stale: each message is handed out once, none lost", async () => {
    const url = cluster.url(ns());
    const poster = await NatsStore.open(url, { replicas: 3 });
    for (const ch of ["a", "b"]) await poster.init(ch);
    await poster.post("a", { from: "p", to: "w", body: "a1" });
    await poster.post("b", { from: "p", to: "w", body: "b1" });
    const stale = await cursorEntry(poster, "b", "w");
    expect((await poster.read("b", { as: "w" })).messages.map((m) => m.body)).toEqual(["b1"]);
    await poster.post("b", { from: "p", to: "w", body: "b2" });
    const late = await NatsStore.open(url);
    let staleGiven = false;
    lagCursorReads(late, "b", "w", () => {
      if (staleGiven) return undefined;
      staleGiven = true;
      return stale;
    });
    const woken: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await late.wait(["a", "b"], { as: "w", timeoutMs: 500 }).catch(() => undefined);
      woken.push(...(r?.messages.map((m) => m.body) ?? []));
    }
    expect(staleGiven, "the stale answer was given").toBe(true);
    expect(woken.sort()).toEqual(["a1", "b2"]);
    expect([await poster.cursor("a", "w"), await poster.cursor("b", "w")]).toEqual([1, 2]);
    await Promise.all([poster.close(), late.close()]);
  });

  it("a read that read its cursor stale returns what came after the real cursor only", async () => {
    const { poster, late, staleGiven } = await afterOneStaleCursorRead();
    const read = await late.read("ch", { as: "w" });
    expect(staleGiven(), "the stale answer was given").toBe(true);
    expect(read.messages.map((m) => m.body)).toEqual(["second"]);
    expect(read.cursor).toBe(2);
    expect(await poster.cursor("ch", "w")).toBe(2);
    await Promise.all([poster.close(), late.close()]);
  });

  it("a KV compare-and-set that read a stale revision of its key is refused, not written over a newer value", async () => {
    const nc: NatsConnection = await connect({ servers: cluster.nodes.map((n) => n.server) });
    try {
      const bucket = ns();
      const kv = await new Kvm(nc).create(bucket, { replicas: 3 });
      const v1 = await kv.put("claim", "alice");
      const jsm = await jetstreamManager(nc);
      // The bucket keeps one value per key: the first is read before the second replaces it.
      const stale = await jsm.streams.getMessage(`KV_${bucket}`, { seq: v1 });
      await kv.put("claim", "bob");
      // The writer's key read answers with the first value once (a leader that lags).
      let left = 1;
      const lagging = {
        streams: {
          info: (name: string) => jsm.streams.info(name),
          getMessage: (name: string, query: never) =>
            left-- > 0 ? Promise.resolve(stale) : jsm.streams.getMessage(name, query),
        },
      } as unknown as JetStreamManager;
      const writer = new CasWriter(jetstream(nc), lagging, bucket);
      const won = await writer.set("claim", "carol", (state) => state?.revision === v1);
      expect(won, "a write over a value the writer never saw").toBeUndefined();
      expect((await kv.get("claim"))?.string()).toBe("bob");
    } finally {
      await nc.close();
    }
  });
});
