// Bench child: posts COUNT messages as fast as it can, then reports its seqs and its time.
import { openStore } from "../../dist/index.js";

const [root, channel, from, count] = process.argv.slice(2);
const store = await openStore(root);
const seqs = [];
const t0 = performance.now();
for (let i = 0; i < Number(count); i++) {
  seqs.push((await store.post(channel, { from, title: "bench", body: `${from} ${i}` })).seq);
}
const ms = performance.now() - t0;
await store.close();
process.stdout.write(`${JSON.stringify({ seqs, ms })}\n`);
