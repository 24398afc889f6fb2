import { readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import type { Store } from "../../src/store/types.js";
import { daemonFixture } from "../daemon/harness.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * The stored search index is anyone's input (docs/search.md): a member who edits it well-formed
 * (drops a word's postings) must cost the next search a rebuild, never hide a message.
 */
const opened: Store[] = [];
const tmps: Array<{ cleanup: () => void }> = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const t of tmps.splice(0)) t.cleanup();
});

/** Backdated, so the index takes the files as settled (one just written may still grow). */
function settle(dir: string): void {
  const past = new Date(Date.now() - 60_000);
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".md"))) {
    utimesSync(join(dir, name), past, past);
  }
}

/**
 * What an attacker does to every index file of the channel: removes `word` from it, leaving
 * the rest (and any line before the JSON) as it was, so that the file stays well-formed.
 */
function dropWord(channelDir: string, word: string): number {
  const dir = join(channelDir, ".search");
  let edited = 0;
  for (const name of readdirSync(dir).filter((n) => /^index.*\.json$/.test(n))) {
    const raw = readFileSync(join(dir, name), "utf8");
    const cut = raw.startsWith("{") ? -1 : raw.indexOf("\n");
    const index = JSON.parse(raw.slice(cut + 1)) as { vocab: Array<[string, number[]]> };
    index.vocab = index.vocab.filter(([w]) => w !== word);
    writeFileSync(join(dir, name), `${raw.slice(0, cut + 1)}${JSON.stringify(index)}`);
    edited++;
  }
  return edited;
}

async function channelWithZebra(root: string, configDir: string, channel = "ch"): Promise<Store> {
  const store = await openStore(root, { signatures: { configDir } });
  opened.push(store);
  await store.init(channel);
  for (let i = 1; i <= 5; i++) {
    const body = i === 3 ? "we picked the zebra schema" : `plain ${i}`;
    await store.post(channel, { from: "alice", body });
  }
  settle(join(root, channel));
  return store;
}

describe("a tampered search index", () => {
  it("a well-formed edit that drops a word costs a rebuild, never a hidden message", async () => {
    const tmp = tempDir();
    tmps.push(tmp);
    const root = join(tmp.dir, "root");
    const store = await channelWithZebra(root, join(tmp.dir, "config"));
    expect((await store.search("zebra")).hits.map((h) => h.seq)).toEqual([3]); // builds it
    expect(dropWord(join(root, "ch"), "zebra")).toBeGreaterThan(0);

    const next = await openStore(root, { signatures: { configDir: join(tmp.dir, "config") } });
    opened.push(next);
    expect((await next.search("zebra")).hits.map((h) => h.seq)).toEqual([3]);
    // New posts are found with the old ones, the index rebuilt once.
    await next.post("ch", { from: "bob", body: "another zebra" });
    settle(join(root, "ch"));
    expect((await next.search("zebra")).hits.map((h) => h.seq)).toEqual([6, 3]);
  });

  it("an index of ours copied from another channel is not believed there", async () => {
    const tmp = tempDir();
    tmps.push(tmp);
    const root = join(tmp.dir, "root");
    const config = join(tmp.dir, "config");
    const store = await channelWithZebra(root, config);
    await store.init("other");
    for (let i = 1; i <= 5; i++) await store.post("other", { from: "alice", body: `zebra ${i}` });
    settle(join(root, "other"));
    // A store's first search is the one that uses (and writes) the stored index.
    const fresh = async () => {
      const s = await openStore(root, { signatures: { configDir: config } });
      opened.push(s);
      return s;
    };
    await (await fresh()).search("zebra", { channels: ["ch"] });
    await (await fresh()).search("zebra", { channels: ["other"] });
    const name = readdirSync(join(root, "ch", ".search")).find((n) => n.startsWith("index-"))!;
    writeFileSync(
      join(root, "other", ".search", name),
      readFileSync(join(root, "ch", ".search", name)),
    );
    const found = await (await fresh()).search("zebra", { channels: ["other"] });
    expect(found.hits.map((h) => h.seq)).toEqual([5, 4, 3, 2, 1]);
  });
});

const { world: makeWorld, serve } = daemonFixture();

describe("a tampered search index, searched through a daemon", () => {
  it("the daemon's first search rebuilds it and finds the message", async () => {
    const world = makeWorld();
    const ok = async (args: string[]) => {
      const r = await world.cli(args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return r;
    };
    await ok(["init", "ch"]);
    for (let i = 1; i <= 5; i++) {
      const body = i === 3 ? "we picked the zebra schema" : `plain ${i}`;
      await ok(["post", "ch", "--from", "alice", "--body", body]);
    }
    settle(join(world.root, "ch"));
    const seqs = async () =>
      (
        JSON.parse((await ok(["--json", "search", "zebra"])).stdout) as {
          hits: Array<{ seq: number }>;
        }
      ).hits.map((h) => h.seq);
    expect(await seqs()).toEqual([3]); // no daemon yet: the CLI builds and stores the index
    expect(dropWord(join(world.root, "ch"), "zebra")).toBeGreaterThan(0);
    await serve(world); // the daemon's first search reads the stored index
    expect(await seqs()).toEqual([3]);
  });
});
