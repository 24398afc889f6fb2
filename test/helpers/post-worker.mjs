// A separate poster process for concurrency tests: posts COUNT messages through the built
// library, then prints the seqs it was given as one JSON line.
import { openStore } from "../../dist/index.js";

const [root, channel, from, count] = process.argv.slice(2);
const store = await openStore(root);
const seqs = [];
for (let i = 0; i < Number(count); i++) {
  const r = await store.post(channel, {
    from,
    title: `m ${i}`,
    body: `${from} message ${i}\nline two`,
  });
  seqs.push(r.seq);
}
await store.close();
process.stdout.write(`${JSON.stringify(seqs)}\n`);
