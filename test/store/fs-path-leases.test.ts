import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";

/** `.leases.json` is input from anyone with access to the root (docs/design.md §10). */
let tmp: ReturnType<typeof tempDir>;
let store: FsStore;
const file = () => join(tmp.dir, "ch", ".leases.json");

beforeEach(async () => {
  tmp = tempDir();
  store = new FsStore(tmp.dir);
  await store.init("ch");
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

it("a corrupt file is no lease; bad entries are dropped and the token never goes down", async () => {
  writeFileSync(file(), "{not json");
  expect(await store.pathLeases("ch")).toEqual([]);
  const good = {
    token: 7,
    pattern: "src/**",
    holder: "bob",
    exclusive: true,
    at: 1,
    expiresAt: Date.now() + 60_000,
    ttlMs: 60_000,
  };
  writeFileSync(
    file(),
    JSON.stringify({
      token: 2,
      leases: [
        good,
        { ...good, token: 9, holder: "../eve" },
        { ...good, token: 10, pattern: "x".repeat(600) },
        { ...good, token: 11, pattern: "a\u0007b" },
        "junk",
      ],
    }),
  );
  expect((await store.pathLeases("ch")).map((l) => l.token)).toEqual([7]);
  expect((await store.addPathLease("ch", "docs/**", "carol")).token).toBe(8);
});

it("a .leases.json planted as a link is never followed nor written through", async () => {
  const target = join(tmp.dir, "outside.json");
  writeFileSync(target, "{}");
  symlinkSync(target, file());
  await expect(store.addPathLease("ch", "src/**", "bob")).rejects.toMatchObject({
    code: "UNSAFE_FILE",
  });
  expect(readFileSync(target, "utf8")).toBe("{}");
  // Activity never fails on it: the post goes through.
  expect((await store.post("ch", { from: "bob", body: "hi" })).seq).toBe(1);
});
