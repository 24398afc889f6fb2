import { readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import type { AgentChatError } from "../../src/core/errors.js";
import type { Store } from "../../src/store/types.js";
import { daemonFixture, type World } from "../daemon/harness.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * What a task lease proves, also under `signatures: require` (docs/leases.md, "What a lease
 * proves"): against an honest but slow holder, everything (its stale token is refused by
 * `fence`, `done`, `renew`); against a member who writes the root by hand, nothing: the grant
 * is a file like any other, and `fence` is a check its caller runs on itself. These tests pin
 * both halves, so that a change to either is a change to that page.
 */
const HOUR = 3_600_000;
const opened: Store[] = [];
const tmps: Array<{ cleanup: () => void }> = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const t of tmps.splice(0)) t.cleanup();
});

/** Mallory's hand edit: the lease says she holds token 99 for an hour, the marker agrees. */
function forgeGrant(channelDir: string, id: string, expiresAt: number): void {
  const marker = readdirSync(channelDir).find((n) => n.startsWith(`task-${id}.CLAIMED-`))!;
  renameSync(join(channelDir, marker), join(channelDir, `task-${id}.CLAIMED-mallory.md`));
  const lease = { token: 99, holder: "mallory", expiresAt, ttlMs: HOUR };
  writeFileSync(
    join(channelDir, `.task-${id}.lease`),
    `${JSON.stringify({ ...lease, history: [] })}\n`,
  );
}

describe("task leases under signatures: require, folder store", () => {
  async function setup() {
    const tmp = tempDir();
    tmps.push(tmp);
    const root = join(tmp.dir, "root");
    const open = async (offsetMs = 0) => {
      const s = await openStore(root, { now: () => Date.now() + offsetMs });
      opened.push(s);
      return s;
    };
    const store = await open();
    await store.init("ops", { extra: { signatures: "require" } });
    await store.addTask("ops", { id: "12", title: "Deploy", from: "alice" });
    return { root, open, store };
  }

  it("an honest but slow holder's stale token passes neither fence nor done", async () => {
    const { open, store } = await setup();
    await store.claim("ops", "12", "mallory", { ttlMs: HOUR });
    const twoHoursOn = await open(2 * HOUR);
    expect((await twoHoursOn.claim("ops", "12", "bob")).token).toBe(2);
    expect((await twoHoursOn.fence("ops", "12", 1)).live).toBe(false);
    const late = await twoHoursOn.done("ops", "12", "mallory", { token: 1 }).catch((e) => e);
    expect((late as AgentChatError).code).toBe("NOT_HOLDER");
  });

  it("a member who edits the lease file satisfies fence: honest-agent protection only", async () => {
    const { root, open, store } = await setup();
    await store.claim("ops", "12", "mallory", { ttlMs: HOUR });
    const twoHoursOn = await open(2 * HOUR);
    await twoHoursOn.claim("ops", "12", "bob");
    forgeGrant(join(root, "ops"), "12", Date.now() + 3 * HOUR);
    expect((await (await open(2 * HOUR)).fence("ops", "12", 99)).live).toBe(true);
  });
});

const { world: makeWorld, serve } = daemonFixture();

describe("task leases under signatures: require, through a daemon", () => {
  it("fence refuses a stale token, and a hand-edited grant satisfies it (honest-agent protection)", async () => {
    const world: World = makeWorld();
    const cli = (args: string[]) => world.cli(args);
    expect((await cli(["init", "ops", "--signatures", "require"])).code).toBe(0);
    expect(
      (await cli(["task", "add", "ops", "--id", "12", "--title", "Deploy", "--as", "alice"])).code,
    ).toBe(0);
    await serve(world);
    expect((await cli(["claim", "ops", "12", "--as", "bob"])).code).toBe(0);
    expect((await cli(["fence", "ops", "12", "--token", "99"])).code).toBe(3);
    forgeGrant(join(world.root, "ops"), "12", Date.now() + HOUR);
    expect((await cli(["fence", "ops", "12", "--token", "99"])).code).toBe(0);
  });
});
