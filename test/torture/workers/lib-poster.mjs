// Posts COUNT broadcasts through the library and prints "ack <seq> <i>" as soon as each post
// returns (acknowledged), so that a test killing this process knows what was acknowledged.
import { openStore } from "../../../dist/index.js";
import { bodyOf } from "./common.mjs";

const [root, channel, writer, count, pauseMs] = process.argv.slice(2);
const store = await openStore(root);
for (let i = 0; i < Number(count); i++) {
  const { seq } = await store.post(channel, {
    from: writer,
    title: `t ${i}`,
    body: bodyOf(writer, i),
  });
  process.stdout.write(`ack ${seq} ${i}\n`);
  if (Number(pauseMs) > 0) await new Promise((r) => setTimeout(r, Number(pauseMs)));
}
await store.close();
