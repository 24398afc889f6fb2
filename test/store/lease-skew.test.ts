import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { leaseText } from "../../src/cli/commands/hot.js";
import { AgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { SKEW_GRACE_MS } from "../../src/store/shared/index.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * Two hosts sharing a root whose clocks differ (docs/leases.md, "Clock skew"): the holder's host
 * runs 4 s behind the other's. Each store measures leases by its own injected clock.
 */
const MINUTE = 60_000;
const AHEAD = 4_000;
let tmp: ReturnType<typeof tempDir>;
let t = 0;
let holder: FsStore;
let other: FsStore;

beforeEach(async () => {
  tmp = tempDir();
  t = Date.now();
  const root = join(tmp.dir, "root");
  holder = new FsStore(root, { now: () => t });
  other = new FsStore(root, { now: () => t + AHEAD });
  await holder.init("ch");
  await holder.addTask("ch", { id: "1", title: "build", from: "alice" });
});

afterEach(async () => {
  await holder.close();
  await other.close();
  tmp.cleanup();
});

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (err: unknown) => (err instanceof AgentChatError ? err.code : String(err)),
  );
}

describe("clock skew between hosts", () => {
  it("the grace is a few seconds, more than the skew this test runs", () => {
    expect(SKEW_GRACE_MS).toBeGreaterThan(AHEAD);
    expect(SKEW_GRACE_MS).toBeLessThanOrEqual(10_000);
  });

  it("a task lease is not granted twice by a host whose clock runs ahead", async () => {
    const claimed = await holder.claim("ch", "1", "bob", { ttlMs: MINUTE });
    const end = Date.parse(claimed.expiresAt!);
    t = end - 1_000; // bob's host: 1 s left; the other host reads 3 s past the end
    expect((await holder.fence("ch", "1", 1)).live).toBe(true);
    expect(await code(other.claim("ch", "1", "carol"))).toBe("CLAIM_LOST");
    t = end + 500; // bob's host: just past the end: bob stops acting, but keeps his lease
    expect((await holder.fence("ch", "1", 1)).live).toBe(false);
    expect(await code(other.claim("ch", "1", "carol"))).toBe("CLAIM_LOST");
    expect((await holder.renew("ch", "1", "bob", { token: 1, ttlMs: MINUTE })).token).toBe(1);
    t += MINUTE + SKEW_GRACE_MS - AHEAD + 1; // past the renewed end and the grace, on both hosts
    expect((await other.claim("ch", "1", "carol")).token).toBe(2);
    expect(await code(holder.done("ch", "1", "bob", { token: 1 }))).toBe("NOT_HOLDER");
  });

  it("a path lease is not taken over early by a host whose clock runs ahead", async () => {
    const lease = await holder.addPathLease("ch", "src/**", "bob", { ttlMs: MINUTE });
    const end = Date.parse(lease.expiresAt);
    t = end - 1_000;
    expect(await code(other.addPathLease("ch", "src/a.ts", "carol"))).toBe("CLAIM_LOST");
    expect((await other.pathLeases("ch"))[0]!.state).toBe("live");
    t = end + 500;
    expect((await holder.renewPathLease("ch", "src/**", "bob")).token).toBe(1);
    t += MINUTE + SKEW_GRACE_MS - AHEAD + 1;
    expect((await other.addPathLease("ch", "src/a.ts", "carol")).token).toBe(2);
  });

  it("within the grace, `tasks` and the refused claim both name it and say when it ends", async () => {
    const claimed = await holder.claim("ch", "1", "bob", { ttlMs: MINUTE });
    const end = Date.parse(claimed.expiresAt!);
    t = end + 1_000;
    const [info] = await holder.tasks("ch");
    expect(info!.state).toBe("claimed");
    expect(leaseText(info!, t)).toBe(
      "token 1, lease ended 1s ago; claimable by others in 4s (the 5 s clock-skew grace)",
    );
    await expect(holder.claim("ch", "1", "carol")).rejects.toThrow(
      "task 1 is already claimed by bob: its lease ended 1 s ago, and a lease is its holder's for " +
        "5 s more (the clock-skew grace, docs/leases.md); claimable in 4 s",
    );
    t = end + SKEW_GRACE_MS + 1;
    const [expired] = await holder.tasks("ch");
    expect(expired!.state).toBe("expired");
    expect(leaseText(expired!, t)).toBe("token 1, expired 5s ago");
    expect((await holder.claim("ch", "1", "carol")).token).toBe(2);
  });
});
