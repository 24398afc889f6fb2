// Tries to claim every task id given, in a shuffled order; prints the ids it won.
import { openStore } from "../../../dist/index.js";

const [root, channel, agent, ...ids] = process.argv.slice(2);
const store = await openStore(root);
const order = [...ids].sort(() => Math.random() - 0.5);
const won = [];
for (const id of order) {
  try {
    await store.claim(channel, id, agent);
    won.push(id);
  } catch (err) {
    if (err.code !== "CLAIM_LOST") throw err;
  }
}
await store.close();
process.stdout.write(JSON.stringify(won));
