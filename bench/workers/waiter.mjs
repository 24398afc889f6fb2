// Bench child: waits on a channel in a loop and reports, over IPC, the wall-clock time
// (performance.timeOrigin + now, comparable across processes) at which each wait returned.
import { openStore } from "../../dist/index.js";

const [root, channel, agent, watch, intervalMs] = process.argv.slice(2);
const store = await openStore(root, { watch: watch === "watch" });
process.on("message", async (msg) => {
  if (msg === "stop") {
    await store.close();
    process.exit(0);
  }
});
process.send("ready");
for (;;) {
  const r = await store.wait([channel], {
    as: agent,
    timeoutMs: 120_000,
    intervalMs: Number(intervalMs),
  });
  process.send({
    at: performance.timeOrigin + performance.now(),
    seqs: r.messages.map((m) => m.seq),
  });
}
