import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";

/** `explain`: per addressee, what is known of why a message is not read (docs/delivery.md). */
let tmp: ReturnType<typeof tempDir>;
let store: FsStore;

beforeEach(async () => {
  tmp = tempDir();
  store = new FsStore(tmp.dir);
  await store.init("review", { members: ["alice", "bob", "carol", "dave"] });
  await store.init("ops", { members: ["bob"] });
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

const whyOf = async (agent: string) =>
  (await store.explain("review", 1)).addressees.find((r) => r.agent === agent)?.why;

describe("explain", () => {
  it("says: parked on other channels; notified but not read; gone (pid dead); read", async () => {
    await store.post("review", { from: "alice", body: "for all of you" });
    const controller = new AbortController();
    const parked = store
      .wait(["ops"], { as: "bob", timeoutMs: 20_000, signal: controller.signal })
      .catch(() => undefined);
    await expect
      .poll(() => whyOf("bob"), { timeout: 5_000 })
      .toMatch(/^never notified; parked on other channels \(ops\); last activity at 20/);
    await store.notify("review", "carol", 1);
    expect(await whyOf("carol")).toMatch(/^notified at 20.* but not read; last activity at 20/);
    // A waiter whose process is gone: a record left by a pid that no longer runs on this host.
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    mkdirSync(join(tmp.dir, ".presence"), { recursive: true });
    const at = Date.now();
    const parkedOn = { channels: ["review"], since: at, pid: dead, host: hostname() };
    writeFileSync(
      join(tmp.dir, ".presence", "dave.json"),
      JSON.stringify({
        v: 1,
        agent: "dave",
        harness: "cli",
        host: hostname(),
        pid: dead,
        at,
        parked: parkedOn,
      }),
    );
    expect(await whyOf("dave")).toBe(`never notified; gone (its waiting process ${dead} died)`);
    controller.abort();
    await parked;
    await store.read("review", { as: "bob" });
    expect(await whyOf("bob")).toMatch(/^read at 20.*, not answered$/);
  });
});
