import { describe, expect, it } from "vitest";
import { messageFileName, serializeMessage } from "../../src/core/message.js";
import {
  ChannelFeed,
  type FeedSource,
  FILE_HEADER,
  SEQ_HEADER,
} from "../../src/store/nats/feed.js";

/**
 * A consumer that stops delivering without ending (what nats-server 2.9 can leave behind after
 * a frozen cluster node thaws) is replaced by the feed's own watchdog. The server is a stand-in
 * here: a real one cannot be made to wedge a consumer on demand.
 */

interface FakeMsg {
  seq: number;
  headers: { get(name: string): string | undefined };
  string(): string;
}

function message(seq: number): FakeMsg {
  const text = serializeMessage({
    seq,
    from: "alice",
    to: "all",
    channel: "dev",
    ts: "2026-12-01T00:00:00Z",
    title: `note ${seq}`,
    body: `body ${seq}`,
  });
  const headers = new Map([
    [SEQ_HEADER, String(seq)],
    [FILE_HEADER, messageFileName(seq, "alice", `note ${seq}`)],
  ]);
  return { seq, headers: { get: (n) => headers.get(n) }, string: () => text };
}

/** Consumers in turn: each delivers from its start seq up to `total` and then waits; the first
 * one, when `stuckFirst`, wedges after one message. */
function source(stuckFirst: boolean, total: number, created: number[]): FeedSource {
  let n = 0;
  const feedJs = {
    consumers: {
      get: async (_stream: string, opts: { opt_start_seq: number }) => {
        const stuck = stuckFirst && n++ === 0;
        created.push(opts.opt_start_seq);
        let stop: () => void = () => {};
        const stopped = new Promise<void>((r) => {
          stop = r;
        });
        return {
          delete: async () => true,
          consume: async () => ({
            stop: () => stop(),
            async *[Symbol.asyncIterator]() {
              // A wedged consumer: it delivered the first message and then nothing, forever.
              const last = stuck ? opts.opt_start_seq : total;
              for (let seq = opts.opt_start_seq; seq <= last; seq++) yield message(seq);
              await stopped;
            },
          }),
        };
      },
    },
  };
  return {
    feedJs: feedJs as unknown as FeedSource["feedJs"],
    streamName: "S",
    subject: () => "s.dev",
    lastStreamSeq: async () => total,
  };
}

describe("nats feed watchdog", () => {
  it("replaces a consumer that stopped delivering while the server holds more", async () => {
    const created: number[] = [];
    const feed = new ChannelFeed(source(true, 5, created), "dev");
    feed.start();
    const t0 = performance.now();
    await feed.reach(5, 10_000);
    const ms = performance.now() - t0;
    feed.stop();
    expect(feed.warnings).toEqual([]);
    expect(feed.scan(0).messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    // The second consumer starts after the one message the wedged one delivered.
    expect(created).toEqual([1, 2]);
    expect(ms).toBeLessThan(8_000);
  });

  it("leaves a consumer that delivered everything alone", async () => {
    const created: number[] = [];
    const feed = new ChannelFeed(source(false, 3, created), "dev");
    feed.start();
    await feed.reach(3, 10_000);
    let changed = 0;
    const off = feed.onChange(() => changed++);
    // Two looks of the watchdog (and one probe of the server) with nothing new to deliver.
    await new Promise((r) => setTimeout(r, 5_000));
    off();
    feed.stop();
    expect(created).toEqual([1]);
    expect(changed).toBe(0);
  });
});
