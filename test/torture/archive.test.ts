import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { startCli } from "../helpers/cli.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir } from "../helpers/tmp.js";
import { FULL } from "./sizes.js";

/**
 * Retention under SIGKILL (docs/search.md): `agent-chat archive` killed at random points, again
 * and again, while the channel goes on. After every kill each message exists exactly once (hot
 * or archived), numbering continues for us and for chat.py, and a reader never gets a message
 * twice.
 */
const KILLS = FULL ? 100 : 20;
const SEED = FULL ? 5_000 : 2_000;

let tmp: ReturnType<typeof tempDir>;
let dir: string;
beforeAll(() => {
  tmp = tempDir("agent-chat-archive-");
  dir = join(tmp.dir, "ch");
});
afterAll(() => tmp.cleanup());

function seqsIn(folder: string): number[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((n) => /^\d+-.*\.md$/.test(n))
    .map((n) => Number.parseInt(n, 10));
}

function everySeq(): number[] {
  const archive = join(dir, "_archive");
  const months = existsSync(archive) ? readdirSync(archive) : [];
  return [...seqsIn(dir), ...months.flatMap((m) => seqsIn(join(archive, m)))].sort((a, b) => a - b);
}

/** Runs `agent-chat archive` and SIGKILLs it after `ms` (or lets it finish first). */
function archiveKilledAfter(before: number, ms: number): Promise<void> {
  const child = startCli(["archive", "ch", "--before", String(before)], { root: tmp.dir });
  const timer = setTimeout(() => child.kill("SIGKILL"), ms);
  return new Promise((resolve) => {
    child.on("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe("archive: SIGKILL at random points", () => {
  it("every message exists once, numbering continues, no reader gets a message twice", async () => {
    const store = new FsStore(tmp.dir);
    await store.init("ch");
    for (let i = 1; i <= SEED; i++) await store.post("ch", { from: "seed", body: `m${i}` });
    const delivered = new Set<number>();
    let last = SEED;
    let killedMidway = 0;
    for (let k = 0; k < KILLS; k++) {
      const before = Math.min(last, Math.round(((k + 1) * SEED) / KILLS));
      const hotBefore = seqsIn(dir).length;
      await archiveKilledAfter(before, 80 + Math.random() * 400);
      const moved = hotBefore - seqsIn(dir).length;
      if (moved > 0 && seqsIn(dir).some((s) => s < before)) killedMidway++;

      const all = everySeq();
      expect(all.length, "a message lost or duplicated").toBe(last);
      expect(all).toEqual(Array.from({ length: last }, (_, i) => i + 1));

      // Numbering continues: ours, then the reference's, one past the largest.
      const fresh = new FsStore(tmp.dir);
      expect((await fresh.post("ch", { from: "ours", body: `after kill ${k}` })).seq).toBe(
        last + 1,
      );
      await fresh.close();
      expect(await referencePost(dir, { from: "py", title: `k${k}`, body: "x" })).toBe(last + 2);
      last += 2;

      const read = await store.read("ch", { as: "reader" });
      for (const m of read.messages) {
        expect(delivered.has(m.seq), `#${m.seq} delivered twice`).toBe(false);
        delivered.add(m.seq);
      }
    }
    await store.close();
    console.log(`archive torture: ${KILLS} kills, ${killedMidway} mid-move; ${last} messages`);
  });
});
