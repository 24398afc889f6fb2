import { closeSync, mkdirSync, openSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir, writeOldFile } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
const tried = { names: 0, fields: 0, files: 0 };

beforeAll(async () => {
  tmp = tempDir("agent-chat-bad-");
  const store = new FsStore(tmp.dir);
  await store.init("ch");
  await store.close();
});
afterAll(() => {
  tmp.cleanup();
  console.log(
    `bad input: ${tried.names} names, ${tried.fields} fields, ${tried.files} files tried; 0 let in`,
  );
});

const allowed = "use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit";

describe("names that could escape the root or confuse a reader are refused, exactly", () => {
  it.each([
    ["..", `invalid channel name ".." : ${allowed}`],
    ["a/b", `invalid channel name "a/b" : ${allowed}`],
    ["a\\b", `invalid channel name "a\\\\b" : ${allowed}`],
    ["/abs", `invalid channel name "/abs" : ${allowed}`],
    ["C:x", `invalid channel name "C:x" : ${allowed}`],
    ["ctl\u0007x", `invalid channel name "ctl\\u0007x" : ${allowed}`],
    ["ｒｅｖｉｅｗ", `invalid channel name "ｒｅｖｉｅｗ" : ${allowed}`],
    [".git", `invalid channel name ".git" : ${allowed}`],
    ["_meta", `invalid channel name "_meta" : ${allowed}`],
    ["CON", `invalid channel name "CON": reserved device name`],
    ["x".repeat(10_240), "channel name is too long (10240 characters; at most 64)"],
  ])("channel %j", async (name, message) => {
    tried.names++;
    const r = await runCli(["init", name], { root: tmp.dir });
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`agent-chat: ${message.replace(" : ", ": ")}\n`);
  });

  it("a NUL in a name is refused before it reaches the file system", async () => {
    tried.names++;
    const store = new FsStore(tmp.dir);
    await expect(store.init("a\0b")).rejects.toMatchObject({ code: "INVALID_NAME" });
    await expect(store.read("ch", { as: "bob\0" })).rejects.toMatchObject({ code: "INVALID_NAME" });
    await expect(store.claim("ch", "1\0", "bob")).rejects.toMatchObject({ code: "INVALID_NAME" });
    await store.close();
  });

  it.each(["../bob", "bob/x", ".bob", "b\nob"])("agent %j", async (agent) => {
    tried.names++;
    const r = await runCli(["post", "ch", "--from", agent, "--body", "x"], { root: tmp.dir });
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/^agent-chat: invalid agent name .*: use ASCII letters/);
  });
});

describe("message fields cannot forge frontmatter", () => {
  it.each([
    ["title", ["--title", "ok\nseq: 999\n---"]],
    ["title with CR", ["--title", "ok\rfrom: mallory"]],
    ["status", ["--status", "done\nto: everyone"]],
    ["title with U+2028", ["--title", "a\u2028from: x"]],
  ])("%s", async (_what, flags) => {
    tried.fields++;
    const r = await runCli(["--json", "post", "ch", "--from", "alice", ...flags, "--body", "b"], {
      root: tmp.dir,
    });
    expect(r.code).toBe(0);
    const { seq } = JSON.parse(r.stdout);
    const store = new FsStore(tmp.dir);
    const [m] = (await store.read("ch", { as: "zed", all: true, peek: true })).messages.filter(
      (x) => x.seq === seq,
    );
    await store.close();
    expect(m?.from).toBe("alice");
    expect(m?.seq).toBe(seq);
    expect(Object.keys(m?.extra ?? {})).toEqual([]);
  });

  it("a title over 200 characters is refused with the limit", async () => {
    tried.fields++;
    const r = await runCli(
      ["post", "ch", "--from", "a", "--title", "t".repeat(201), "--body", "b"],
      { root: tmp.dir },
    );
    expect(r.code).toBe(64);
    expect(r.stderr).toBe("agent-chat: title is 201 characters; at most 200\n");
  });
});

describe("files in a channel", () => {
  it.each([
    [
      "a UTF-8 BOM and CRLF line endings (Windows editors)",
      "\uFEFF---\r\nfrom: win\r\nto: all\r\ntitle: crlf\r\n---\r\nhello\r\n",
      true,
      undefined,
    ],
    ["an empty file", "", false, "no frontmatter"],
    ["binary content", "---\nfrom: x\n---\n\u0000\u0001\u0002", false, "binary content"],
    ["an unclosed frontmatter", "---\nfrom: x\ntitle: y\n", false, "unclosed frontmatter"],
  ])("%s", async (_what, text, delivered, reason) => {
    tried.files++;
    const root = tempDir();
    const store = new FsStore(root.dir);
    await store.init("c");
    writeOldFile(join(root.dir, "c", "0001-x-file.md"), text);
    const r = await store.read("c", { as: "bob" });
    expect(r.messages.length).toBe(delivered ? 1 : 0);
    expect(r.warnings).toEqual(reason ? [`0001-x-file.md: ${reason}, skipped`] : []);
    await store.close();
    root.cleanup();
  });

  it("invalid UTF-8 is reported, not delivered", async () => {
    tried.files++;
    const root = tempDir();
    const store = new FsStore(root.dir);
    await store.init("c");
    writeOldFile(
      join(root.dir, "c", "0001-x-bad.md"),
      Buffer.from([0x2d, 0x2d, 0x2d, 0x0a, 0xc3, 0x28]),
    );
    expect((await store.read("c", { as: "bob" })).warnings).toEqual([
      "0001-x-bad.md: not UTF-8, skipped",
    ]);
    await store.close();
    root.cleanup();
  });

  it("a symlink inside a channel pointing outside the root is never followed", async () => {
    tried.files++;
    const root = tempDir();
    const outside = tempDir();
    const store = new FsStore(root.dir);
    await store.init("c");
    writeFileSync(join(outside.dir, "x.md"), "---\nfrom: root\n---\nsecret\n");
    symlinkSync(join(outside.dir, "x.md"), join(root.dir, "c", "0001-root-x.md"));
    mkdirSync(join(root.dir, "c", ".cursors"), { recursive: true });
    symlinkSync(join(outside.dir, "victim.txt"), join(root.dir, "c", ".cursors", "bob.txt"));
    const r = await store.read("c", { as: "bob" });
    expect(r.messages).toEqual([]);
    // The cursor write replaced the link itself; nothing was written outside.
    expect((await import("node:fs")).existsSync(join(outside.dir, "victim.txt"))).toBe(false);
    await store.close();
    root.cleanup();
    outside.cleanup();
  });
});

describe("resource bounds", () => {
  it("a wait over 1,000 channels wakes on a post to the last one", async () => {
    const root = tempDir();
    const store = new FsStore(root.dir);
    const names = Array.from({ length: 1000 }, (_, i) => `ch${i}`);
    for (const n of names) await store.init(n);
    const waiting = store.wait(names, { as: "bob", timeoutMs: 60_000, intervalMs: 60_000 });
    await new Promise((r) => setTimeout(r, 200));
    const poster = new FsStore(root.dir);
    const t0 = performance.now();
    await poster.post("ch999", { from: "alice", body: "last" });
    const r = await waiting;
    const ms = performance.now() - t0;
    expect(r.messages.map((m) => [m.channel, m.body])).toEqual([["ch999", "last"]]);
    console.log(`resource: wait over 1,000 channels woke ${ms.toFixed(1)} ms after the post began`);
    await store.close();
    await poster.close();
    root.cleanup();
  });

  it("a 100 MB body file is refused without being read", async () => {
    const f = join(tmp.dir, "huge.md");
    const fd = openSync(f, "w");
    writeSync(fd, "x", 100 * 1024 * 1024 - 1); // sparse: 100 MB long, nothing on disk
    closeSync(fd);
    const t0 = performance.now();
    const r = await runCli(["post", "ch", "--from", "a", "--title", "t", "--body-file", f], {
      root: tmp.dir,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "agent-chat: message body is 104857600 bytes; the limit is 1048576 (a channel takes more " +
        "only when made so, up to 64 MiB: agent-chat --max-body BYTES init CHANNEL; then post " +
        "with the same --max-body)\n",
    );
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it("a 100 MB body on stdin is refused after the limit, not read to the end", async () => {
    const child = startCli(["post", "ch", "--from", "a", "--title", "t"], {
      root: tmp.dir,
      keepStdin: true,
    });
    let written = 0;
    const chunk = Buffer.alloc(1024 * 1024, "y");
    const done = new Promise<number | null>((resolve) => child.on("close", resolve));
    child.stdin!.on("error", () => {});
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null || child.stdin!.destroyed) break;
      const ok = child.stdin!.write(chunk);
      written += chunk.length;
      if (!ok) await Promise.race([new Promise((r) => child.stdin!.once("drain", r)), done]);
    }
    const code = await done;
    const { stderr } = await collect(child);
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/message body is more than 1048576 bytes; the limit is 1048576/);
    expect(written).toBeLessThan(100 * 1024 * 1024);
  });
});
