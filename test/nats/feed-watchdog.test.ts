import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
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
 * one, when `stuckFirst`, wedges after one message. `probes` counts the asks for the last seq. */
function source(
  stuckFirst: boolean,
  total: number,
  created: number[],
  probes = { count: 0 },
): FeedSource {
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
    lastStreamSeq: async () => {
      probes.count += 1;
      return total;
    },
  };
}

// The watchdog runs on timers (a look every 2 s): fake ones let the tests step through its looks
// in no real time, and hold its timing exactly, whatever the machine's load.
describe("nats feed watchdog", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("replaces a consumer that stopped delivering while the server holds more", async () => {
    const created: number[] = [];
    const feed = new ChannelFeed(source(true, 5, created), "dev");
    feed.start();
    const t0 = Date.now();
    let reachedAfter = Number.NaN;
    const reached = feed.reach(5, 10_000).then(() => {
      reachedAfter = Date.now() - t0;
    });
    await vi.advanceTimersByTimeAsync(10_000);
    await reached;
    feed.stop();
    expect(feed.warnings).toEqual([]);
    expect(feed.scan(0).messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    // The second consumer starts after the one message the wedged one delivered.
    expect(created).toEqual([1, 2]);
    // In the fake timers' time: at the second look of the watchdog (4 s; the first finds the
    // consumer too young to judge), then the short pause before a new consumer.
    expect(reachedAfter).toBeGreaterThanOrEqual(4_000);
    expect(reachedAfter).toBeLessThan(5_000);
  });

  it("leaves a consumer that delivered everything alone", async () => {
    const created: number[] = [];
    const probes = { count: 0 };
    const feed = new ChannelFeed(source(false, 3, created, probes), "dev");
    feed.start();
    const reached = feed.reach(3, 10_000);
    await vi.advanceTimersByTimeAsync(0);
    await reached;
    let changed = 0;
    const off = feed.onChange(() => changed++);
    // Two looks of the watchdog (and one probe of the server) with nothing new to deliver.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(probes.count).toBe(1);
    off();
    feed.stop();
    expect(created).toEqual([1]);
    expect(changed).toBe(0);
  });
});
