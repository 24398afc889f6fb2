import { execFile } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

const run = promisify(execFile);
const worker = fileURLToPath(new URL("../helpers/post-worker.mjs", import.meta.url));
let tmp: ReturnType<typeof tempDir>;

beforeEach(async () => {
  tmp = tempDir();
  const store = new FsStore(tmp.dir);
  await store.init("ch");
  await store.close();
});

afterEach(() => tmp.cleanup());

describe("many processes at once", () => {
  it("8 processes posting 200 messages each: 1,600 distinct, gapless numbers, bodies intact", async () => {
    const outputs = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        run(process.execPath, [worker, tmp.dir, "ch", `p${i}`, "200"], { timeout: 60_000 }),
      ),
    );
    const seqs = outputs.flatMap((o) => JSON.parse(o.stdout) as number[]).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 1600 }, (_, k) => k + 1));
    const dir = join(tmp.dir, "ch");
    const files = readdirSync(dir).filter((n) => n.endsWith(".md"));
    expect(files).toHaveLength(1600);
    const store = new FsStore(tmp.dir);
    const all = await store.read("ch", { as: "auditor", all: true, peek: true });
    await store.close();
    expect(all.warnings).toEqual([]);
    const bodies = new Set(all.messages.map((m) => m.body));
    for (let p = 0; p < 8; p++) {
      for (let i = 0; i < 200; i++) expect(bodies.has(`p${p} message ${i}\nline two`)).toBe(true);
    }
    // No temporary or lock files are left behind.
    expect(readdirSync(dir).filter((n) => n.startsWith(".tmp-") || n === "_seq.lock")).toEqual([]);
    expect(readFileSync(join(dir, ".seq"), "utf8")).toBe("1600");
  }, 90_000);

  it("16 processes claiming one task: exactly one wins, 15 exit 3", async () => {
    const add = await runCli(
      ["task", "add", "ch", "--id", "7", "--title", "contested", "--as", "lead"],
      {
        root: tmp.dir,
      },
    );
    expect(add.code).toBe(0);
    const children = Array.from({ length: 16 }, (_, i) =>
      startCli(["claim", "ch", i % 2 ? "task-7.md" : "7", "--as", `agent${i}`], { root: tmp.dir }),
    );
    const results = await Promise.all(children.map((c) => collect(c)));
    const codes = results.map((r) => r.code).sort();
    expect(codes.filter((c) => c === 0)).toHaveLength(1);
    expect(codes.filter((c) => c === 3)).toHaveLength(15);
    for (const r of results.filter((x) => x.code === 3)) {
      expect(r.stderr).toMatch(/^agent-chat: task 7 is already claimed by agent\d+\n$/);
    }
    const claimed = readdirSync(join(tmp.dir, "ch")).filter((n) => n.startsWith("task-"));
    expect(claimed).toHaveLength(1);
    expect(claimed[0]).toMatch(/^task-7\.CLAIMED-agent\d+\.md$/);
  }, 60_000);

  it("16 processes racing for one expired task: exactly one wins with token 2, 15 exit 3", async () => {
    const opts = { root: tmp.dir };
    await runCli(["task", "add", "ch", "--id", "7", "--title", "contested", "--as", "lead"], opts);
    expect((await runCli(["claim", "ch", "7", "--as", "gone"], opts)).code).toBe(0);
    // The holder went silent: its lease ended five minutes ago (as time would make it).
    const lease = join(tmp.dir, "ch", ".task-7.lease");
    const expired = { ...JSON.parse(readFileSync(lease, "utf8")), expiresAt: Date.now() - 300_000 };
    writeFileSync(lease, JSON.stringify(expired));
    const children = Array.from({ length: 16 }, (_, i) =>
      startCli(["--json", "claim", "ch", "7", "--as", `agent${i}`], opts),
    );
    const results = await Promise.all(children.map((c) => collect(c)));
    const won = results.filter((r) => r.code === 0);
    expect(won).toHaveLength(1);
    expect(results.filter((r) => r.code === 3)).toHaveLength(15);
    const winner = JSON.parse(won[0]!.stdout);
    expect(winner).toMatchObject({ state: "claimed", token: 2 });
    const files = readdirSync(join(tmp.dir, "ch")).filter((n) => n.startsWith("task-"));
    expect(files).toEqual([`task-7.CLAIMED-${winner.holder}.md`]);
    expect(JSON.parse(readFileSync(lease, "utf8"))).toMatchObject({
      token: 2,
      holder: winner.holder,
    });
    // The holder that went silent comes back with its token: refused, the winner keeps it.
    const late = await runCli(["done", "ch", "7", "--as", "gone", "--token", "1"], opts);
    expect(late.code).toBe(3);
    expect(late.stderr).toContain(`claimed by ${winner.holder} (token 2`);
  }, 60_000);
});
