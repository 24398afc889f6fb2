import { headers as natsHeaders } from "@nats-io/transport-node";
import { afterEach, expect, it } from "vitest";
import { MAX_SEQ, messageFileName, serializeMessage } from "../../src/core/message.js";
import { FILE_HEADER, SEQ_HEADER } from "../../src/store/nats/feed.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { describeNats } from "../helpers/describe-nats.js";

/**
 * Anyone with the namespace's NATS credentials can publish on a channel's subject without
 * agent-chat (issue 40, finding 8). Such a message, well-formed or not, is skipped and reported
 * by readers, as a folder store skips a stray file, and never moves the numbering back or
 * stops the namespace: the next post numbers on from the highest message of ours.
 */
let counter = 0;
const ns = () => `foreign${process.pid}-${++counter}`;
const opened: NatsStore[] = [];

async function open(url: string): Promise<NatsStore> {
  const store = await NatsStore.open(url);
  opened.push(store);
  return store;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

/** A well-formed message text and its file name, as agent-chat would write it. */
function wellFormed(seq: number, from: string, title: string) {
  const text = serializeMessage({
    seq,
    from,
    to: "all",
    channel: "dev",
    ts: "2026-12-01T00:00:00Z",
    title,
    body: `${title} body`,
  });
  return { text, file: messageFileName(seq, from, title) };
}

/** Publishes on the channel's subject as any NATS client can: no agent-chat in between. */
async function publishRaw(
  store: NatsStore,
  text: string,
  header: Record<string, string> | undefined,
): Promise<number> {
  let h: ReturnType<typeof natsHeaders> | undefined;
  if (header) {
    h = natsHeaders();
    for (const [k, v] of Object.entries(header)) h.set(k, v);
  }
  const ack = await store.js.publish(store.subject("dev"), text, h ? { headers: h } : {});
  return ack.seq;
}

async function channelAt(url: string, count: number): Promise<NatsStore> {
  const alice = await open(url);
  await alice.init("dev");
  for (let i = 1; i <= count; i++) await alice.post("dev", { from: "alice", body: `m${i}` });
  return alice;
}

describeNats("a NATS channel survives any publish on its subject", (server) => {
  it("a foreign well-formed message numbered 1 on a channel at #5: the next posts are #6, #7 and readers get them", async () => {
    const url = server().url(ns());
    const alice = await channelAt(url, 5);
    expect((await alice.read("dev", { as: "bob" })).cursor).toBe(5);
    const forged = wellFormed(1, "mallory", "again one");
    await publishRaw(alice, forged.text, { [SEQ_HEADER]: "1", [FILE_HEADER]: forged.file });

    const carol = await open(url); // a new process: nothing cached
    expect((await carol.post("dev", { from: "carol", body: "six" })).seq).toBe(6);
    expect((await alice.post("dev", { from: "alice", body: "seven" })).seq).toBe(7);

    const reader = await open(url);
    const read = await reader.read("dev", { as: "bob", everyone: true });
    expect(read.messages.map((m) => [m.seq, m.body])).toEqual([
      [6, "six"],
      [7, "seven"],
    ]);
    expect(read.warnings).toEqual([`${forged.file}: seq 1 is not after 5, skipped`]);
    expect((await reader.channels()).map((c) => [c.name, c.lastSeq])).toEqual([["dev", 7]]);
  });

  it("a message with no headers at all: post, read, peek, wait and channels all still work, and it is reported as skipped", async () => {
    const url = server().url(ns());
    const alice = await channelAt(url, 2);
    const junk = await publishRaw(alice, "hello, not a message", undefined);

    const carol = await open(url);
    expect((await carol.channels()).map((c) => [c.name, c.lastSeq])).toEqual([["dev", 2]]);
    expect((await carol.post("dev", { from: "carol", body: "three" })).seq).toBe(3);
    const read = await carol.read("dev", { as: "bob", everyone: true });
    expect(read.messages.map((m) => m.seq)).toEqual([1, 2, 3]);
    expect(read.warnings).toEqual([
      `stream message ${junk}: no ${SEQ_HEADER} header (not written by agent-chat), skipped`,
    ]);
    expect((await carol.peek("dev", 5)).map((m) => m.seq)).toEqual([1, 2, 3]);
    expect((await alice.post("dev", { from: "alice", body: "four" })).seq).toBe(4);
    const waited = await carol.wait(["dev"], { as: "bob", timeoutMs: 10_000 });
    expect(waited.messages.map((m) => [m.seq, m.body])).toEqual([[4, "four"]]);
    expect((await carol.channels()).map((c) => [c.name, c.lastSeq])).toEqual([["dev", 4]]);
  });

  it("junk as a new channel's first message: the first post is still #1", async () => {
    const url = server().url(ns());
    const alice = await open(url);
    await alice.init("dev");
    await publishRaw(alice, "junk", undefined);
    const carol = await open(url);
    expect((await carol.post("dev", { from: "carol", body: "first" })).seq).toBe(1);
    const read = await carol.read("dev", { as: "bob", everyone: true });
    expect(read.messages.map((m) => [m.seq, m.body])).toEqual([[1, "first"]]);
  });

  it("a message whose seq header is garbage is skipped and reported; the next post takes its number", async () => {
    const url = server().url(ns());
    const alice = await channelAt(url, 2);
    const forged = wellFormed(3, "mallory", "garbage header");
    await publishRaw(alice, forged.text, { [SEQ_HEADER]: "three", [FILE_HEADER]: forged.file });

    const carol = await open(url);
    expect((await carol.post("dev", { from: "carol", body: "three" })).seq).toBe(3);
    const read = await carol.read("dev", { as: "bob", everyone: true });
    expect(read.messages.map((m) => [m.seq, m.body])).toEqual([
      [1, "m1"],
      [2, "m2"],
      [3, "three"],
    ]);
    expect(read.warnings).toEqual([
      `${forged.file}: its ${SEQ_HEADER} header is not 3, the seq of its file name, skipped`,
    ]);
  });

  it("a flood of junk after the last post (more than a post looks at one by one) still numbers on", async () => {
    const url = server().url(ns());
    const alice = await channelAt(url, 3);
    for (let i = 0; i < 80; i++) await publishRaw(alice, `junk ${i}`, undefined);
    const old = wellFormed(2, "mallory", "old");
    await publishRaw(alice, old.text, { [SEQ_HEADER]: "2", [FILE_HEADER]: old.file });

    const carol = await open(url);
    expect((await carol.post("dev", { from: "carol", body: "four" })).seq).toBe(4);
    const dave = await open(url);
    expect((await dave.post("dev", { from: "dave", body: "five" })).seq).toBe(5);
    const read = await dave.read("dev", { as: "bob", everyone: true });
    expect(read.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(read.warnings).toHaveLength(81);
  });

  it("a foreign message at the largest seq uses no number up: posting goes on, the message is skipped (issue 40, finding 10)", async () => {
    const url = server().url(ns());
    const alice = await channelAt(url, 1);
    const last = wellFormed(MAX_SEQ, "mallory", "the end");
    await publishRaw(alice, last.text, { [SEQ_HEADER]: String(MAX_SEQ), [FILE_HEADER]: last.file });
    const carol = await open(url);
    expect((await carol.post("dev", { from: "carol", body: "more" })).seq).toBe(2);
    const read = await carol.read("dev", { as: "bob", everyone: true });
    expect(read.messages.map((m) => m.seq)).toEqual([1, 2]);
    expect(read.warnings.join()).toContain(`seq ${MAX_SEQ} is more than 1000000 past 1, skipped`);
  });
});
