import { createHash } from "node:crypto";
import {
  existsSync,
  linkSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir } from "../helpers/tmp.js";

/** How many message files the store reads (the cost of a search is in those reads). */
const reads = vi.hoisted(() => ({ md: 0 }));
vi.mock("../../src/fsutil/root-files.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/fsutil/root-files.js")>();
  return {
    ...real,
    readRootFileSync: (path: string, max: number) => {
      if (path.endsWith(".md")) reads.md++;
      return real.readRootFileSync(path, max);
    },
  };
});

/** The folder store's stored search index, CH/.search/ (docs/search.md, "Where the index lives"). */
let tmp: ReturnType<typeof tempDir>;
const opened: FsStore[] = [];

/** The user's own secret the index is kept under (src/client/index-secret.ts makes one). */
const SECRET = "5ec7e7".repeat(10).padEnd(64, "0");

/** A store with the user's secret; `null`: one without any. */
function open(secret: string | null = SECRET): FsStore {
  const s = new FsStore(tmp.dir, { searchIndexSecret: async () => secret ?? undefined });
  opened.push(s);
  return s;
}

/** A fresh process's first search (each CLI command is one). */
async function firstSearch(query: string) {
  reads.md = 0;
  return open().search(query, { channels: ["ch"] });
}

const dir = () => join(tmp.dir, "ch");
const indexNames = (folder: string) =>
  existsSync(folder) ? readdirSync(folder).filter((n) => /^index-[0-9a-f]{16}\.json$/.test(n)) : [];
/** The secret's own index file: `index-` and the first 16 hex digits of a hash of the secret. */
const indexFile = () => {
  const id = createHash("sha256").update(`agent-chat search index\n${SECRET}`).digest("hex");
  return join(dir(), ".search", `index-${id.slice(0, 16)}.json`);
};
/** Backdated, so the index takes them as settled (a file just written may still be growing). */
function settle(): void {
  const past = new Date(Date.now() - 60_000);
  for (const name of readdirSync(dir()).filter((n) => n.endsWith(".md"))) {
    utimesSync(join(dir(), name), past, past);
  }
}

beforeEach(async () => {
  tmp = tempDir();
  const store = open();
  await store.init("ch");
  for (let i = 1; i <= 120; i++) {
    await store.post("ch", {
      from: "alice",
      title: `note ${i}`,
      body: i === 60 ? "we picked the zebra schema" : `plain body ${i} about cache`,
    });
  }
  settle();
});

afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  tmp.cleanup();
});

describe("the stored search index", () => {
  it("a process's first search reads the index and the hits' files, not every message", async () => {
    expect((await firstSearch("zebra")).hits.map((h) => h.seq)).toEqual([60]); // builds it
    expect(existsSync(indexFile())).toBe(true);
    const result = await firstSearch("zebra");
    expect(result.hits.map((h) => h.seq)).toEqual([60]);
    expect(result.hits[0]!.snippet).toContain("⟦zebra⟧");
    expect(reads.md).toBeLessThanOrEqual(2);
    // Many matches: the total from the index, only the shown ones read.
    const many = await open().search("cache", { channels: ["ch"], limit: 5 });
    expect(many.total).toBe(119);
    expect(many.hits.map((h) => h.seq)).toEqual([120, 119, 118, 117, 116]);
  });

  it("is kept out of git and of what chat.py lists", async () => {
    await firstSearch("zebra");
    expect(readFileSync(join(dir(), ".search", ".gitignore"), "utf8")).toBe("*\n");
    expect(readdirSync(dir()).filter((n) => /^\d+-.*\.md$/.test(n))).toHaveLength(120);
  });

  it("is brought up to date: new posts (ours and chat.py's) are found, deleted ones not", async () => {
    await firstSearch("zebra");
    await open().post("ch", { from: "bob", title: "zebra again", body: "more" });
    await referencePost(dir(), { from: "carol", title: "from the reference", body: "a zebra too" });
    settle();
    const gone = readdirSync(dir()).find((n) => n.startsWith("0060-"))!;
    unlinkSync(join(dir(), gone));
    expect((await firstSearch("zebra")).hits.map((h) => h.seq)).toEqual([122, 121]);
    // And the update was stored: the next process reads only its hits.
    expect((await firstSearch("zebra")).total).toBe(2);
    expect(reads.md).toBeLessThanOrEqual(2);
  });

  it("a just-written file is matched but not stored (it may still be being written)", async () => {
    await firstSearch("zebra");
    await open().post("ch", { from: "bob", title: "fresh zebra", body: "new" });
    expect((await firstSearch("zebra")).hits.map((h) => h.seq)).toEqual([121, 60]);
    expect(readFileSync(indexFile(), "utf8")).not.toContain("fresh");
  });

  it("a hit is checked against its file: an index that lies shows nothing false", async () => {
    await firstSearch("zebra");
    const [macLine, text] = readFileSync(indexFile(), "utf8").split(/\n(.*)/s) as [string, string];
    const index = JSON.parse(text);
    // Claim every message holds "zebra" and came from mallory.
    index.vocab = index.vocab.filter((p: [string, number[]]) => p[0] !== "zebra");
    index.vocab.push(["zebra", index.docs.map(() => 1)]);
    for (const doc of index.docs) doc[2] = "mallory";
    writeFileSync(indexFile(), `${macLine}\n${JSON.stringify(index)}`);
    const result = await firstSearch("zebra");
    expect(result.hits.map((h) => [h.seq, h.from])).toEqual([[60, "alice"]]);
  });

  it("a corrupt, cut-short, linked or hard-linked index is rebuilt, never trusted", async () => {
    await firstSearch("zebra");
    const good = readFileSync(indexFile(), "utf8");
    const forged = good.replace(/"zebra"/, '"decoy"');
    const bad = [
      () => writeFileSync(indexFile(), good.slice(0, good.length / 2)),
      () => writeFileSync(indexFile(), '{"v":1,"docs":[["x"]],"vocab":[]}'),
      () => writeFileSync(indexFile(), good.replace(/"zebra",\[\d+\]/, '"zebra",[-5]')),
      () => {
        writeFileSync(join(tmp.dir, "forged.json"), forged);
        rmSync(indexFile());
        symlinkSync(join(tmp.dir, "forged.json"), indexFile());
      },
      () => {
        writeFileSync(join(tmp.dir, "forged2.json"), forged);
        rmSync(indexFile());
        linkSync(join(tmp.dir, "forged2.json"), indexFile());
      },
    ];
    for (const spoil of bad) {
      spoil();
      expect((await firstSearch("zebra")).hits.map((h) => h.seq)).toEqual([60]);
      expect(readFileSync(indexFile(), "utf8")).toContain('"zebra"');
    }
    expect(readFileSync(join(tmp.dir, "forged.json"), "utf8")).toBe(forged); // not written through
  });

  it("a link planted as .search is never followed: the search scans", async () => {
    rmSync(join(dir(), ".search"), { recursive: true, force: true });
    symlinkSync(tmp.dir, join(dir(), ".search"));
    expect((await firstSearch("zebra")).hits.map((h) => h.seq)).toEqual([60]);
    expect(indexNames(tmp.dir)).toEqual([]);
  });

  it("without a secret of the user's, nothing is stored and every search scans", async () => {
    reads.md = 0;
    const result = await open(null).search("zebra", { channels: ["ch"] });
    expect(result.hits.map((h) => h.seq)).toEqual([60]);
    expect(reads.md).toBeGreaterThanOrEqual(120);
    expect(existsSync(join(dir(), ".search"))).toBe(false);
  });

  it("phrases and prefixes: the index proposes, the matcher decides", async () => {
    await firstSearch("zebra");
    const phrase = await firstSearch('"schema zebra"'); // both words, not in that order
    expect([phrase.total, phrase.hits.map((h) => h.seq)]).toEqual([0, []]);
    expect((await firstSearch('"picked the zebra"')).hits.map((h) => h.seq)).toEqual([60]);
    expect((await firstSearch("zeb*")).hits.map((h) => h.seq)).toEqual([60]);
    expect((await firstSearch("zebra ->")).total).toBe(0); // a literal: a scan
  });
});
