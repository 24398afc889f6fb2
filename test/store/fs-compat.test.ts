import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir, writeOldFile } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: FsStore;
let dir: string;

beforeEach(async () => {
  tmp = tempDir();
  store = new FsStore(tmp.dir);
  await store.init("review", { members: ["alice", "bob"], topic: "schema v2" });
  dir = join(tmp.dir, "review");
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

async function code(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (e instanceof AgentChatError ? e.code : String(e)),
  );
}

describe("on disk exactly as the reference lays it out", () => {
  it("_meta.json: 2-space JSON with the reference's keys in order", () => {
    const text = readFileSync(join(dir, "_meta.json"), "utf8");
    expect(Object.keys(JSON.parse(text))).toEqual(["channel", "members", "topic", "created"]);
    expect(text).toMatch(
      /^\{\n {2}"channel": "review",\n {2}"members": \[\n {4}"alice",\n {4}"bob"\n {2}\],\n {2}"topic": "schema v2",\n {2}"created": "[^"]+"\n\}$/,
    );
  });

  it("message file name, frontmatter and cursor file (decimal, no newline)", async () => {
    await store.post("review", {
      from: "Alice",
      to: "bob",
      title: "Converge schema v0.2",
      body: "x",
    });
    expect(readdirSync(dir).filter((n) => n.endsWith(".md"))).toEqual([
      "0001-alice-converge-schema-v0-2.md",
    ]);
    const text = readFileSync(join(dir, "0001-alice-converge-schema-v0-2.md"), "utf8");
    expect(text).toMatch(
      /^---\nseq: 1\nfrom: Alice\nto: bob\nchannel: review\nts: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d\nstatus: discussion\ntitle: Converge schema v0\.2\n---\nx\n$/,
    );
    await store.read("review", { as: "Bob" });
    expect(readFileSync(join(dir, ".cursors", "bob.txt"), "utf8")).toBe("1");
  });

  it("reads messages the reference wrote, and cursors it left", async () => {
    await referencePost(dir, { from: "carol", title: "From chat.py", body: "hello", to: "[bob]" });
    mkdirSync(join(dir, ".cursors"), { recursive: true });
    const r = await store.read("review", { as: "bob" });
    expect(r.messages.map((m) => [m.seq, m.from, m.body])).toEqual([[1, "carol", "hello"]]);
    writeFileSync(join(dir, ".cursors", "dave.txt"), "1");
    expect(await store.cursor("review", "dave")).toBe(1);
  });
});

describe("posting beside the reference chat.py", () => {
  it("never reuses a number the reference took (it does not update our high-water mark)", async () => {
    await store.post("review", { from: "alice", body: "ours 1" });
    await referencePost(dir, { from: "carol", title: "theirs", body: "theirs 2" });
    await referencePost(dir, { from: "carol", title: "theirs", body: "theirs 3" });
    const r = await store.post("review", { from: "alice", body: "ours 4" });
    expect(r.seq).toBe(4);
    // …and the reference, computing max(file names) + 1, continues after ours.
    expect(await referencePost(dir, { from: "carol", title: "t", body: "5" })).toBe(5);
    const seqs = (await store.read("review", { as: "zed", all: true })).messages.map((m) => m.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
  });

  it("never re-issues the number of a deleted newest message (defect 7)", async () => {
    await store.post("review", { from: "alice", body: "1" });
    const { file } = await store.post("review", { from: "alice", body: "2" });
    unlinkSync(join(dir, file));
    const other = new FsStore(tmp.dir);
    expect((await other.post("review", { from: "alice", body: "3" })).seq).toBe(3);
    await other.close();
  });

  it("never delivers a file that the reference is still writing in place", async () => {
    await store.post("review", { from: "alice", body: "before" });
    const seen: number[][] = [];
    await referencePost(
      dir,
      { from: "carol", title: "slow", body: "written slowly" },
      {
        pauseMidWrite: async () => {
          const r = await store.read("review", { as: "bob" });
          seen.push(
            r.messages.map((m) => m.seq),
            [r.cursor],
          );
        },
      },
    );
    // While the reference held the lock with a half-written #2, bob got #1 and his cursor
    // stopped before #2 …
    expect(seen).toEqual([[1], [1]]);
    // … so once it is complete he gets it.
    const r = await store.read("review", { as: "bob" });
    expect(r.messages.map((m) => m.body)).toEqual(["written slowly"]);
  });
});

describe("files dropped in by hand", () => {
  it("a _meta.json edited in place (same size, mtime set back) or replaced is obeyed by a store that read it before", async () => {
    // A clock past the moment the file was written: the store keeps the text it read.
    const later = new FsStore(tmp.dir, { now: () => Date.now() + 60_000 });
    const meta = join(dir, "_meta.json");
    try {
      expect((await later.roster("review")).topic).toBe("schema v2");
      // touch(1) copies the times to the nanosecond (utimes from Node would round them).
      const stamp = join(tmp.dir, "times");
      writeFileSync(stamp, "");
      execFileSync("touch", ["-r", meta, stamp]);
      const text = readFileSync(meta, "utf8");
      writeFileSync(meta, text.replace("schema v2", "schema v3"));
      execFileSync("touch", ["-r", stamp, meta]);
      expect(statSync(meta, { bigint: true }).mtimeNs).toBe(
        statSync(stamp, { bigint: true }).mtimeNs,
      );
      expect((await later.roster("review")).topic).toBe("schema v3");
      writeFileSync(join(dir, ".meta.new"), text.replace("schema v2", "schema v4"));
      execFileSync("touch", ["-r", stamp, join(dir, ".meta.new")]);
      renameSync(join(dir, ".meta.new"), meta);
      expect((await later.roster("review")).topic).toBe("schema v4");
      writeFileSync(meta, readFileSync(meta, "utf8").replace('"alice"', '"carol"'));
      expect((await later.roster("review")).members).toEqual(["carol", "bob"]);
    } finally {
      await later.close();
    }
  });

  it("a file being written in place by hand is delivered once it is complete, not skipped", async () => {
    const path = join(dir, "0001-human-note.md");
    writeFileSync(path, "---\nseq: 1\nfrom: human\nto: all\ntitle: by hand\n");
    const early = await store.read("review", { as: "bob" });
    expect(early).toMatchObject({ messages: [], cursor: 0 });
    expect(early.warnings).toEqual([
      "0001-human-note.md does not parse yet and may still be being written: it is waited for " +
        "2 s after it changed, so it and the messages after it are left for the next read",
    ]);
    writeFileSync(path, "---\nseq: 1\nfrom: human\nto: all\ntitle: by hand\n---\nfinished\n");
    const done = await store.read("review", { as: "bob" });
    expect(done.messages.map((m) => m.body)).toEqual(["finished"]);
  });

  it("a read that stops before a file just written says so: a message waits behind it", async () => {
    await store.post("review", { from: "alice", body: "first" });
    expect((await store.read("review", { as: "bob" })).messages).toHaveLength(1);
    writeFileSync(join(dir, "0002-human-draft.md"), "---\nseq: 2\nfrom: human\n");
    expect((await store.post("review", { from: "alice", to: "bob", body: "for bob" })).seq).toBe(3);
    const held = await store.read("review", { as: "bob" });
    expect(held).toMatchObject({ messages: [], cursor: 1 });
    expect(held.warnings).toEqual([
      expect.stringMatching(/^0002-human-draft\.md does not parse yet/),
    ]);
    // Once the hold is over the file is reported and passed, and #3 is delivered.
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(join(dir, "0002-human-draft.md"), old, old);
    const after = await store.read("review", { as: "bob" });
    expect(after.messages.map((m) => m.body)).toEqual(["for bob"]);
  });

  it("a stray 2024-notes.md never moves the sequence and is reported once (defect 3)", async () => {
    writeOldFile(join(dir, "2024-notes.md"), "# my notes\n");
    await store.post("review", { from: "alice", body: "hi" });
    const first = await store.read("review", { as: "bob", all: true, peek: true });
    expect(first.messages.map((m) => m.seq)).toEqual([1]);
    expect(first.warnings).toEqual(["2024-notes.md: no frontmatter, skipped"]);
    const again = await store.read("review", { as: "bob", all: true, peek: true });
    expect(again.warnings).toEqual([]);
    expect((await store.post("review", { from: "alice", body: "next" })).seq).toBe(2);
  });

  it.each([
    ["unclosed frontmatter", "---\nseq: 5\nfrom: eve\nto: all\ntitle: x\nno end\n"],
    ["no frontmatter", "plain text file\n"],
    ["empty", ""],
  ])("a file with %s is never delivered (defect 2)", async (_what, text) => {
    writeOldFile(join(dir, "0005-eve-x.md"), text);
    const r = await store.read("review", { as: "bob" });
    expect(r.messages).toEqual([]);
    expect(r.warnings).toHaveLength(1);
    expect((await store.post("review", { from: "alice", body: "a" })).seq).toBe(1);
  });

  it("a file that is not UTF-8 or is binary is reported, not delivered", async () => {
    writeOldFile(join(dir, "0001-x-bad.md"), Buffer.from([0x2d, 0x2d, 0x2d, 0x0a, 0xff, 0xfe]));
    writeOldFile(join(dir, "0002-x-bin.md"), Buffer.from("---\nfrom: x\n---\n\0\0\u0001"));
    const r = await store.read("review", { as: "bob" });
    expect(r.messages).toEqual([]);
    expect(r.warnings.sort()).toEqual([
      "0001-x-bad.md: not UTF-8, skipped",
      "0002-x-bin.md: binary content, skipped",
    ]);
  });

  it("a well-formed message dropped in by hand is delivered and moves the sequence", async () => {
    writeFileSync(
      join(dir, "0007-human-note.md"),
      "---\r\nseq: 7\r\nfrom: human\r\nto: bob\r\ntitle: by hand\r\n---\r\nhello\r\n",
    );
    const r = await store.read("review", { as: "bob" });
    expect(r.messages.map((m) => [m.seq, m.from, m.body])).toEqual([[7, "human", "hello"]]);
    expect((await store.post("review", { from: "alice", body: "a" })).seq).toBe(8);
  });

  it("never overwrites a malformed file that has the name of the next message", async () => {
    writeFileSync(join(dir, "0001-alice-hello.md"), "garbage\n");
    const r = await store.post("review", { from: "alice", title: "hello", body: "real" });
    expect(r.seq).toBe(2);
    expect(readFileSync(join(dir, "0001-alice-hello.md"), "utf8")).toBe("garbage\n");
  });

  it("never reads through a symlink planted in a channel", async () => {
    const outside = join(tmp.dir, "secret.md");
    writeFileSync(outside, "---\nfrom: root\nto: all\ntitle: secret\n---\ntop secret\n");
    symlinkSync(outside, join(dir, "0001-root-secret.md"));
    const r = await store.read("review", { as: "bob" });
    expect(r.messages).toEqual([]);
  });

  it("never reads or writes through a channel folder that is a symlink out of the root", async () => {
    const outside = tempDir();
    try {
      writeFileSync(join(outside.dir, "_meta.json"), '{"channel":"evil","members":[]}');
      writeFileSync(
        join(outside.dir, "0001-eve-secret.md"),
        "---\nseq: 1\nfrom: eve\n---\nsecret\n",
      );
      symlinkSync(outside.dir, join(tmp.dir, "evil"));
      expect(await code(store.post("evil", { from: "alice", body: "x" }))).toBe("UNSAFE_FILE");
      expect(await code(store.read("evil", { as: "bob" }))).toBe("UNSAFE_FILE");
      expect(await code(store.roster("evil"))).toBe("UNSAFE_FILE");
      expect((await store.channels()).map((c) => c.name)).not.toContain("evil");
      expect(readdirSync(outside.dir).sort()).toEqual(["0001-eve-secret.md", "_meta.json"]);
    } finally {
      outside.cleanup();
    }
  });

  it("a corrupt _meta.json is a clear CORRUPT_META error", async () => {
    writeFileSync(join(dir, "_meta.json"), "{not json");
    const err = await store.roster("review").catch((e: AgentChatError) => e);
    expect(err).toBeInstanceOf(AgentChatError);
    expect((err as AgentChatError).code).toBe("CORRUPT_META");
    expect((err as AgentChatError).message).toMatch(/review: _meta.json is not valid JSON/);
  });

  it("a read-only channel folder gives a clear error and leaves nothing half-written", async () => {
    // Permission bits do not stop root (CI runs as root); the immutable flag does.
    const asRoot = process.getuid?.() === 0;
    const lock = (on: boolean) =>
      asRoot ? execFileSync("chattr", [on ? "+i" : "-i", dir]) : chmodSync(dir, on ? 0o555 : 0o755);
    lock(true);
    try {
      const err = await store.post("review", { from: "a", body: "x" }).catch((e) => e);
      expect(err).toBeInstanceOf(AgentChatError);
      expect((err as AgentChatError).code).toBe("IO_ERROR");
      expect((err as AgentChatError).message).toMatch(
        /cannot write message to .*review: E(PERM|ACCES)/,
      );
    } finally {
      lock(false);
    }
    // What init made (`_meta.json`, `.cursors/`), and nothing of the refused post.
    expect(readdirSync(dir).sort()).toEqual([".cursors", "_meta.json"]);
  });

  it("init is exclusive and never leaves a half-written _meta.json (defect 6)", async () => {
    expect(await code(store.init("review"))).toBe("CHANNEL_EXISTS");
    expect(existsSync(join(dir, "_meta.json"))).toBe(true);
    expect(readdirSync(dir).filter((n) => n.startsWith(".tmp-"))).toEqual([]);
  });
});
