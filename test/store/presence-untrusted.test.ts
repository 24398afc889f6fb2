import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * Presence and receipt records live in the root (`.presence/`, `<channel>/.receipts/`), so they
 * are someone else's input like every file there (docs/design.md §10): corrupt, future, hand-written,
 * a link, a FIFO or a huge file is ignored with one warning; nothing is written through a link.
 */
let tmp: ReturnType<typeof tempDir>;
let root: string;
let store: FsStore;
let warnings: string[];

beforeEach(async () => {
  tmp = tempDir();
  root = join(tmp.dir, "root");
  mkdirSync(root);
  warnings = [];
  store = new FsStore(root, { onWarning: (w) => warnings.push(w) });
  await store.init("ch", { members: ["alice", "bob", "carol", "dave", "erin", "fred"] });
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

describe("presence records are untrusted input", () => {
  it("corrupt, future, hand-written, linked, FIFO and huge records are ignored with one warning each", async () => {
    const dir = join(root, ".presence");
    mkdirSync(dir);
    writeFileSync(join(dir, "bob.json"), "{not json");
    writeFileSync(
      join(dir, "carol.json"),
      JSON.stringify({ v: 9, agent: "carol", harness: "cli", host: "h", pid: 1, at: 1 }),
    );
    writeFileSync(join(dir, "dave.json"), JSON.stringify({ agent: "dave", status: "here" }));
    writeFileSync(join(tmp.dir, "secret.json"), "TOKEN=1");
    symlinkSync(join(tmp.dir, "secret.json"), join(dir, "erin.json"));
    execFileSync("mkfifo", [join(dir, "fred.json")]);
    writeFileSync(join(dir, "zed.json"), "x".repeat(100_000));
    await store.post("ch", { from: "alice", body: "hi" });
    const seen: string[] = [];
    const who = await store.who("ch", { onWarning: (w) => seen.push(w) });
    expect(who.find((p) => p.agent === "alice")?.state).toBe("active");
    for (const agent of ["bob", "carol", "dave", "erin", "fred"]) {
      expect(who.find((p) => p.agent === agent)?.state).toBe("never-seen");
    }
    expect(seen).toHaveLength(6);
    expect(seen.join("\n")).toMatch(/bob\.?.*not JSON/);
    expect(seen.join("\n")).toMatch(/carol.*newer version/);
    expect(seen.join("\n")).toMatch(/dave.*written by hand/);
    expect(seen.join("\n")).toMatch(/erin.*symbolic link/);
    expect(seen.join("\n")).toMatch(/fred.*FIFO/);
    expect(seen.join("\n")).toMatch(/zed.*larger than/);
    // Once: a second look says nothing new.
    await store.who("ch", { onWarning: (w) => seen.push(w) });
    expect(seen).toHaveLength(6);
  });

  it("a .presence that links elsewhere is never written through; the post succeeds", async () => {
    const elsewhere = join(tmp.dir, "elsewhere");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(root, ".presence"));
    const { seq } = await store.post("ch", { from: "alice", body: "still posted" });
    expect(seq).toBe(1);
    await store.post("ch", { from: "bob", body: "again" });
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/presence of alice not recorded/);
  });

  it("a receipt record planted as a link is ignored, and replaced, never written through", async () => {
    await store.post("ch", { from: "alice", to: "bob", body: "read me" });
    const dir = join(root, "ch", ".receipts");
    mkdirSync(dir);
    writeFileSync(join(tmp.dir, "target.json"), "keep");
    symlinkSync(join(tmp.dir, "target.json"), join(dir, "bob.json"));
    const seen: string[] = [];
    const r = await store.receipts("ch", 1, { onWarning: (w) => seen.push(w) });
    expect(r.addressees).toEqual([{ agent: "bob", state: "stored" }]);
    expect(seen).toHaveLength(1);
    await store.read("ch", { as: "bob" });
    expect(readFileSync(join(tmp.dir, "target.json"), "utf8")).toBe("keep");
    expect((await store.receipts("ch", 1)).addressees[0]?.state).toBe("read");
  });
});
