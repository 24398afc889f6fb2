import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { approvalText } from "../../src/core/signature.js";
import { generateKeyPair, signerFromPem } from "../../src/features/trust/ed25519.js";
import { makeWorld, type World } from "../daemon/harness.js";

let world: World;
const users = ["maya", "bob", "bobNew", "reader"] as const;
let env: Record<(typeof users)[number], Record<string, string>>;

beforeEach(async () => {
  world = makeWorld();
  const config = (who: string) => ({
    XDG_CONFIG_HOME: join(world.dir, `${who}-config`),
    AGENT_CHAT_DAEMON: "off",
  });
  env = {
    maya: config("maya"),
    bob: config("bob"),
    bobNew: config("bob-new"),
    reader: config("r"),
  };
  expect((await world.cli(["init", "review", "--maintainer", "maya"])).code).toBe(0);
  for (const [who, as] of [
    ["maya", "maya"],
    ["bob", "bob"],
  ] as const) {
    const made = await world.cli(["id", "new", "--as", as], env[who]);
    expect(made.code, made.stderr).toBe(0);
  }
  await world.cli(["post", "review", "--from", "bob", "--body", "with the old key"], env.bob);
  // The reader pins bob's old key (and maya's) on first sight.
  expect(await trusts()).toEqual(["verified"]);
});

afterEach(() => world.cleanup());

async function trusts(): Promise<string[]> {
  const peek = await world.cli(["--json", "peek", "review", "-n", "10"], env.reader);
  expect(peek.code, peek.stderr).toBe(0);
  const { messages } = JSON.parse(peek.stdout) as { messages: Array<{ trust: string }> };
  return messages.map((m) => m.trust);
}

/** Bob lost his key: a new one on a new machine, published, and a post signed with it. */
async function newKeyForBob(): Promise<string> {
  const plain = await world.cli(["id", "new", "--as", "bob"], env.bobNew);
  expect(plain.code).toBe(1);
  expect(plain.stderr).toContain("--replace");
  const made = await world.cli(["--json", "id", "new", "--as", "bob", "--replace"], env.bobNew);
  expect(made.code, made.stderr).toBe(0);
  const posted = await world.cli(
    ["post", "review", "--from", "bob", "--body", "with the new key"],
    env.bobNew,
  );
  expect(posted.code, posted.stderr).toBe(0);
  return (JSON.parse(made.stdout) as { key: string }).key;
}

const pubPath = () => join(world.root, ".keys", "bob.pub");

describe("agent-chat id approve: an authority the reader chose approves a new key for a pinned name", () => {
  it("without an approval, the new key is refused (forged) and reported as a key change", async () => {
    await newKeyForBob();
    const read = await world.cli(["read", "review", "--as", "carol"], env.reader);
    expect(read.stderr).toContain("attempted key change for bob");
    expect(await trusts()).toEqual(["verified", "forged"]);
  });

  it("a maintainer's approval counts for readers who chose the maintainer as an authority", async () => {
    const key = await newKeyForBob();
    const notMaintainer = await world.cli(["id", "approve", "review", "bob", key, "--as", "bob"], {
      ...env.bobNew,
    });
    expect(notMaintainer.code).toBe(1);
    expect(notMaintainer.stderr).toContain("only review's maintainer (maya)");
    const approved = await world.cli(
      ["id", "approve", "review", "bob", key, "--as", "maya"],
      env.maya,
    );
    expect(approved.code, approved.stderr).toBe(0);
    // Being named maintainer in a _meta.json (a file any poster writes) makes no one an authority.
    expect(await trusts()).toEqual(["verified", "forged"]);
    const shown = JSON.parse(
      (await world.cli(["--json", "id", "show", "maya"], env.reader)).stdout,
    );
    expect(shown.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    const chosen = await world.cli(["id", "authority", "add", "maya"], env.reader);
    expect(chosen.code, chosen.stderr).toBe(0);
    expect(chosen.stdout).toContain(`fingerprint\t${shown.fingerprint}`);
    expect(await trusts()).toEqual(["verified", "verified"]);
    const bob = await world.cli(["--json", "id", "show", "bob"], env.reader);
    expect(JSON.parse(bob.stdout).pinned.at(-1)).toBe(key);
    const listed = await world.cli(["--json", "id", "authority", "list"], env.reader);
    expect(Object.keys(JSON.parse(listed.stdout).authorities)).toEqual(["maya"]);
  });

  it("an authority removed no longer vouches for a key not yet pinned", async () => {
    const key = await newKeyForBob();
    expect((await world.cli(["id", "authority", "add", "maya"], env.reader)).code).toBe(0);
    const removed = await world.cli(["id", "authority", "remove", "maya"], env.reader);
    expect(removed.stdout).toContain("maya is no longer an authority here");
    await world.cli(["id", "approve", "review", "bob", key, "--as", "maya"], env.maya);
    expect(await trusts()).toEqual(["verified", "forged"]);
  });

  it("an approval not signed by the authority's key is refused", async () => {
    const key = await newKeyForBob();
    expect((await world.cli(["id", "authority", "add", "maya"], env.reader)).code).toBe(0);
    // Mallory writes an approval "by maya" with a key of her own into bob's published file.
    const mallory = signerFromPem(generateKeyPair().pem);
    const doc = JSON.parse(readFileSync(pubPath(), "utf8"));
    doc.approvals = [
      {
        key,
        by: "maya",
        channel: "review",
        sig: mallory.sign(approvalText("bob", key, "maya", "review")),
      },
    ];
    writeFileSync(pubPath(), JSON.stringify(doc));
    expect(await trusts()).toEqual(["verified", "forged"]);
    // Nor does maya's real signature count for a channel she does not maintain.
    expect((await world.cli(["init", "other", "--maintainer", "bob"])).code).toBe(0);
    const refused = await world.cli(
      ["id", "approve", "other", "bob", key, "--as", "maya"],
      env.maya,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("only other's maintainer (bob)");
    expect(await trusts()).toEqual(["verified", "forged"]);
  });

  it("a key that begins with a dash is taken as the key where it stands, not as an option", async () => {
    let key = generateKeyPair().key;
    while (!key.startsWith("-")) key = generateKeyPair().key;
    const trusted = await world.cli(["id", "trust", "carol", key], env.reader);
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.stdout).toContain(`pinned\t${key}`);
    const chosen = await world.cli(["id", "authority", "add", "carol", key], env.reader);
    expect(chosen.code, chosen.stderr).toBe(0);
    const approve = ["id", "approve", "review", "bob", key, "--as", "maya"];
    const notPublished = await world.cli(approve, env.maya);
    expect(notPublished.stderr).toContain(`${key} is not published for bob`);
    // A word that is no key is still refused, and a mistyped option still is too.
    expect((await world.cli(["id", "trust", "carol", "-x"], env.reader)).stderr).toContain(
      'not a public key: "-x"',
    );
    const typo = await world.cli(["id", "trust", "carol", key, "--onyl"], env.reader);
    expect(typo.code).toBe(64);
  });
});
