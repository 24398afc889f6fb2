import { readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * Leases on the folder store, where chat.py shares the folder: its claims (a renamed marker, no
 * lease file) and a lease file that is someone else's input (docs/design.md §10).
 */
const DAY = 86_400_000;
let tmp: ReturnType<typeof tempDir>;
let skew = 0;
let store: FsStore;
const dir = () => join(tmp.dir, "root", "ch");
const leaseFile = () => join(dir(), ".task-1.lease");

beforeEach(async () => {
  tmp = tempDir();
  skew = 0;
  store = new FsStore(join(tmp.dir, "root"), { now: () => Date.now() + skew });
  await store.init("ch");
  await store.addTask("ch", { id: "1", title: "build", from: "alice" });
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (err: unknown) => (err instanceof AgentChatError ? err.code : String(err)),
  );
}

describe("folder store leases beside chat.py", () => {
  it("a task chat.py claimed (marker renamed, no lease) is claimed with no lease and never expires", async () => {
    // What the reference's claim does: rename the marker, nothing else.
    renameSync(join(dir(), "task-1.md"), join(dir(), "task-1.CLAIMED-dave.md"));
    skew = 30 * DAY;
    const [task] = await store.tasks("ch");
    expect(task).toMatchObject({ state: "claimed", holder: "dave" });
    expect(task!.token).toBeUndefined();
    expect(task!.expiresAt).toBeUndefined();
    expect(await code(store.claim("ch", "1", "bob"))).toBe("CLAIM_LOST");
    expect(await code(store.done("ch", "1", "dave", { token: 1 }))).toBe("NOT_HOLDER");
    expect(await code(store.renew("ch", "1", "dave"))).toBe("INVALID_ARGUMENT");
    // Its holder may still give it back; the next claim is a lease, token 1.
    expect((await store.release("ch", "1", "dave")).state).toBe("open");
    expect((await store.claim("ch", "1", "bob")).token).toBe(1);
  });

  it("our claim is what chat.py expects on disk: the renamed marker, the lease in a dot-file", async () => {
    await store.claim("ch", "1", "Bob");
    expect(
      readdirSync(dir())
        .filter((f) => f.includes("task-"))
        .sort(),
    ).toEqual([".task-1.lease", "task-1.CLAIMED-bob.md"]);
    expect(JSON.parse(readFileSync(leaseFile(), "utf8"))).toMatchObject({
      token: 1,
      holder: "bob",
      history: [{ token: 1, holder: "bob" }],
    });
  });

  it("a lease file that is not JSON is no lease, reported once; the task stays claimable", async () => {
    writeFileSync(leaseFile(), "{ not json");
    const first = await store.tasks("ch");
    expect(first[0]!.warning).toMatch(/\.task-1\.lease: its lease is not JSON; ignored/);
    expect((await store.tasks("ch"))[0]!.warning).toBeUndefined();
    expect((await store.claim("ch", "1", "bob")).token).toBe(1);
  });

  it("a lease file with a valid token and bad fields keeps the token: the next grant is above it", async () => {
    writeFileSync(leaseFile(), JSON.stringify({ token: 41, holder: "../x", expiresAt: "soon" }));
    expect((await store.tasks("ch"))[0]!.warning).toMatch(/only its token is kept/);
    expect((await store.claim("ch", "1", "bob")).token).toBe(42);
  });

  it("a lease file planted as a link is not followed, and the claim replaces it, not its target", async () => {
    const target = join(tmp.dir, "outside.json");
    const planted = JSON.stringify({ token: 1, holder: "eve", expiresAt: Date.now() + DAY });
    writeFileSync(target, planted);
    renameSync(join(dir(), "task-1.md"), join(dir(), "task-1.CLAIMED-eve.md"));
    symlinkSync(target, leaseFile());
    const [task] = await store.tasks("ch");
    // Not the link's lease: eve's marker reads as a claim without one.
    expect(task).toMatchObject({ state: "claimed", holder: "eve" });
    expect(task!.token).toBeUndefined();
    expect(task!.warning).toMatch(/\.task-1\.lease cannot be read/);
    await store.release("ch", "1", "eve");
    await store.claim("ch", "1", "bob");
    expect(readFileSync(target, "utf8")).toBe(planted);
    expect(JSON.parse(readFileSync(leaseFile(), "utf8"))).toMatchObject({ holder: "bob" });
  });

  it("a crash between the lease write and the rename leaves no second holder and no lower token", async () => {
    // The lease says carol got token 5, but the marker was never renamed: the task is open.
    writeFileSync(
      leaseFile(),
      JSON.stringify({ token: 5, holder: "carol", expiresAt: Date.now() + DAY, history: [] }),
    );
    expect((await store.tasks("ch"))[0]).toMatchObject({ state: "open", token: 5 });
    expect(await code(store.done("ch", "1", "carol", { token: 5 }))).toBe("NOT_HOLDER");
    expect((await store.fence("ch", "1", 5)).live).toBe(false);
    expect((await store.claim("ch", "1", "bob")).token).toBe(6);
  });
});

describe("renewal by the holder's activity", () => {
  it("a parked wait by the holder keeps its lease alive past its TTL", async () => {
    await store.init("short", { extra: { task_ttl: 3 } });
    await store.addTask("short", { id: "1", title: "t", from: "alice" });
    await store.claim("short", "1", "bob"); // a 3 s lease, the channel's
    // Parked for longer than the lease, in real time: only the wait's own renewal keeps it.
    expect(await code(store.wait(["short"], { as: "bob", timeoutMs: 4_500 }))).toBe("TIMEOUT");
    const [task] = await store.tasks("short");
    expect(task).toMatchObject({ state: "claimed", holder: "bob", token: 1 });
  });

  it("renews for as long as the lease was granted, not the channel's default", async () => {
    const HOUR = 3_600_000;
    await store.claim("ch", "1", "bob", { ttlMs: 2 * HOUR });
    skew = 1.5 * HOUR; // half an hour left: due (less than two thirds of 2 h)
    await store.read("ch", { as: "bob" });
    const [task] = await store.tasks("ch");
    expect(Date.parse(task!.expiresAt!) - (Date.now() + skew)).toBeGreaterThan(HOUR + 50 * 60_000);
  });
});
