import { readdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { announcePolicy, setPolicy } from "../../src/features/governance/policy.js";
import {
  POLICY_STATUS,
  policyChangeExtra,
  weakenings,
} from "../../src/features/governance/policy-pin.js";
import { policyOf } from "../../src/features/governance/policy-rules.js";
import { createIdentity } from "../../src/features/trust/identity.js";
import { hasPinnedPolicy, type PinnedPolicyStore } from "../../src/features/trust/signed-store.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import type { Store } from "../../src/store/types.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * Policy pins (docs/signatures.md, "Threat model"): a reader keeps the strictest policy it has
 * seen per channel; only the pinned maintainer's signed change or the reader's own act moves it.
 */

let tmp: ReturnType<typeof tempDir>;
let root: string;
const stores: Store[] = [];
/** Each person's own config folder (keys, pins, trust). */
const config = (who: string) => join(tmp.dir, `${who}-config`);

beforeEach(async () => {
  tmp = tempDir();
  root = join(tmp.dir, "root");
  for (const who of ["alice", "mallory"]) {
    await createIdentity({ configDir: config(who), root, rootId: resolve(root) }, who);
  }
  const alice = await open("alice");
  await alice.init("ops", {
    members: ["alice", "bob", "mallory"],
    extra: { signatures: "require", maintainer: "alice", bands: { merge: "approval" } },
  });
  await alice.post("ops", { from: "alice", body: "rules" });
  // Bob sees the channel once: its policy is pinned for him from now on.
  expect(policyOf(await (await open("bob")).roster("ops")).signatures).toBe("require");
});

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  tmp.cleanup();
});

async function open(who: string): Promise<PinnedPolicyStore> {
  const s = await openStore(root, { signatures: { configDir: config(who) } });
  stores.push(s);
  if (!hasPinnedPolicy(s)) throw new Error("openStore returns a store with policy pins");
  return s;
}

/** Mallory writes `_meta.json` by hand. */
function editMeta(edit: (meta: Record<string, unknown>) => void): void {
  const path = join(root, "ops", "_meta.json");
  const meta = JSON.parse(readFileSync(path, "utf8"));
  edit(meta);
  writeFileSync(path, JSON.stringify(meta));
}

describe("policy pins", () => {
  it("a weaker _meta.json is reported in read's warnings and the pin applies", async () => {
    editMeta((m) => {
      m.signatures = "warn";
      m.members = ["alice", "bob", "mallory", "eve"];
    });
    const bob = await open("bob");
    const standing = await bob.policyStanding("ops");
    expect(standing.weaker).toEqual(["signatures warn (pinned: require)"]);
    expect(standing.meta.signatures).toBe("require");
    const read = await bob.read("ops", { as: "bob" });
    expect(read.warnings.join("\n")).toContain("ops: _meta.json states a weaker policy");
  });

  it("the pinned maintainer's signed change moves the pin; the same from others does not", async () => {
    const mallory = await open("mallory");
    const extra = policyChangeExtra({ signatures: "off" });
    // A policy message from a member who is not the maintainer, signed: nobody's to give.
    await mallory.post("ops", { from: "mallory", status: POLICY_STATUS, body: "off", extra });
    // One "from alice", unsigned, written as chat.py would write it.
    await new FsStore(root, { watch: false }).post("ops", {
      from: "alice",
      status: POLICY_STATUS,
      body: "off",
      extra,
    });
    editMeta((m) => {
      m.signatures = "off";
    });
    const bob = await open("bob");
    expect((await bob.policyStanding("ops")).weaker).toEqual(["signatures off (pinned: require)"]);

    const alice = await open("alice");
    const before = await alice.roster("ops");
    await setPolicy(alice, "ops", {
      change: { signatures: "warn" },
      as: "alice",
      holdsKey: () => true,
    });
    const seq = await announcePolicy(alice, "ops", "alice", before, await alice.roster("ops"));
    expect(seq).toBeGreaterThan(1);
    const after = await (await open("bob")).policyStanding("ops");
    expect(after).toMatchObject({ weaker: [] });
    expect(policyOf(after.meta).signatures).toBe("warn");
    // The pin moved to alice's change: mallory taking it down to off again is a downgrade.
    editMeta((m) => {
      m.signatures = "off";
    });
    expect((await (await open("bob")).policyStanding("ops")).weaker).toEqual([
      "signatures off (pinned: warn)",
    ]);
  });

  it("a signed change from before the pin cannot undo it, even with the later one deleted", async () => {
    const alice = await open("alice");
    for (const signatures of ["warn", "require"]) {
      const before = await alice.roster("ops");
      await setPolicy(alice, "ops", { change: { signatures }, as: "alice", holdsKey: () => true });
      await announcePolicy(alice, "ops", "alice", before, await alice.roster("ops"));
    }
    // Dave first reads the channel now: require, pinned after both changes.
    expect(policyOf(await (await open("dave")).roster("ops")).signatures).toBe("require");
    // Mallory deletes the change back to require and edits the meta to match the older one.
    const later = readdirSync(join(root, "ops")).find((f) => f.startsWith("0003-"))!;
    unlinkSync(join(root, "ops", later));
    editMeta((m) => {
      m.signatures = "warn";
    });
    expect((await (await open("dave")).policyStanding("ops")).weaker).toEqual([
      "signatures warn (pinned: require)",
    ]);
  });

  it("a stricter _meta.json replaces the pin; going back is a downgrade", async () => {
    editMeta((m) => {
      m.membership = "strict";
    });
    const bob = await open("bob");
    expect(policyOf(await bob.roster("ops")).membership).toBe("strict");
    editMeta((m) => {
      m.membership = "open";
      m.bands = { merge: "auto" };
    });
    expect((await bob.policyStanding("ops")).weaker).toEqual([
      "membership open (pinned: strict)",
      "merge auto (pinned: approval)",
    ]);
  });

  it("the reader accepts a weaker policy by their own act; their own change repairs the file", async () => {
    editMeta((m) => {
      m.maintainer = "mallory";
    });
    const bob = await open("bob");
    expect((await bob.policyStanding("ops")).weaker).toEqual([
      "maintainer mallory (pinned: alice)",
    ]);
    // A change bob writes starts from his pin: the maintainer he pinned is back in the file.
    await bob.updateMeta!("ops", (meta) => ({ ...meta, post_rate_limit: 30 }));
    expect(JSON.parse(readFileSync(join(root, "ops", "_meta.json"), "utf8"))).toMatchObject({
      maintainer: "alice",
      post_rate_limit: 30,
    });
    editMeta((m) => {
      m.maintainer = "mallory";
    });
    await bob.acceptPolicy("ops");
    expect((await bob.policyStanding("ops")).weaker).toEqual([]);
    expect((await bob.roster("ops")).maintainer).toBe("mallory");
  });
});

describe("weakenings", () => {
  const meta = (extra: Record<string, unknown>) => ({
    channel: "c",
    members: [],
    topic: "",
    created: "",
    ...extra,
  });

  it("a band falls back to '*', and an action neither lists is refused (the strictest)", () => {
    const pinned = { maintainer: "a", bands: { merge: "approval" } };
    expect(weakenings(pinned, meta({ maintainer: "a", bands: { "*": "notify" } }))).toEqual([
      "merge notify (pinned: approval)",
      "* notify (pinned: refused)",
    ]);
    expect(weakenings(pinned, meta({ maintainer: "a", bands: { merge: "approval" } }))).toEqual([]);
    expect(weakenings(pinned, meta({ maintainer: "A", veto_window_seconds: 1 }))).toEqual([
      "veto window 1 s (pinned: 300 s)",
    ]);
  });

  it("a corrupt governance profile counts as none", () => {
    expect(weakenings({ maintainer: "a" }, meta({ maintainer: "a", bands: [] }))).toEqual([
      "no governance profile (pinned: maintainer a)",
    ]);
  });
});
