import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAgentChatError } from "../../src/core/errors.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import type { WaitResult } from "../../src/store/types.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { FULL } from "./sizes.js";
// @ts-expect-error plain ESM helper shared with the worker processes
import { bodyOf } from "./workers/common.mjs";

const body = bodyOf as (writer: string, i: number) => string;
const SIZES = FULL ? { restarts: 8, posters: 8 } : { restarts: 3, posters: 4 };
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let server: NatsServer | undefined;
if (!natsSkipReason) {
  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => {
    await server?.dispose();
  });
}

describe("nats: restart the server under load", () => {
  it.skipIf(natsSkipReason !== undefined)(
    `every acknowledged post is kept once, numbers gapless, parked waiters resume${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
    async () => {
      const url = server!.url(`torture${process.pid}`);
      const admin = await NatsStore.open(url);
      await admin.init("load");

      // Posters on their own connections post without pause; a post that fails while the
      // server is away is not acknowledged, and the next attempt sends a new body.
      const acked = new Map<number, string>();
      const unacked = new Set<string>();
      let refused = 0;
      let stop = false;
      const posters = await Promise.all(
        Array.from({ length: SIZES.posters }, () => NatsStore.open(url)),
      );
      const runs = posters.map(async (store, p) => {
        for (let i = 0; !stop; i++) {
          const text = body(`n${p}`, i);
          try {
            const { seq } = await store.post("load", { from: `n${p}`, to: "auditor", body: text });
            expect(acked.has(seq), `seq ${seq} acknowledged twice`).toBe(false);
            acked.set(seq, text);
          } catch (err) {
            if (!isAgentChatError(err, "BACKEND_UNAVAILABLE")) throw err;
            refused++;
            unacked.add(text);
            await pause(50);
          }
        }
      });

      // Each round: a waiter parks, the server stops and starts on the same store directory,
      // then one relevant message is posted; the waiter gets exactly that one.
      const wakeMs: number[] = [];
      const waiters = await Promise.all(
        Array.from({ length: SIZES.restarts }, () => NatsStore.open(url)),
      );
      for (let round = 0; round < SIZES.restarts; round++) {
        const as = `watcher${round}`;
        const waiting: Promise<WaitResult> = waiters[round]!.wait(["load"], {
          as,
          timeoutMs: 60_000,
        });
        await pause(400);
        await server!.restart();
        await pause(400);
        const t0 = performance.now();
        const { seq } = await admin.post("load", { from: "boss", to: as, body: `wake ${as}` });
        acked.set(seq, `wake ${as}`);
        const woke = await waiting;
        wakeMs.push(performance.now() - t0);
        expect(woke.messages.map((m) => m.body)).toEqual([`wake ${as}`]);
        expect(woke.cursors).toEqual({ load: seq });
      }
      stop = true;
      await Promise.all(runs);

      // Everything, whoever it was for (a read would show only what is relevant to its reader).
      const messages = await admin.peek("load", 1_000_000);
      const seqs = messages.map((m) => m.seq);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, k) => k + 1));
      const copies = new Map<string, number>();
      for (const m of messages) copies.set(m.body, (copies.get(m.body) ?? 0) + 1);
      const onServer = new Map(messages.map((m) => [m.seq, m.body]));
      for (const [seq, text] of acked) {
        expect(onServer.get(seq), `acknowledged #${seq}`).toBe(text);
        expect(copies.get(text), `copies of acknowledged #${seq}`).toBe(1);
      }
      // A post refused while the server was away landed at most once (its ack may be what
      // was lost), and nothing is there that nobody sent.
      for (const text of unacked) expect(copies.get(text) ?? 0).toBeLessThanOrEqual(1);
      for (const m of messages)
        expect(acked.get(m.seq) === m.body || unacked.has(m.body)).toBe(true);
      const landedUnacked = messages.length - acked.size;
      await Promise.all([admin, ...posters, ...waiters].map((s) => s.close()));
      console.log(
        `nats restart: ${SIZES.restarts} restarts under ${SIZES.posters} posters, ${acked.size} ` +
          `acknowledged posts, 0 lost, 0 duplicated, gapless 1..${seqs.length}; ${refused} posts refused ` +
          `while the server was away (${landedUnacked} of them landed once); ${SIZES.restarts} parked ` +
          `waiters resumed, slowest wake ${Math.max(...wakeMs).toFixed(0)} ms`,
      );
    },
  );
});
