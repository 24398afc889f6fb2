import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { serializeMessage } from "../../src/core/message.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { referencePost } from "../helpers/reference-writer.js";
import { agePresence, tempDir, writeOldFile } from "../helpers/tmp.js";

/** Archive, prune, and threads and search over the files of a folder root (docs/search.md). */
let tmp: ReturnType<typeof tempDir>;
let store: FsStore;
const opened: FsStore[] = [];

function open(): FsStore {
  const s = new FsStore(tmp.dir);
  opened.push(s);
  return s;
}

beforeEach(async () => {
  tmp = tempDir();
  store = open();
  await store.init("ch");
});

afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  tmp.cleanup();
});

const dir = () => join(tmp.dir, "ch");
const hotSeqs = () =>
  readdirSync(dir())
    .filter((n) => /^\d+-.*\.md$/.test(n))
    .map((n) => Number.parseInt(n, 10))
    .sort((a, b) => a - b);
function archivedSeqs(): number[] {
  const root = join(dir(), "_archive");
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .flatMap((month) => readdirSync(join(root, month)))
    .map((n) => Number.parseInt(n, 10))
    .sort((a, b) => a - b);
}

async function postMany(n: number, replyTo?: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await store.post("ch", {
      from: i % 2 ? "bob" : "alice",
      title: `note ${i}`,
      body: `body ${i}`,
      ...(replyTo ? { replyTo } : {}),
    });
  }
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentChatError);
  expect((err as AgentChatError).code).toBe(code);
}

describe("archive", () => {
  it("moves the messages below --before into _archive/<month>/, keeping the newest", async () => {
    await postMany(5);
    const month = new Date().toISOString().slice(0, 7);
    const dry = await store.archive("ch", { before: 4, dryRun: true });
    expect(dry).toMatchObject({ moved: [1, 2, 3], dryRun: true, kept: 5 });
    expect(hotSeqs()).toEqual([1, 2, 3, 4, 5]);
    const done = await store.archive("ch", { before: 4 });
    expect(done).toMatchObject({ moved: [1, 2, 3], folders: [`_archive/${month}`] });
    expect(hotSeqs()).toEqual([4, 5]);
    expect(archivedSeqs()).toEqual([1, 2, 3]);
    // Asked for everything, the newest stays: chat.py numbers on from the largest file name.
    expect((await store.archive("ch", { before: 1_000 })).moved).toEqual([4]);
    expect(hotSeqs()).toEqual([5]);
  });

  it("--older-than picks by the message's time", async () => {
    await postMany(3);
    const old = serializeMessage({
      seq: 4,
      from: "carol",
      channel: "ch",
      ts: "2020-01-02T03:04:05+00:00",
      title: "ancient",
      body: "from 2020",
    });
    writeOldFile(join(dir(), "0004-carol-ancient.md"), old);
    await store.post("ch", { from: "alice", title: "last", body: "newest" });
    const result = await store.archive("ch", { olderThanMs: 30 * 86_400_000 });
    expect(result).toMatchObject({ moved: [4], folders: ["_archive/2020-01"] });
    expect(hotSeqs()).toEqual([1, 2, 3, 5]);
  });

  it("refuses a call that says neither or both of --before and --older-than", async () => {
    await expectCode(store.archive("ch", {}), "INVALID_ARGUMENT");
    await expectCode(store.archive("ch", { before: 2, olderThanMs: 1 }), "INVALID_ARGUMENT");
    await expectCode(store.archive("nope", { before: 2 }), "CHANNEL_NOT_FOUND");
  });

  it("numbering goes on: ours and the reference's next number agree after archiving", async () => {
    await postMany(10);
    await store.archive("ch", { before: 100 });
    expect(hotSeqs()).toEqual([10]);
    expect(readFileSync(join(dir(), ".seq"), "utf8")).toBe("10");
    // The reference counts file names in the channel folder only: _archive is not among them.
    expect(await referencePost(dir(), { from: "py", title: "after", body: "x" })).toBe(11);
    expect((await open().post("ch", { from: "ts", body: "y" })).seq).toBe(12);
    expect(await referencePost(dir(), { from: "py", title: "again", body: "z" })).toBe(13);
  });

  it("cursors stay valid: no reader gets a message twice, and new ones arrive", async () => {
    await postMany(6);
    await store.read("ch", { as: "carol" }); // cursor 6
    await store.archive("ch", { before: 6 });
    expect((await store.read("ch", { as: "carol" })).messages).toEqual([]);
    await store.post("ch", { from: "alice", body: "seven" });
    expect((await open().read("ch", { as: "carol" })).messages.map((m) => m.seq)).toEqual([7]);
  });

  it("while chat.py and ours post into the channel: nothing lost, no number twice", async () => {
    await postMany(40);
    const other = open();
    const posts = Promise.all([
      (async () => {
        for (let i = 0; i < 20; i++) await other.post("ch", { from: "ts", body: `t${i}` });
      })(),
      (async () => {
        for (let i = 0; i < 20; i++) {
          await referencePost(dir(), { from: "py", title: `p${i}`, body: "x" });
        }
      })(),
    ]);
    const archived = await store.archive("ch", { before: 1_000 });
    await posts;
    const all = [...hotSeqs(), ...archivedSeqs()].sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    expect(archivedSeqs()).toEqual(archived.moved);
  });

  it("peek, search and thread reach archived messages with archived: true", async () => {
    await store.post("ch", { from: "alice", title: "Root", body: "the zebra question" });
    await store.post("ch", { from: "bob", title: "Re", body: "zebra answer", replyTo: 1 });
    await postMany(3, 2);
    await store.archive("ch", { before: 4 });
    expect((await store.peek("ch", 5)).map((m) => m.seq)).toEqual([4, 5]);
    expect((await store.peek("ch", 4, { archived: true })).map((m) => m.seq)).toEqual([2, 3, 4, 5]);
    expect((await store.search("zebra")).total).toBe(0);
    const found = await store.search("zebra", { archived: true });
    expect(found.hits.map((h) => [h.seq, h.archived])).toEqual([
      [2, true],
      [1, true],
    ]);
    await expectCode(store.thread("ch", 1), "NOT_FOUND");
    expect((await store.thread("ch", 5)).message.seq).toBe(5); // its parent is archived
    const whole = await store.thread("ch", 5, { archived: true });
    expect(whole.message.seq).toBe(1);
    expect(whole.replies[0]!.replies.map((r) => r.message.seq)).toEqual([3, 4, 5]);
  });

  it("a store that indexed the channel no longer finds what another process archived", async () => {
    await postMany(4);
    const daemon = open();
    expect((await daemon.search("note")).total).toBe(4);
    expect((await daemon.search("note")).total).toBe(4); // the index now
    await store.archive("ch", { before: 3 });
    expect((await daemon.search("note")).hits.map((h) => h.seq)).toEqual([4, 3]);
  });

  it("never follows a link planted as _archive", async () => {
    await postMany(3);
    const outside = join(tmp.dir, "outside");
    mkdirSync(outside);
    symlinkSync(outside, join(dir(), "_archive"));
    await expectCode(store.archive("ch", { before: 3 }), "UNSAFE_FILE");
    expect(readdirSync(outside)).toEqual([]);
    expect(hotSeqs()).toEqual([1, 2, 3]);
    expect((await store.peek("ch", 9, { archived: true })).map((m) => m.seq)).toEqual([1, 2, 3]);
  });
});

describe("threads over untrusted files", () => {
  function plant(seq: number, replyTo: number | undefined): void {
    const text = serializeMessage({
      seq,
      from: "mallory",
      channel: "ch",
      ts: "2026-11-30T10:00:00+00:00",
      title: `m${seq}`,
      body: "x",
      ...(replyTo === undefined ? {} : { replyTo }),
    });
    writeOldFile(join(dir(), `${String(seq).padStart(4, "0")}-mallory-m${seq}.md`), text);
  }

  it("a reply_to cycle, a reply to itself and a missing parent end the walk", async () => {
    plant(1, 2);
    plant(2, 1);
    plant(3, 3);
    plant(4, 99);
    plant(5, 4);
    const started = Date.now();
    const cycle = await store.thread("ch", 1);
    expect([cycle.message.seq, cycle.replies.map((r) => r.message.seq)]).toEqual([2, [1]]);
    expect((await store.thread("ch", 3)).replies).toEqual([]);
    const orphan = await store.thread("ch", 5);
    expect([orphan.message.seq, orphan.replies.map((r) => r.message.seq)]).toEqual([4, [5]]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a chain hundreds deep comes back bounded in depth, every message once", async () => {
    plant(1, undefined);
    for (let seq = 2; seq <= 500; seq++) plant(seq, seq - 1);
    const tree = await store.thread("ch", 500);
    let depth = 0;
    let node = tree;
    while (node.replies.length === 1) {
      node = node.replies[0]!;
      depth++;
    }
    expect(depth).toBeLessThanOrEqual(64);
    expect(node.replies.length + depth + 1).toBe(500);
    expect(JSON.stringify(tree).length).toBeGreaterThan(0);
  });
});

describe("prune", () => {
  it("lists, then removes, the cursors of agents not seen for longer than asked", async () => {
    await postMany(2);
    await store.read("ch", { as: "gone" });
    await store.read("ch", { as: "here" });
    const past = Date.now() / 1000 - 40 * 86_400;
    utimesSync(join(dir(), ".cursors", "gone.txt"), past, past);
    agePresence(tmp.dir, "gone", 40 * 86_400_000); // not seen since: nothing keeps its cursor
    const dry = await store.prune({ olderThanMs: 30 * 86_400_000, dryRun: true });
    expect(dry.removed.map((r) => [r.channel, r.agent])).toEqual([["ch", "gone"]]);
    expect(existsSync(join(dir(), ".cursors", "gone.txt"))).toBe(true);
    const done = await store.prune({ olderThanMs: 30 * 86_400_000 });
    expect(done.removed).toMatchObject([{ agent: "gone", files: [".cursors/gone.txt"] }]);
    expect(readdirSync(join(dir(), ".cursors"))).toEqual(["here.txt"]);
  });

  it("never follows a link among the cursors", async () => {
    mkdirSync(join(dir(), ".cursors"), { recursive: true });
    const victim = join(tmp.dir, "victim.txt");
    writeFileSync(victim, "keep");
    symlinkSync(victim, join(dir(), ".cursors", "evil.txt"));
    const result = await store.prune({ olderThanMs: 0 });
    expect(result.removed).toEqual([]);
    expect(readFileSync(victim, "utf8")).toBe("keep");
  });
});
