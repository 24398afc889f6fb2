import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatTimestamp, messageFileName, serializeMessage } from "../../src/core/message.js";
import { daemonFixture, type World } from "../daemon/harness.js";
import { collect, startCli, untilStdout } from "../helpers/cli.js";

/**
 * The delivery attack of a member who writes files by hand, on the CLI, with a daemon serving
 * the root: under `signatures: require` an unsigned reply under bob's name and a number in
 * `.cursors/bob.txt` satisfy neither `post --wait-for` nor `receipts`; bob's own read does.
 */
const { world: makeWorld, serve } = daemonFixture();

function users(world: World) {
  const env = (who: string) => ({ XDG_CONFIG_HOME: join(world.dir, `config-${who}`) });
  return { alice: env("alice"), bob: env("bob") };
}

/** What a member who can write the folder does: bob's answer and bob's cursor, unsigned. */
function forgeAnswer(world: World, seq: number, replyTo: number): void {
  const dir = join(world.root, "ops");
  const title = "done";
  const text = serializeMessage({
    seq,
    from: "bob",
    to: "alice",
    replyTo,
    channel: "ops",
    ts: formatTimestamp(),
    title,
    body: "shipped (not bob)",
  });
  writeFileSync(join(dir, messageFileName(seq, "bob", title)), text);
  mkdirSync(join(dir, ".cursors"), { recursive: true });
  writeFileSync(join(dir, ".cursors", "bob.txt"), `${seq}\n`);
}

describe("delivery proofs on the CLI, through a daemon", () => {
  it("a forged answer and cursor satisfy no --wait-for and no receipt; bob's own read does", async () => {
    const world = makeWorld();
    const { alice, bob } = users(world);
    const ok = async (args: string[], env: Record<string, string>) => {
      const r = await world.cli(args, env);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return r;
    };
    await ok(["id", "new", "--as", "alice"], alice);
    await ok(["id", "new", "--as", "bob"], bob);
    await ok(["init", "ops", "--members", "alice,bob", "--signatures", "require"], alice);
    await serve(world);

    const post = startCli(
      [
        "post",
        "ops",
        "--from",
        "alice",
        "--to",
        "bob",
        "--title",
        "Ready?",
        "--body",
        "ship?",
      ].concat(["--wait-for", "answered", "--timeout", "5s"]),
      { env: { ...world.env, ...alice } },
    );
    const posted = collect(post);
    await untilStdout(post, (out) => out.includes("posted #1"));
    forgeAnswer(world, 2, 1);
    const waited = await posted;
    expect(waited.code).toBe(2);
    expect(waited.stderr).toContain("nothing bob signed proves it");

    const receipts = async () => {
      const r = await ok(["--json", "receipts", "ops", "1"], alice);
      return (JSON.parse(r.stdout) as { addressees: Array<Record<string, unknown>> }).addressees[0];
    };
    expect(await receipts()).toMatchObject({ agent: "bob", state: "stored", unproven: "answered" });

    await ok(["read", "ops", "--as", "bob"], bob);
    expect(await receipts()).toMatchObject({ agent: "bob", state: "read", unproven: "answered" });
    await ok(["post", "ops", "--from", "bob", "--reply", "1", "--body", "really shipped"], bob);
    expect(await receipts()).toMatchObject({ agent: "bob", state: "answered", answer: 3 });
  });
});
