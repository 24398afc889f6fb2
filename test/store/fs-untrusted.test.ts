import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir, writeOldFile } from "../helpers/tmp.js";

/**
 * docs/design.md §10: every entry of a root is someone else's input. Each case here is a finding of
 * the untrusted-folder review, tried on the folder store as an attacker who commits to the
 * repository would: nothing outside the root is read, written or removed, nothing hangs, and
 * nothing acknowledged is lost or delivered twice.
 *
 * Layout: <tmp>/outside (the sentinel tree: a secret, a folder of the user's files) beside
 * <tmp>/work/root/<channel>, so that `../..` from a channel is <tmp>/work, and `../../..` is <tmp>.
 */
let tmp: ReturnType<typeof tempDir>;
let outside: string;
let root: string;
let store: FsStore;
const SECRET = "TOKEN=hunter2-do-not-leak";

beforeEach(async () => {
  tmp = tempDir();
  outside = join(tmp.dir, "outside");
  mkdirSync(join(outside, "photos"), { recursive: true });
  writeFileSync(join(outside, "secret.env"), SECRET);
  writeFileSync(join(outside, "photos", "cat.jpg"), "meow");
  writeFileSync(join(outside, "count.txt"), "5");
  root = join(tmp.dir, "work", "root");
  mkdirSync(root, { recursive: true });
  writeFileSync(join(tmp.dir, "work", "notes.txt"), "the user's work");
  store = new FsStore(root, { timeoutMs: 1500 });
  await store.init("ch", { members: [] });
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

/** Paths, kinds, sizes and contents of everything under `dir` (links by their target). */
function fingerprint(dir: string, skip?: string): string {
  const hash = createHash("sha256");
  const walk = (path: string) => {
    for (const name of readdirSync(path).sort()) {
      const p = join(path, name);
      if (p === skip) continue;
      const st = lstatSync(p);
      hash.update(`${p}:${st.mode}:${st.size}\n`);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) hash.update(readFileSync(p));
    }
  };
  walk(dir);
  return hash.digest("hex");
}

/** Everything but the root: the sentinel tree and the root's parent folder. */
const sentinel = () => fingerprint(tmp.dir, root);

async function code(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    if (err instanceof AgentChatError) return err.code;
    throw err;
  }
}

/** Settles `p` or fails after `ms`: a hang is a failure, not a test timeout. */
async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function ageLink(path: string, seconds: number): void {
  const t = Date.now() / 1000 - seconds;
  lutimesSync(path, t, t);
}

const chDir = () => join(root, "ch");

describe("a planted _seq.lock never makes a post remove or write anything outside the root", () => {
  const targets = [
    ["a relative link to ../..", "../.."],
    ["a relative link to the sentinel", "../../../outside"],
    ["an absolute link to the sentinel", () => outside],
    ["a link to a file outside", () => join(outside, "secret.env")],
  ] as const;
  for (const [what, target] of targets) {
    it(`${what}, older than 30 s: post and claim succeed and the target is intact`, async () => {
      const before = sentinel();
      const lock = join(chDir(), "_seq.lock");
      symlinkSync(typeof target === "string" ? target : target(), lock);
      ageLink(lock, 60);
      await store.addTask("ch", { id: "1", title: "t", from: "alice" }).catch(() => {});
      expect((await store.post("ch", { from: "alice", body: "hello" })).seq).toBe(1);
      expect((await store.claim("ch", "1", "bob")).holder).toBe("bob");
      expect(sentinel()).toBe(before);
      expect(readdirSync(chDir()).filter((n) => n.includes("lock"))).toEqual([]);
    });
  }

  it("a link that poses as our owner but whose owner folder is a link out: nothing outside changes", async () => {
    const before = sentinel();
    const owner = `.seq.lock.owner.1.abc.${hostname()}`;
    symlinkSync("../..", join(chDir(), owner));
    symlinkSync(owner, join(chDir(), "_seq.lock"));
    ageLink(join(chDir(), "_seq.lock"), 60);
    expect((await store.post("ch", { from: "alice", body: "hello" })).seq).toBe(1);
    await store.cleanLeftovers("ch");
    expect(sentinel()).toBe(before);
  });

  it("a fresh foreign _seq.lock (a file) is respected like any lock: a clear LOCK_TIMEOUT", async () => {
    writeFileSync(join(chDir(), "_seq.lock"), "x");
    expect(await code(store.post("ch", { from: "alice", body: "x" }))).toBe("LOCK_TIMEOUT");
  });
});

describe("a planted lock never blocks a channel for good", () => {
  it("a reference lock folder committed with a steal/ inside, hours old: taken over", async () => {
    mkdirSync(join(chDir(), "_seq.lock", "steal"), { recursive: true });
    writeFileSync(join(chDir(), "_seq.lock", "steal", "x"), "x");
    ageLink(join(chDir(), "_seq.lock"), 7200);
    expect((await store.post("ch", { from: "alice", body: "hello" })).seq).toBe(1);
  });

  it("a lock dated in the future is stale, not held for ever", async () => {
    symlinkSync("nowhere", join(chDir(), "_seq.lock"));
    ageLink(join(chDir(), "_seq.lock"), -3600 * 24 * 365);
    expect((await store.post("ch", { from: "alice", body: "hello" })).seq).toBe(1);
  });
});

describe("files planted under our own names are replaced, never written through", () => {
  it("a folder planted as .seq: the post still succeeds once, never twice", async () => {
    mkdirSync(join(chDir(), ".seq", "x"), { recursive: true });
    writeFileSync(join(chDir(), ".seq", "x", "keep"), "keep");
    expect((await store.post("ch", { from: "alice", title: "hi", body: "one" })).seq).toBe(1);
    expect((await store.post("ch", { from: "alice", title: "hi", body: "two" })).seq).toBe(2);
    expect(readdirSync(chDir()).filter((n) => n.endsWith(".md"))).toEqual([
      "0001-alice-hi.md",
      "0002-alice-hi.md",
    ]);
  });

  it(".seq as a symbolic link to a file outside", async () => {
    symlinkSync(join(outside, "count.txt"), join(chDir(), ".seq"));
    const before = sentinel();
    await store.post("ch", { from: "alice", body: "one" });
    await store.post("ch", { from: "alice", body: "two" });
    expect(sentinel()).toBe(before);
    expect(readFileSync(join(chDir(), ".seq"), "utf8")).toBe("2");
  });

  it(".seq as a hard link to a file outside: neither read nor written", async () => {
    linkSync(join(outside, "count.txt"), join(chDir(), ".seq"));
    const before = sentinel();
    expect((await store.post("ch", { from: "alice", body: "one" })).seq).toBe(1);
    expect(sentinel()).toBe(before);
    expect(readFileSync(join(outside, "count.txt"), "utf8")).toBe("5");
  });

  it("a cursor file that is a link: never read through, and replaced when the cursor moves", async () => {
    mkdirSync(join(chDir(), ".cursors"), { recursive: true });
    symlinkSync(join(outside, "count.txt"), join(chDir(), ".cursors", "bob.txt"));
    await store.post("ch", { from: "alice", body: "one" });
    expect(await store.cursor("ch", "bob")).toBe(0);
    const before = sentinel();
    expect((await store.read("ch", { as: "bob" })).messages.map((m) => m.seq)).toEqual([1]);
    expect(sentinel()).toBe(before);
    expect(lstatSync(join(chDir(), ".cursors", "bob.txt")).isFile()).toBe(true);
  });

  it("a .cursors folder that is a link: cursors are neither read nor written through it", async () => {
    mkdirSync(join(outside, "cursors"));
    writeFileSync(join(outside, "cursors", "bob.txt"), "7");
    rmdirSync(join(chDir(), ".cursors")); // what init made, replaced by the link
    symlinkSync(join(outside, "cursors"), join(chDir(), ".cursors"));
    await store.post("ch", { from: "alice", body: "one" });
    expect(await store.cursor("ch", "bob")).toBe(0);
    const before = sentinel();
    expect(await code(store.read("ch", { as: "bob" }))).toBe("UNSAFE_FILE");
    expect(sentinel()).toBe(before);
  });
});

describe("one channel whose cursor cannot be saved never costs another its messages", () => {
  it("a wait over two channels, one with .cursors planted as a file: the other's message is delivered", async () => {
    await store.init("zzz");
    await store.post("ch", { from: "alice", body: "important" });
    await store.post("zzz", { from: "alice", body: "hi" });
    rmdirSync(join(root, "zzz", ".cursors"));
    writeFileSync(join(root, "zzz", ".cursors"), "");
    const woke = await within(3000, store.wait(["ch", "zzz"], { as: "bob", timeoutMs: 2000 }));
    expect(woke.messages.map((m) => `${m.channel}#${m.seq}`)).toEqual(["ch#1"]);
    expect(woke.warnings.join()).toMatch(/zzz: .cursors is not a plain folder/);
    expect(await store.cursor("ch", "bob")).toBe(1);
    // Only the broken channel left: a clear error, and nothing moved.
    expect(await code(store.wait(["zzz"], { as: "bob", timeoutMs: 500 }))).toBe("UNSAFE_FILE");
  });
});

describe("nothing in a root can make an operation hang", () => {
  function fifo(path: string): void {
    execFileSync("mkfifo", [path]);
  }

  it("a FIFO named like a message: read, peek, post, wait and tasks finish", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    fifo(join(chDir(), "0002-eve-pipe.md"));
    const read = await within(3000, store.read("ch", { as: "bob" }));
    expect(read.messages.map((m) => m.seq)).toEqual([1]);
    expect(read.warnings.join()).toMatch(/0002-eve-pipe\.md: is not a regular file/);
    await within(3000, store.peek("ch", 5));
    expect((await within(3000, store.post("ch", { from: "alice", body: "three" }))).seq).toBe(3);
    const woke = await within(3000, store.wait(["ch"], { as: "bob", timeoutMs: 2000 }));
    expect(woke.messages.map((m) => m.seq)).toEqual([3]);
    await within(3000, store.tasks("ch"));
  });

  it("FIFOs as _meta.json, .seq, a cursor and a task marker: clear errors or safe defaults", async () => {
    await store.init("pipes");
    const dir = join(root, "pipes");
    fifo(join(dir, ".seq"));
    fifo(join(dir, "task-9.md"));
    mkdirSync(join(dir, ".cursors"), { recursive: true });
    fifo(join(dir, ".cursors", "bob.txt"));
    expect((await within(3000, store.post("pipes", { from: "a", body: "x" }))).seq).toBe(1);
    expect(await within(3000, store.tasks("pipes"))).toEqual([]);
    expect(await within(3000, store.cursor("pipes", "bob"))).toBe(0);
    await store.init("meta");
    const meta = join(root, "meta", "_meta.json");
    execFileSync("rm", [meta]);
    fifo(meta);
    expect(await within(3000, code(store.roster("meta")))).toBe("UNSAFE_FILE");
    expect((await within(3000, store.channels())).map((c) => c.name)).toEqual(["ch", "pipes"]);
  });
});

describe("numbers read from a root are sane", () => {
  it("a message file numbered near 2^53 is ignored with a warning; posts stay deliverable and distinct", async () => {
    writeOldFile(
      join(chDir(), "9007199254740991-eve-big.md"),
      "---\nseq: 9007199254740991\nfrom: eve\n---\nbig\n",
    );
    const a = await store.post("ch", { from: "alice", title: "same", body: "a" });
    const b = await store.post("ch", { from: "alice", title: "same", body: "b" });
    expect([a.seq, b.seq]).toEqual([1, 2]);
    const read = await store.read("ch", { as: "bob" });
    expect(read.messages.map((m) => m.body)).toEqual(["a", "b"]);
    expect(read.warnings.join()).toMatch(/9007199254740991-eve-big\.md: its number is beyond/);
  });

  it("one planted 999999999999-x.md uses nothing up: posting goes on after the real messages (issue 40, finding 10)", async () => {
    await store.post("ch", { from: "alice", title: "before", body: "before" });
    writeOldFile(
      join(chDir(), "999999999999-eve-x.md"),
      "---\nseq: 999999999999\nfrom: eve\n---\nplanted\n",
    );
    const seqs = [];
    for (const body of ["a", "b"]) seqs.push((await store.post("ch", { from: "alice", body })).seq);
    expect(seqs).toEqual([2, 3]);
    const read = await store.read("ch", { as: "bob" });
    expect(read.messages.map((m) => m.body)).toEqual(["before", "a", "b"]);
    expect(read.warnings.join()).toMatch(
      /999999999999-eve-x\.md: its number is more than 1000000 past the channel's last message \(#3\)/,
    );
    // A later post is read by a reader whose cursor stands at the last real message.
    await store.post("ch", { from: "alice", body: "c" });
    expect((await store.read("ch", { as: "bob" })).messages.map((m) => m.body)).toEqual(["c"]);
  });

  it("a planted .seq far past the last message uses nothing up either", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    writeFileSync(join(chDir(), ".seq"), "999999999999");
    expect((await store.post("ch", { from: "alice", body: "two" })).seq).toBe(2);
  });

  it("a .seq near 2^53 is ignored: posts get small, distinct numbers that readers deliver", async () => {
    writeFileSync(join(chDir(), ".seq"), "9007199254740990");
    const seqs = [];
    for (const body of ["a", "b", "c"]) {
      seqs.push((await store.post("ch", { from: "alice", title: "same", body })).seq);
    }
    expect(seqs).toEqual([1, 2, 3]);
    expect((await store.read("ch", { as: "bob" })).messages.map((m) => m.body)).toEqual([
      "a",
      "b",
      "c",
    ]);
  });

  it("a post never replaces a file that appeared under its final name", async () => {
    await store.post("ch", { from: "alice", title: "x", body: "one" });
    // Another writer's file at the next number, not yet known to this store's index.
    const other = new FsStore(root, { watch: false });
    await other.post("ch", { from: "alice", title: "x", body: "two" });
    await other.close();
    const third = await store.post("ch", { from: "alice", title: "x", body: "three" });
    expect(third.seq).toBe(3);
    const bodies = (await store.read("ch", { as: "bob" })).messages.map((m) => m.body);
    expect(bodies).toEqual(["one", "two", "three"]);
  });
});

describe("a malformed file never costs a message, and no message is returned twice", () => {
  it("a malformed file at the next number burns it: the post takes the next one", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    writeOldFile(join(chDir(), "0002-notes.md"), "---\nseq: 2\nunclosed\n");
    const r = await store.post("ch", { from: "alice", body: "three" });
    expect(r.seq).toBe(3);
    expect(readdirSync(chDir()).filter((n) => n.startsWith("0002"))).toEqual(["0002-notes.md"]);
  });

  it("a malformed file dated in the future never stalls the readers behind it", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    const bad = join(chDir(), "0002-x-y.md");
    writeFileSync(bad, "garbage\n");
    const future = Date.now() / 1000 + 3600 * 24 * 365;
    utimesSync(bad, future, future);
    await store.post("ch", { from: "alice", body: "three" });
    const read = await store.read("ch", { as: "bob" });
    expect(read.messages.map((m) => m.seq)).toEqual([1, 3]);
    expect(read.cursor).toBe(3);
  });

  it("a fresh malformed file beside a message of its number: three reads, each message once", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    // Dropped by another tool under our next name's number, a moment before our post.
    writeFileSync(join(chDir(), "0002-notes.md"), "---\nseq: 2\nunclosed\n");
    writeFileSync(
      join(chDir(), "0002-alice-two.md"),
      "---\nseq: 2\nfrom: alice\nto: all\nchannel: ch\nts: x\nstatus: discussion\ntitle: two\n---\ntwo\n",
    );
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      seen.push(...(await store.read("ch", { as: "bob" })).messages.map((m) => m.seq));
    }
    expect(seen).toEqual([1]);
  });
});

describe("a channel folder that becomes a link while a store is open (a git pull)", () => {
  it("is never followed by the next post, read or parked wait of a long-running store", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    expect((await store.read("ch", { as: "bob" })).messages.map((m) => m.seq)).toEqual([1]);
    const parked = store.wait(["ch"], { as: "bob", intervalMs: 50 });
    const moved = join(tmp.dir, "work", "old-ch");
    execFileSync("mv", [chDir(), moved]);
    mkdirSync(join(outside, "chan"));
    writeFileSync(join(outside, "chan", "_meta.json"), '{"channel":"ch","members":[]}');
    writeFileSync(
      join(outside, "chan", "0002-eve-x.md"),
      `---\nseq: 2\nfrom: eve\nto: all\nchannel: ch\nts: x\nstatus: s\ntitle: t\n---\n${SECRET}\n`,
    );
    symlinkSync(join(outside, "chan"), chDir());
    const before = sentinel();
    expect(await within(3000, code(parked))).toBe("UNSAFE_FILE");
    expect(await code(store.post("ch", { from: "alice", body: "two" }))).toBe("UNSAFE_FILE");
    expect(await code(store.read("ch", { as: "bob" }))).toBe("UNSAFE_FILE");
    expect(await code(store.wait(["ch"], { as: "bob", timeoutMs: 500 }))).toBe("UNSAFE_FILE");
    expect(sentinel()).toBe(before);
  });
});

describe("reads never follow a link out of the root", () => {
  it("a task marker that links to a secret is no task, and the secret never shows", async () => {
    symlinkSync(join(outside, "secret.env"), join(chDir(), "task-7.md"));
    const tasks = await store.tasks("ch");
    expect(JSON.stringify(tasks)).not.toContain("hunter2");
    expect(tasks).toEqual([]);
    expect(await code(store.claim("ch", "7", "bob"))).toBe("TASK_NOT_FOUND");
  });

  it("a _meta.json that links outside: a clear error that quotes nothing of the target", async () => {
    await store.init("leak");
    execFileSync("rm", [join(root, "leak", "_meta.json")]);
    symlinkSync(join(outside, "secret.env"), join(root, "leak", "_meta.json"));
    const err = await store.roster("leak").catch((e: AgentChatError) => e);
    expect((err as AgentChatError).code).toBe("UNSAFE_FILE");
    expect((err as AgentChatError).message).not.toContain("hunter2");
  });

  it("a corrupt _meta.json's error quotes none of its text", async () => {
    await store.init("bad");
    writeFileSync(join(root, "bad", "_meta.json"), `${SECRET} not json`);
    const err = await store.roster("bad").catch((e: AgentChatError) => e);
    expect((err as AgentChatError).code).toBe("CORRUPT_META");
    expect((err as AgentChatError).message).not.toContain("hunter2");
  });
});

describe("one bad channel never hides the others", () => {
  it("corrupt metas and a linked channel are left out of channels(), each reported once", async () => {
    await store.init("bad-json");
    writeFileSync(join(root, "bad-json", "_meta.json"), "{not json");
    await store.init("bad-members");
    writeFileSync(join(root, "bad-members", "_meta.json"), '{"channel":"x","members":5}');
    symlinkSync(outside, join(root, "linked"));
    await store.init("zz");
    const warnings: string[] = [];
    const onWarning = (w: string) => warnings.push(w);
    expect((await store.channels({ onWarning })).map((c) => c.name)).toEqual(["ch", "zz"]);
    expect((await store.channels({ onWarning })).map((c) => c.name)).toEqual(["ch", "zz"]);
    expect(warnings).toHaveLength(3);
    expect(warnings.join("\n")).toMatch(/bad-json.*skipped/);
    expect(warnings.join("\n")).toMatch(/linked.*symbolic link/);
  });

  it("init never lets extra keys replace the reference's (members: 5 would corrupt the meta)", async () => {
    await store.init("x", { members: ["alice"], extra: { members: 5, topic: 7, mode: "ours" } });
    const meta = await store.roster("x");
    expect(meta.members).toEqual(["alice"]);
    expect(meta.topic).toBe("");
    expect(meta.mode).toBe("ours");
  });
});

describe("a poster of ours that died holding the lock never blocks chat.py", () => {
  it("a parked wait clears the dead owner's lock at its next poll, and the reference can post", async () => {
    const dead = spawn(process.execPath, ["-e", "0"]);
    await new Promise((r) => dead.on("exit", r));
    const owner = `.seq.lock.owner.${dead.pid}.0123456789abcdef.${hostname()}`;
    mkdirSync(join(chDir(), owner));
    symlinkSync(owner, join(chDir(), "_seq.lock"));
    const ac = new AbortController();
    const parked = store
      .wait(["ch"], { as: "bob", intervalMs: 50, signal: ac.signal })
      .catch(() => {});
    await expect
      .poll(() => lstatSync(join(chDir(), "_seq.lock"), { throwIfNoEntry: false }), {
        timeout: 5_000,
        interval: 20,
      })
      .toBeUndefined();
    ac.abort();
    await parked;
    // The reference takes the lock with mkdir, which now succeeds.
    expect(await referencePost(chDir(), { from: "carol", title: "py", body: "hi" })).toBe(1);
  });
});

describe("files are read with a cap", () => {
  it("a 200 MB message file is skipped with a warning, never loaded", async () => {
    await store.post("ch", { from: "alice", body: "one" });
    const huge = join(chDir(), "0002-eve-huge.md");
    writeFileSync(huge, "---\nseq: 2\nfrom: eve\n---\n");
    truncateSync(huge, 200 * 1024 * 1024);
    const rss = process.memoryUsage().rss;
    const read = await store.read("ch", { as: "bob" });
    // A read that loaded the file would grow by its 200 MB; garbage not yet collected (more of
    // it on a loaded machine) stays far below 100 MB.
    expect(process.memoryUsage().rss - rss).toBeLessThan(100 * 1024 * 1024);
    expect(read.messages.map((m) => m.seq)).toEqual([1]);
    expect(read.warnings.join()).toMatch(
      /0002-eve-huge\.md: 209715200 bytes, more than this reader reads \(a body of 1048576 bytes/,
    );
  });
});
