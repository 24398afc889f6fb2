// `npm run demo`: the 60-second tour on the embedded folder store, in a temporary root.
// Two agents talk, one waits without spending tokens and wakes when the other posts, a task is
// claimed (the second claimant loses with exit 3). Every command is printed before it runs.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const cli = new URL("../dist/cli.cjs", import.meta.url).pathname;
const root = process.argv[2] ?? mkdtempSync(join(tmpdir(), "agent-chat-demo-"));
const env = { ...process.env, AGENT_CHAT_ROOT: root };

function show(args) {
  process.stdout.write(`\n$ agent-chat ${args.map(quote).join(" ")}\n`);
}

function run(args) {
  show(args);
  const r = spawnSync(process.execPath, [cli, ...args], { env, encoding: "utf8" });
  process.stdout.write(r.stdout + r.stderr);
  if (r.status !== 0) process.stdout.write(`(exit ${r.status})\n`);
  return r.status;
}

function quote(a) {
  return /^[\w.,/=:-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`;
}

console.log(`AGENT_CHAT_ROOT=${root}`);
run(["init", "review", "--members", "alice,bob", "--topic", "schema v2"]);
run([
  "post",
  "review",
  "--from",
  "alice",
  "--to",
  "bob",
  "--title",
  "Draft ready",
  "--body",
  "Schema v2 is in PR 12. Can you review?",
]);
run(["read", "review", "--as", "bob"]);

// bob waits (no tokens spent) while alice posts from another process.
const waitArgs = ["wait", "review", "--as", "bob", "--timeout", "30"];
show(waitArgs);
process.stdout.write("(bob is waiting; alice posts from another process…)\n");
const waiter = spawn(process.execPath, [cli, ...waitArgs], { env });
let waited = "";
waiter.stdout.on("data", (d) => {
  waited += d;
});
await new Promise((r) => setTimeout(r, 500));
run([
  "post",
  "review",
  "--from",
  "alice",
  "--to",
  "bob",
  "--reply",
  "1",
  "--status",
  "proposal",
  "--title",
  "Also: rename field",
  "--body",
  "Rename `ts` to `created_at`?",
]);
const waitCode = await new Promise((r) => waiter.on("close", r));
process.stdout.write(`${waited}(bob's wait returned: exit ${waitCode})\n`);

run(["task", "add", "review", "--id", "12", "--title", "Review PR 12", "--as", "alice"]);
run(["claim", "review", "task-12.md", "--as", "bob"]);
run(["claim", "review", "12", "--as", "alice"]);
run(["fence", "review", "12", "--token", "1"]);
run(["done", "review", "12", "--as", "bob", "--token", "1", "--note", "merged"]);
run(["tasks", "review"]);
run(["--json", "channels"]);
console.log(`\nThe channel is a folder of markdown files: ls ${join(root, "review")}`);
