import { execFile } from "node:child_process";
import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { formatTimestamp, messageFileName, serializeMessage } from "../../src/core/message.js";
import { FsStore } from "../../src/store/fs/index.js";
import { checksum } from "../../src/store/fs/tail-hint.js";
import { referenceCommand, referenceSkipReason } from "../helpers/reference.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir } from "../helpers/tmp.js";

const run = promisify(execFile);
const SIZE = 600;

/**
 * A fresh process (a store without file watches, given the user's folder of tail hints) takes a
 * large channel's newest messages from the hint a listing kept, not from a listing of its own;
 * a hint that is stale, torn, edited or planted costs a listing, never a wrong answer.
 */
describe("the tail hint of a watch-less folder store", () => {
  const dirs: Array<{ dir: string; cleanup: () => void }> = [];
  const stores: FsStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const d of dirs.splice(0)) d.cleanup();
  });

  /** A root with a channel of SIZE messages, the last one to bob, bob's cursor just before it. */
  async function setUp(): Promise<{ root: string; hints: string; dir: string }> {
    const root = tempDir();
    const hints = tempDir();
    dirs.push(root, hints);
    const store = new FsStore(root.dir, { watch: false, recordPresence: false });
    await store.init("ch");
    await store.close();
    const dir = join(root.dir, "ch");
    const ts = formatTimestamp();
    for (let seq = 1; seq <= SIZE; seq++) {
      const to = seq === SIZE ? "bob" : "nobody";
      const text = serializeMessage({
        seq,
        from: "filler",
        to,
        channel: "ch",
        ts,
        title: "filler",
        body: `m${seq}`,
      });
      writeFileSync(join(dir, messageFileName(seq, "f", "f")), text);
    }
    writeFileSync(join(dir, ".seq"), String(SIZE));
    writeFileSync(join(dir, ".cursors", "bob.txt"), String(SIZE - 1));
    return { root: root.dir, hints: hints.dir, dir };
  }

  const fresh = (root: string, hints: string) => {
    const store = new FsStore(root, { watch: false, recordPresence: false, tailHintDir: hints });
    stores.push(store);
    return store;
  };

  /** Whether the store's index of `ch` holds only a tail (it was taken from a hint). */
  const fromHint = (store: FsStore) =>
    !(store as unknown as { states: Map<string, { index: { knowsAll(): boolean } }> }).states
      .get("ch")!
      .index.knowsAll();

  /** Lists the channel in fresh stores until one keeps a hint (the folder must have settled). */
  async function hinted(root: string, hints: string): Promise<string> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      await fresh(root, hints).peek("ch", 1);
      const files = readdirSync(hints).filter((n) => n.startsWith("tail-"));
      if (files.length > 0) return join(hints, files[0]!);
      if (Date.now() > deadline) throw new Error("no hint was kept");
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** What a fresh process answers: bob's unread, the last three, the count, the next number. */
  async function answers(root: string, hints: string) {
    const unread = (await fresh(root, hints).read("ch", { as: "bob", peek: true })).messages;
    const last = (await fresh(root, hints).peek("ch", 3)).map((m) => m.seq);
    const [info] = await fresh(root, hints).channels();
    return { unread: unread.map((m) => m.seq), last, count: info?.messages, top: info?.lastSeq };
  }

  it("answers read, peek and the count from the hint, without listing the folder", async () => {
    const { root, hints } = await setUp();
    await hinted(root, hints);
    const store = fresh(root, hints);
    expect((await store.read("ch", { as: "bob", peek: true })).messages.map((m) => m.body)).toEqual(
      [`m${SIZE}`],
    );
    expect(fromHint(store)).toBe(true);
    expect(await answers(root, hints)).toEqual({
      unread: [SIZE],
      last: [SIZE - 2, SIZE - 1, SIZE],
      count: SIZE,
      top: SIZE,
    });
    // Older messages than the tail holds: the folder is listed after all.
    const all = await fresh(root, hints).peek("ch", SIZE);
    expect(all.map((m) => m.seq)).toEqual(Array.from({ length: SIZE }, (_, i) => i + 1));
  });

  it("sees what chat.py wrote since: a changed folder is listed, and the number is not reused", async () => {
    const { root, hints, dir } = await setUp();
    const hint = await hinted(root, hints);
    const before = statSync(dir);
    await referencePost(dir, { from: "carol", to: "bob", title: "hi", body: "from chat.py" });
    // The folder's mtime set back to what the hint was kept under: its ctime still moved.
    utimesSync(dir, before.atime, before.mtime);
    expect(readFileSync(hint, "utf8")).toContain(`"${messageFileName(SIZE, "f", "f")}"`);
    expect(await answers(root, hints)).toEqual({
      unread: [SIZE, SIZE + 1],
      last: [SIZE - 1, SIZE, SIZE + 1],
      count: SIZE + 1,
      top: SIZE + 1,
    });
    const { seq } = await fresh(root, hints).post("ch", { from: "alice", body: "next" });
    expect(seq).toBe(SIZE + 2);
  });

  describe("a hint that fails a check is not believed", () => {
    const cases: Array<[string, (raw: string, dir: string) => string]> = [
      ["garbage", () => "not a hint"],
      ["truncated", (raw) => raw.slice(0, Math.floor(raw.length / 2))],
      [
        "edited, its checksum left",
        (raw) =>
          raw.replace(messageFileName(SIZE - 1, "f", "f"), messageFileName(SIZE - 2, "f", "f")),
      ],
      [
        "hiding the newest message, checksum made to match",
        (raw) => resum(raw, (d) => ({ ...d, names: d.names.slice(0, -1), count: d.count - 1 })),
      ],
      [
        "naming a file that is not there as the newest",
        (raw) => resum(raw, (d) => ({ ...d, names: [...d.names, `${SIZE + 1}-ghost.md`] })),
      ],
      [
        "naming a path outside the channel",
        (raw) =>
          resum(raw, (d) => ({ ...d, names: [...d.names, `${SIZE + 1}-x/../../../etc.md`] })),
      ],
      ["kept for another folder", (raw, dir) => resum(raw, (d) => ({ ...d, dir: `${dir}-other` }))],
      [
        "claiming fewer messages before its tail than a complete one",
        (raw) => resum(raw, (d) => ({ ...d, complete: true })),
      ],
    ];
    for (const [what, change] of cases) {
      it(what, async () => {
        const { root, hints, dir } = await setUp();
        const hint = await hinted(root, hints);
        writeFileSync(hint, change(readFileSync(hint, "utf8"), dir));
        const store = fresh(root, hints);
        expect(
          (await store.read("ch", { as: "bob", peek: true })).messages.map((m) => m.seq),
        ).toEqual([SIZE]);
        expect(fromHint(store)).toBe(false);
        expect(await answers(root, hints)).toEqual({
          unread: [SIZE],
          last: [SIZE - 2, SIZE - 1, SIZE],
          count: SIZE,
          top: SIZE,
        });
      });
    }
  });

  it("is never taken from a folder others may write", async () => {
    const { root, hints } = await setUp();
    await hinted(root, hints);
    const { chmodSync } = await import("node:fs");
    chmodSync(hints, 0o777);
    const store = fresh(root, hints);
    expect((await store.read("ch", { as: "bob", peek: true })).messages.map((m) => m.seq)).toEqual([
      SIZE,
    ]);
    expect(fromHint(store)).toBe(false);
  });

  it("never hands one number to two of many fresh posters, chat.py among them", async () => {
    const { root, hints, dir } = await setUp();
    await hinted(root, hints);
    const posts: Array<Promise<number>> = [];
    for (let p = 0; p < 6; p++) {
      posts.push(
        (async () => {
          let n = 0;
          for (let i = 0; i < 10; i++) {
            await fresh(root, hints).post("ch", { from: `p${p}`, body: `${i}` });
            n++;
          }
          return n;
        })(),
      );
    }
    posts.push(
      (async () => {
        for (let i = 0; i < 5; i++) {
          await referencePost(dir, { from: "carol", title: `t${i}`, body: `${i}` });
        }
        return 5;
      })(),
    );
    await Promise.all(posts);
    const seqs = readdirSync(dir)
      .map((n) => /^(\d+)-.*\.md$/.exec(n)?.[1])
      .filter((s) => s !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: SIZE + 65 }, (_, i) => i + 1));
  });

  const reference = referenceCommand("0.7");
  it.skipIf(referenceSkipReason("0.7") !== undefined)(
    "sees the real chat.py 0.7's post between two of ours",
    async () => {
      const { root, hints } = await setUp();
      await hinted(root, hints);
      await fresh(root, hints).post("ch", { from: "alice", to: "bob", body: "ours" });
      const post = ["post", "ch", "--from", "carol", "--to", "bob", "--title", "t", "--body", "x"];
      await run(reference!, post, { env: { ...process.env, AGENT_CHAT_ROOT: root } });
      await fresh(root, hints).post("ch", { from: "alice", to: "bob", body: "ours again" });
      const unread = (await fresh(root, hints).read("ch", { as: "bob", peek: true })).messages;
      expect(unread.map((m) => [m.seq, m.from])).toEqual([
        [SIZE, "filler"],
        [SIZE + 1, "alice"],
        [SIZE + 2, "carol"],
        [SIZE + 3, "alice"],
      ]);
    },
  );
});

interface HintData {
  dir: string;
  names: string[];
  count: number;
  complete: boolean;
}

/** The hint changed by `edit`, with a checksum that matches (as a deliberate edit would). */
function resum(raw: string, edit: (data: HintData) => HintData): string {
  const text = JSON.stringify(edit(JSON.parse(raw.slice(raw.indexOf("\n") + 1)) as HintData));
  return `${checksum(text)}\n${text}`;
}
