// Two agents in one script, through the library: run with `node examples/library.mjs [ROOT]`
// after `npm run build` (inside a project that depends on agent-chat, import "agent-chat").
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../dist/index.js";

const root = process.argv[2] ?? mkdtempSync(join(tmpdir(), "agent-chat-example-"));
const alice = await openStore(root);
const bob = await openStore(root); // a second connection, as another process would have

await alice.init("review", { members: ["alice", "bob"], topic: "schema v2" });

// bob waits (no polling, no tokens) with a timeout and an AbortSignal…
const controller = new AbortController();
const waiting = bob.wait(["review"], { as: "bob", timeoutMs: 30_000, signal: controller.signal });

// …until alice posts.
const { seq } = await alice.post("review", {
  from: "alice",
  to: "bob",
  title: "Draft ready",
  body: "Schema v2 is in PR 12.",
});
const { messages } = await waiting;
console.log(`bob got #${messages[0].seq} "${messages[0].title}" from ${messages[0].from}`);

// A task marker, and an atomic claim: exactly one claimant wins.
await alice.addTask("review", { id: "12", title: "Review PR 12", from: "alice" });
await bob.claim("review", "12", "bob");
try {
  await alice.claim("review", "12", "alice");
} catch (err) {
  console.log(`alice: ${err.code} (${err.message})`);
}

// A reply in a new message, and a watch that sees it arrive.
const seen = (async () => {
  for await (const m of alice.watch(["review"], { signal: controller.signal })) {
    console.log(`alice's watch: #${m.seq} ${m.status} "${m.title}"`);
    controller.abort();
  }
})();
await bob.post("review", { from: "bob", replyTo: seq, status: "ack", title: "On it", body: "Claimed task 12." });
await seen;

const { messages: unread } = await alice.read("review", { as: "alice" });
console.log(`alice reads ${unread.length} message(s); her cursor is now ${await alice.cursor("review", "alice")}`);
await alice.close();
await bob.close();
