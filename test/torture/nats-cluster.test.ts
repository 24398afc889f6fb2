import { afterEach, describe, expect, it } from "vitest";
import { isAgentChatError } from "../../src/core/errors.js";
import type { Message } from "../../src/core/message.js";
import { bucketOf, NatsStore } from "../../src/store/nats/nats-store.js";
import { type ClusterNode, NatsCluster } from "../helpers/nats-cluster.js";
import { natsSkipReason } from "../helpers/nats-server.js";
import { skipName } from "../helpers/tools.js";
import { FULL } from "./sizes.js";
// @ts-expect-error plain ESM helper shared with the worker processes
import { bodyOf } from "./workers/common.mjs";

const body = bodyOf as (writer: string, i: number) => string;
const POSTERS = 4;
const WAITERS = 4;
/** How long the load runs before, during and after the fault. */
const PHASE_MS = FULL ? 10_000 : 3_000;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The row stays bounded: a cluster that never recovers fails it instead of hanging it. */
async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

let cluster: NatsCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

interface Load {
  acked: Map<number, string>;
  unacked: Set<string>;
  refused: number;
  /** Why posts were refused, and how often. */
  reasons: Map<string, number>;
  /** What each waiter was woken with, in order (seqs). */
  woken: number[][];
  waitErrors: number;
  stop: () => Promise<void>;
}

/**
 * 4 posters on their own connections post without pause, each message to one of 4 waiters in
 * turn; the 4 waiters run `wait` in a loop, as agents do, and note every message they are woken
 * with. A call that fails while the cluster fails over is not acknowledged (posts) or is simply
 * run again (waits): the cursor only moves for what a wait returned.
 */
async function startLoad(url: string): Promise<Load> {
  const admin = await NatsStore.open(url);
  await admin.init("load");
  await admin.close();
  const load: Load = {
    acked: new Map(),
    unacked: new Set(),
    refused: 0,
    reasons: new Map(),
    woken: Array.from({ length: WAITERS }, () => []),
    waitErrors: 0,
    stop: async () => {},
  };
  let stopping = false;
  const posters = await Promise.all(Array.from({ length: POSTERS }, () => NatsStore.open(url)));
  const waiters = await Promise.all(Array.from({ length: WAITERS }, () => NatsStore.open(url)));
  const posting = posters.map(async (store, p) => {
    for (let i = 0; !stopping; i++) {
      const text = body(`p${p}`, i);
      try {
        const { seq } = await store.post("load", {
          from: `p${p}`,
          to: `w${i % WAITERS}`,
          body: text,
        });
        expect(load.acked.has(seq), `seq ${seq} acknowledged twice`).toBe(false);
        load.acked.set(seq, text);
      } catch (err) {
        if (!isAgentChatError(err, "BACKEND_UNAVAILABLE")) throw err;
        load.refused++;
        const why = (err as Error).message.replace(/\d+/g, "N");
        load.reasons.set(why, (load.reasons.get(why) ?? 0) + 1);
        load.unacked.add(text);
      }
    }
  });
  const waiting = waiters.map((store, w) => waitUntilEnd(store, `w${w}`, load, load.woken[w]!));
  load.stop = async () => {
    stopping = true;
    await within(60_000, Promise.all(posting), "the posters to stop");
    // One last message for each waiter: it ends that waiter's loop once delivered.
    const boss = await NatsStore.open(url);
    for (let w = 0; w < WAITERS; w++) {
      const { seq } = await boss.post("load", { from: "boss", to: `w${w}`, body: "end" });
      load.acked.set(seq, "end");
    }
    await within(60_000, Promise.all(waiting), "the waiters to get their last message");
    await Promise.all([boss, ...posters, ...waiters].map((s) => s.close()));
  };
  return load;
}

/** Runs `wait` in a loop as an agent does, noting each seq it is woken with, until "end". */
async function waitUntilEnd(store: NatsStore, as: string, load: Load, woken: number[]) {
  for (;;) {
    try {
      const r = await store.wait(["load"], { as, timeoutMs: 30_000 });
      woken.push(...r.messages.map((m) => m.seq));
      if (r.messages.some((m) => m.body === "end")) return;
    } catch (err) {
      if (!isAgentChatError(err, "BACKEND_UNAVAILABLE")) throw err;
      load.waitErrors++;
    }
  }
}

/** 0 acknowledged posts lost, 0 duplicated, gapless, every waiter woken once per message for it. */
async function check(url: string, load: Load): Promise<string> {
  const reader = await NatsStore.open(url);
  const messages: Message[] = await reader.peek("load", 1_000_000);
  await reader.close();
  const seqs = messages.map((m) => m.seq);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, k) => k + 1));
  const bySeq = new Map(messages.map((m) => [m.seq, m]));
  const copies = new Map<string, number>();
  for (const m of messages) {
    if (m.body !== "end") copies.set(m.body, (copies.get(m.body) ?? 0) + 1);
  }
  for (const [seq, text] of load.acked) {
    expect(bySeq.get(seq)?.body, `acknowledged #${seq}`).toBe(text);
    if (text !== "end") expect(copies.get(text), `copies of acknowledged #${seq}`).toBe(1);
  }
  for (const text of load.unacked) expect(copies.get(text) ?? 0).toBeLessThanOrEqual(1);
  for (let w = 0; w < WAITERS; w++) {
    const meant = messages.filter((m) => m.to === `w${w}`).map((m) => m.seq);
    expect(load.woken[w], `what w${w} was woken with`).toEqual(meant);
  }
  return (
    `${load.acked.size} acknowledged posts, 0 lost, 0 duplicated, gapless 1..${seqs.length}; ` +
    `${load.refused} posts refused during the fault (${messages.length - load.acked.size} of them landed once); ` +
    `${WAITERS} waiters woken for each of their ${load.woken.map((w) => w.length).join("/")} messages exactly once ` +
    `(${load.waitErrors} waits run again); refusals: ${JSON.stringify([...load.reasons])}`
  );
}

function leaderOf(c: NatsCluster, namespace: string, not?: ClusterNode): Promise<ClusterNode> {
  return c.streamLeader(`AGENTCHAT_${namespace}`, not);
}

const SUITE = skipName("nats cluster: failover under load", natsSkipReason);
describe.skipIf(natsSkipReason !== undefined)(SUITE, () => {
  it("SIGKILL the stream leader while 4 posters and 4 waiters run, then restart it", async () => {
    cluster = await NatsCluster.start();
    const namespace = `kill${process.pid}`;
    const url = cluster.url(namespace);
    const load = await startLoad(url);
    await pause(PHASE_MS);
    const leader = await leaderOf(cluster, namespace);
    await leader.kill();
    const t0 = performance.now();
    const next = await leaderOf(cluster, namespace, leader);
    const electedMs = performance.now() - t0;
    await pause(PHASE_MS);
    await leader.start();
    await cluster.waitReady();
    await pause(PHASE_MS);
    await load.stop();
    const summary = await check(url, load);
    console.log(
      `nats cluster, stream leader ${leader.name} SIGKILLed (${next.name} led after ${electedMs.toFixed(0)} ms) and restarted: ${summary}`,
    );
  });

  // KNOWN FAILURE, issue 21 (open), in nats-server 2.9.10 (Debian's), not in agent-chat: about
  // one run in three, an acknowledged post is replaced after the frozen leader thaws. Traced
  // (2026-12-01): poster A's publish of seq N waits in the frozen leader's socket; poster B's
  // seq N is acknowledged by the new leader at stream seq N; after the thaw the stream holds A's
  // message at N (A was never acknowledged) and B's is gone from N. Waiters then see a message
  // that later reads do not. It runs with `--full` (and counts as skipped in CI) until a server
  // with the raft fixes of 2.10 can be tested here.
  it.skipIf(!FULL)(
    skipName(
      "SIGSTOP one node (the stream leader, cut off as by a partition), then let it back",
      FULL ? undefined : "runs with --full only",
    ),
    async () => {
      cluster = await NatsCluster.start();
      const namespace = `stop${process.pid}`;
      const url = cluster.url(namespace);
      const load = await startLoad(url);
      await pause(PHASE_MS);
      const frozen = await leaderOf(cluster, namespace);
      frozen.pause();
      const t0 = performance.now();
      const next = await leaderOf(cluster, namespace, frozen);
      const electedMs = performance.now() - t0;
      await pause(PHASE_MS);
      frozen.resume();
      await cluster.waitReady();
      await cluster.waitLed([`AGENTCHAT_${namespace}`, `KV_${bucketOf(namespace)}`]);
      await pause(PHASE_MS);
      await load.stop();
      const summary = await check(url, load);
      console.log(
        `nats cluster, stream leader ${frozen.name} SIGSTOPped (${next.name} led after ${electedMs.toFixed(0)} ms) and thawed: ${summary}`,
      );
    },
  );
});
