import { spawn } from "node:child_process";
import { lstatSync, lutimesSync, mkdirSync, readdirSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { acquireDirLock } from "../../src/fsutil/dir-lock.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: FsStore;
let dir: string;
const lockDir = () => join(dir, "_seq.lock");

beforeEach(async () => {
  tmp = tempDir();
  store = new FsStore(tmp.dir, { timeoutMs: 1500 });
  await store.init("ch");
  dir = join(tmp.dir, "ch");
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

/**
 * A lock as a poster leaves it: the directory `_seq.lock` (sticky), its owner directory, and
 * the link beside it that names the owner; or, with no owner, the reference's plain directory.
 */
function plantLock(
  owner: { host: string; pid: number; token: string } | undefined,
  ageSeconds = 0,
): void {
  if (owner) {
    const name = `.seq.lock.owner.${owner.pid}.${owner.token}.${owner.host}`;
    mkdirSync(join(dir, name));
    mkdirSync(lockDir(), 0o1755);
    if (ageSeconds > 0) age(ageSeconds);
    symlinkSync(name, recordOf(lockDir()));
  } else {
    mkdirSync(lockDir());
    if (ageSeconds > 0) age(ageSeconds);
  }
}

/** Where the owner of the lock instance at `lock` is written. */
function recordOf(lock: string): string {
  const st = lstatSync(lock, { bigint: true });
  return join(dir, `.seq.lock.by.${st.ino}.${st.mtimeNs}`);
}

/** Makes the lock `seconds` old. */
function age(seconds: number): void {
  const t = Date.now() / 1000 - seconds;
  lutimesSync(lockDir(), t, t);
}

const lockLeftovers = () =>
  readdirSync(dir).filter((n) => n.startsWith("_seq.lock") || n.startsWith(".seq.lock"));

/**
 * Takes the channel's lock as a poster does and releases it; returns how many times it paused
 * before it had it. 0 is "at once" whatever the machine's load, where a lock respected until it
 * goes stale costs one pause per retry.
 */
async function pausesToTake(): Promise<number> {
  let pauses = 0;
  const release = await acquireDirLock(dir, {
    pause: (ms) => {
      pauses += 1;
      return new Promise((r) => setTimeout(r, ms));
    },
  });
  release();
  return pauses;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "0"]);
  await new Promise((r) => child.on("exit", r));
  return child.pid!;
}

describe("the sequence lock (_seq.lock)", () => {
  it("a poster killed with SIGKILL while holding the lock: the next post proceeds at once", async () => {
    const holder = spawn(process.execPath, [
      "--import",
      "tsx",
      fileURLToPath(new URL("../helpers/lock-holder.ts", import.meta.url)),
      dir,
    ]);
    await new Promise<void>((resolve, reject) => {
      holder.stdout.once("data", () => resolve());
      holder.once("exit", () => reject(new Error("lock holder exited early")));
    });
    // The lock is an empty directory, as chat.py's; its owner is named beside it.
    expect(lstatSync(lockDir()).isDirectory()).toBe(true);
    expect(readdirSync(lockDir())).toEqual([]);
    expect(readlinkSync(recordOf(lockDir()))).toMatch(
      new RegExp(`^\\.seq\\.lock\\.owner\\.${holder.pid}\\.[0-9a-f]{16}\\..+$`),
    );
    holder.kill("SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    expect(await pausesToTake()).toBe(0);
    expect((await store.post("ch", { from: "a", body: "after crash" })).seq).toBe(1);
    // The dead owner's directory goes with its lock; the survivor leaves nothing behind.
    expect(lockLeftovers()).toEqual([]);
  });

  it("a poster killed between making its owner directory and taking the lock leaves nothing that blocks", async () => {
    const { hostname } = await import("node:os");
    mkdirSync(join(dir, `.seq.lock.owner.${await deadPid()}.0123456789abcdef.${hostname()}`));
    expect(await pausesToTake()).toBe(0);
    expect((await store.post("ch", { from: "a", body: "x" })).seq).toBe(1);
    await store.cleanLeftovers("ch");
    expect(lockLeftovers()).toEqual([]);
  });

  it("a poster killed between making the lock and naming its owner: the next post proceeds at once", async () => {
    const { hostname } = await import("node:os");
    mkdirSync(join(dir, `.seq.lock.owner.${await deadPid()}.0123456789abcdef.${hostname()}`));
    mkdirSync(lockDir(), 0o1755);
    expect(await pausesToTake()).toBe(0);
    expect((await store.post("ch", { from: "a", body: "x" })).seq).toBe(1);
    await store.cleanLeftovers("ch");
    expect(lockLeftovers()).toEqual([]);
  });

  it("an unnamed lock of ours is respected while a poster that may have made it lives", async () => {
    const { hostname } = await import("node:os");
    mkdirSync(join(dir, `.seq.lock.owner.${process.pid}.0123456789abcdef.${hostname()}`));
    mkdirSync(lockDir(), 0o1755);
    expect(await store.post("ch", { from: "a", body: "x" }).catch((e) => e.code)).toBe(
      "LOCK_TIMEOUT",
    );
  });

  it("the owner directory of a live poster on this host is never cleaned up", async () => {
    const { hostname } = await import("node:os");
    const live = `.seq.lock.owner.${process.pid}.0123456789abcdef.${hostname()}`;
    mkdirSync(join(dir, live));
    expect(await store.cleanLeftovers("ch")).toBe(0);
    expect(lockLeftovers()).toEqual([live]);
  });

  it("a reference chat.py cannot take our lock while we hold it (its mkdir fails)", async () => {
    plantLock({ host: "other-host.example", pid: 1, token: "t" });
    expect(() => mkdirSync(lockDir())).toThrow(/EEXIST/);
  });

  it("a lock whose owner is a dead pid on this host is stale at once", async () => {
    const { hostname } = await import("node:os");
    plantLock({ host: hostname(), pid: await deadPid(), token: "dead" });
    expect(await pausesToTake()).toBe(0);
    expect((await store.post("ch", { from: "a", body: "x" })).seq).toBe(1);
  });

  it("a fresh lock of another host is respected (LOCK_TIMEOUT), not stolen", async () => {
    plantLock({ host: "other-host.example", pid: 1, token: "t" });
    const err = await store.post("ch", { from: "a", body: "x" }).catch((e) => e);
    expect(err).toBeInstanceOf(AgentChatError);
    expect((err as AgentChatError).code).toBe("LOCK_TIMEOUT");
    expect((err as AgentChatError).message).toMatch(/held by pid 1 on other-host\.example/);
    expect(readdirSync(dir).filter((n) => n.endsWith(".md"))).toEqual([]);
  });

  it("another host's lock older than 30 s is taken over", async () => {
    plantLock({ host: "other-host.example", pid: 1, token: "t" }, 31);
    expect((await store.post("ch", { from: "a", body: "x" })).seq).toBe(1);
    expect(lockLeftovers()).toEqual([]);
  });

  it("the reference's owner-less lock: respected while fresh, taken over after 30 s", async () => {
    plantLock(undefined);
    expect(await store.post("ch", { from: "a", body: "x" }).catch((e) => e.code)).toBe(
      "LOCK_TIMEOUT",
    );
    age(31);
    expect((await store.post("ch", { from: "a", body: "x" })).seq).toBe(1);
    expect(lockLeftovers()).toEqual([]);
  });

  it("many posters racing to steal one stale lock all succeed with distinct numbers", async () => {
    plantLock({ host: "other-host.example", pid: 1, token: "t" }, 60);
    const stores = Array.from({ length: 8 }, () => new FsStore(tmp.dir));
    const seqs = await Promise.all(
      stores.map((s, i) => s.post("ch", { from: `p${i}`, body: "x" }).then((r) => r.seq)),
    );
    expect(seqs.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await Promise.all(stores.map((s) => s.close()));
    expect(lockLeftovers()).toEqual([]);
  });
});
