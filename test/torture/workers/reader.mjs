// Waits/reads in a loop as AGENT until it has been given EXPECTED messages (or the deadline),
// then prints every delivery as JSON: [[seq, body], …] in delivery order.
import { openStore } from "../../../dist/index.js";

const [root, channel, agent, expected, deadlineMs] = process.argv.slice(2);
const store = await openStore(root);
const got = [];
const deadline = Date.now() + Number(deadlineMs);
let turn = 0;
while (got.length < Number(expected) && Date.now() < deadline) {
  try {
    // Alternate wait and plain read: both must deliver each message exactly once.
    const r =
      turn++ % 3 === 2
        ? await store.read(channel, { as: agent })
        : await store.wait([channel], { as: agent, timeoutMs: 2000, intervalMs: 500 });
    for (const m of r.messages) got.push([m.seq, m.body]);
  } catch (err) {
    if (err.code !== "TIMEOUT") throw err;
  }
}
await store.close();
process.stdout.write(JSON.stringify(got));
