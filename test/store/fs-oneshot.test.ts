import { readdirSync, rmSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/index.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * A store without file watches (what a CLI command that ends once it has answered opens) lists a
 * channel again only when the folder's mtime says an entry may have come or gone since its last
 * listing; what another writer adds is seen all the same.
 */
describe("a watch-less folder store", () => {
  const tmp = tempDir();
  const stores: FsStore[] = [];
  const open = () => {
    const store = new FsStore(tmp.dir, { watch: false, recordPresence: false });
    stores.push(store);
    return store;
  };
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  it("sees a message another writer posted right after its own listing", async () => {
    const reader = open();
    await reader.init("ch");
    await reader.post("ch", { from: "alice", to: "bob", body: "one" });
    expect((await reader.read("ch", { as: "bob" })).messages.map((m) => m.body)).toEqual(["one"]);
    await open().post("ch", { from: "carol", to: "bob", body: "two" });
    expect((await reader.read("ch", { as: "bob" })).messages.map((m) => m.body)).toEqual(["two"]);
    expect((await reader.peek("ch", 5)).map((m) => m.seq)).toEqual([1, 2]);
  });

  it("allocates a post's number from a fresh listing, whatever the folder's mtime says", async () => {
    const poster = open();
    await poster.init("pl");
    await poster.post("pl", { from: "alice", body: "first" });
    // Another writer that keeps no high-water mark (as chat.py), then the folder's mtime set back
    // (a post also writes its temporary file there first, which moves the mtime again: both
    // that and the allocation's own listing keep the number from being reused).
    await open().post("pl", { from: "carol", body: "second" });
    rmSync(join(tmp.dir, "pl", ".seq"));
    const past = Date.now() / 1000 - 60;
    utimesSync(join(tmp.dir, "pl"), past, past);
    const third = await poster.post("pl", { from: "alice", body: "third" });
    expect(third.seq).toBe(3);
    const files = readdirSync(join(tmp.dir, "pl")).filter((f) => /^\d+-/.test(f));
    expect(files.sort()).toEqual([
      "0001-alice-first.md",
      "0002-carol-second.md",
      "0003-alice-third.md",
    ]);
  });
});
