// Bench child: parks `count` agents' waits on one channel through one connection, reports its
// heap and RSS before and after parking them, then the wall-clock time (performance.timeOrigin +
// now, comparable across processes) at which each agent's wait returned.
import { openStore } from "../../dist/index.js";

const [root, channel, first, count] = process.argv.slice(2);
const store = await openStore(root);
// A first read opens the channel's feed: what one process pays once, not per agent.
await store.read(channel, { as: `agent${first}`, peek: true });
globalThis.gc?.();
const before = process.memoryUsage();
const woke = [];
const waits = Array.from({ length: Number(count) }, (_, k) => {
  const as = `agent${Number(first) + k}`;
  return store.wait([channel], { as, timeoutMs: 60_000 }).then((r) => {
    woke.push({ as, at: performance.timeOrigin + performance.now(), n: r.messages.length });
  });
});
// Every wait parked (its presence says so, recorded just before it listens; a message between is
// found by its first look) before memory
// is measured and the post is sent: after a fixed pause the figure would time parking too.
const mine = new Set(Array.from({ length: Number(count) }, (_, k) => `agent${Number(first) + k}`));
for (const deadline = Date.now() + 120_000; ; ) {
  const parked = (await store.who()).filter((p) => mine.has(p.agent) && p.state === "waiting");
  if (parked.length === mine.size) break;
  if (Date.now() > deadline) throw new Error(`${parked.length} of ${mine.size} waits parked`);
  await new Promise((r) => setTimeout(r, 250));
}
globalThis.gc?.();
const parked = process.memoryUsage();
process.send({
  ready: true,
  heapPerAgent: (parked.heapUsed - before.heapUsed) / Number(count),
  rssPerAgent: (parked.rss - before.rss) / Number(count),
});
await Promise.all(waits);
process.send({ woke });
// Each woken wait's receipt and presence follow its answer; close waits for them.
await store.close();
process.send({ settled: performance.timeOrigin + performance.now() });
process.exit(0);
