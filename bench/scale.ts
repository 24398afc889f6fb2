// Fresh-process cost by channel size: the same commands, each spawned fresh, on channels of 0,
// 10,000 and 100,000 messages, as ratios against the empty channel in the same rounds. Agents'
// hooks and scripts run a fresh process on every prompt, on channels that only grow: what a
// warm in-process store hides (its index kept by the file watch) is paid here on every call.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FsStore } from "../src/store/fs/fs-store.js";
import { makeChannel } from "./fs.js";
import type { BenchContext, BenchModule, Row, Stats } from "./lib.js";
import { environments, type Figure, rounds, spawnTime } from "./startup.js";

const SIZES = [0, 10_000, 100_000];
const CHANNEL = "big";

/** A root whose one channel holds `size` old messages and one unread by bob, who read the rest. */
async function readRoot(ctx: BenchContext, size: number): Promise<string> {
  const root = ctx.tmp();
  await makeChannel(root, CHANNEL, size);
  writeFileSync(join(root, CHANNEL, ".cursors", "bob.txt"), String(size));
  const store = new FsStore(root, { watch: false });
  await store.post(CHANNEL, { from: "alice", to: "bob", body: "unread" });
  await store.close();
  return root;
}

/** The commands timed at one size: `read` moves bob's cursor, so it is set back before each. */
function figuresAt(ctx: BenchContext, size: number, readAt: string, postAt: string): Figure[] {
  const home = ctx.tmp();
  const { clean } = environments(process.env, readAt, home);
  const postEnv = { ...clean, AGENT_CHAT_ROOT: postAt };
  const bob = { ...clean, AGENT_CHAT_NAME: "bob" };
  const cli = (env: NodeJS.ProcessEnv, args: string[], input = "") =>
    spawnTime(process.execPath, [ctx.cli, ...args], env, input);
  const cursor = join(readAt, CHANNEL, ".cursors", "bob.txt");
  const hookInput = JSON.stringify({ hook_event_name: "UserPromptSubmit", prompt: "go" });
  const post = ["post", CHANNEL, "--from", "alice", "--to", "nobody", "--body", "x"];
  return [
    { name: `post@${size}`, run: () => cli(postEnv, post) },
    {
      name: `read@${size}`,
      run: () => {
        writeFileSync(cursor, String(size));
        return cli(clean, ["read", CHANNEL, "--as", "bob"]);
      },
    },
    {
      name: `read --peek@${size}`,
      run: () => cli(clean, ["read", CHANNEL, "--as", "bob", "--peek"]),
    },
    { name: `peek@${size}`, run: () => cli(clean, ["peek", CHANNEL]) },
    { name: `hook prompt@${size}`, run: () => cli(bob, ["hook", "prompt"], hookInput) },
  ];
}

const COMMANDS: Array<[string, string]> = [
  ["post", "`agent-chat post`"],
  ["read", "`agent-chat read` (1 unread, cursor moved)"],
  ["read --peek", "`agent-chat read --peek` (1 unread)"],
  ["peek", "`agent-chat peek` (last 10)"],
  ["hook prompt", "`agent-chat hook prompt` (1 unread)"],
];

function rowsOf(s: Map<string, Stats>): Row[] {
  const rows: Row[] = [];
  for (const size of SIZES.slice(1)) {
    for (const [name, figure] of COMMANDS) {
      const base = s.get(`${name}@0`)!;
      const stats = s.get(`${name}@${size}`)!;
      rows.push({
        group: "fresh process by channel size (clean env)",
        figure: `${figure}, ${size.toLocaleString("en")} messages`,
        unit: "ms",
        stats,
        baseline: { name: "the same on an empty channel", stats: base },
        goal: "≤ 1.1× empty",
        met: stats.median / base.median <= 1.1,
      });
    }
  }
  return rows;
}

const scaleBench: BenchModule = {
  name: "channel size",
  async run(ctx) {
    const figures: Figure[] = [];
    for (const size of SIZES) {
      process.stderr.write(`  filling two channels of ${size} messages…\n`);
      const readAt = await readRoot(ctx, size);
      const postAt = ctx.tmp();
      await makeChannel(postAt, CHANNEL, size);
      figures.push(...figuresAt(ctx, size, readAt, postAt));
    }
    // Every figure of every size once per round, in an order that rotates: a burst of load on
    // the machine falls on the sizes alike.
    return rowsOf(await rounds(figures, ctx.quick ? 7 : 21));
  },
};

export default scaleBench;
