import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { NatsStore } from "../../src/store/nats/index.js";
import { startDaemon } from "../daemon/harness.js";
import { referenceReply, stderrContains } from "../governance/helpers.js";
import { type CliResult, collect, runCli, startCli } from "../helpers/cli.js";
import { describeNats } from "../helpers/describe-nats.js";
import type { NatsServer } from "../helpers/nats-server.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * A member of a channel who wants to be someone else (docs/signatures.md, "Threat model"):
 * mallory can post, holds keys of her own and writes any file of the root. Nothing she writes
 * may make bob trust another key for alice, count a verdict alice never gave, or weaken a policy
 * bob has seen. Each attack runs on the folder store, through a daemon that bob's reads go to,
 * and on NATS where it applies.
 */

interface Place {
  root: string;
  /** The environment of one person's CLI: their own config folder (keys, pins, trust). */
  env(who: string): Record<string, string>;
  /** Mallory edits the channel's `_meta.json` (on NATS: the KV entry) by hand. */
  editMeta(channel: string, edit: (meta: Record<string, unknown>) => void): Promise<void>;
  /** Mallory writes an unsigned reply "from" someone, as chat.py or an editor would. */
  plantReply(reply: { from: string; to: string; replyTo: number; status: string }): Promise<void>;
}

const tmp = tempDir("agent-chat-trust-attacks-");
afterAll(() => tmp.cleanup());
let places = 0;

function folderPlace(
  extra: (who: string) => Record<string, string> = () => ({}),
  dir = join(tmp.dir, `place-${++places}`),
  rootName = "root",
): Place {
  const root = join(dir, rootName);
  mkdirSync(join(dir, "run"), { recursive: true });
  return {
    root,
    env: (who) => ({
      HOME: join(dir, "home"),
      XDG_RUNTIME_DIR: join(dir, "run"),
      XDG_CONFIG_HOME: join(dir, `${who}-config`),
      AGENT_CHAT_DAEMON: "off",
      ...extra(who),
    }),
    async editMeta(channel, edit) {
      const path = join(root, channel, "_meta.json");
      const meta = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
      edit(meta);
      writeFileSync(path, JSON.stringify(meta, null, 2));
    },
    async plantReply(reply) {
      await referenceReply(join(root, "review"), { ...reply, body: "lgtm" });
    },
  };
}

function natsPlace(server: NatsServer): Place {
  const place = folderPlace();
  const root = server.url(`attacks${places}`);
  const raw = async <T>(use: (store: NatsStore) => Promise<T>): Promise<T> => {
    const store = await NatsStore.open(root);
    try {
      return await use(store);
    } finally {
      await store.close();
    }
  };
  return {
    root,
    env: place.env,
    editMeta: (channel, edit) =>
      raw(async (store) => {
        // The namespace's KV entry itself, as anyone with the account's credentials can write it.
        const { Kvm } = await import("@nats-io/kv");
        const kv = await new Kvm(store.js).open(store.bucketName);
        const meta = JSON.parse((await kv.get(`meta.${channel}`))!.string());
        edit(meta);
        await kv.put(`meta.${channel}`, JSON.stringify(meta));
      }),
    plantReply: (reply) =>
      raw(async (store) => {
        // The backend itself, no signing layer: a file-level write, as chat.py posts.
        await store.post("review", { ...reply, title: `Re: #${reply.replyTo}`, body: "lgtm" });
      }),
  };
}

async function cli(place: Place, who: string, args: string[], code = 0): Promise<CliResult> {
  const r = await runCli(args, { root: place.root, env: place.env(who) });
  expect(r.code, `${who}: ${args.join(" ")}: ${r.stderr}`).toBe(code);
  return r;
}

async function trusts(place: Place, channel: string): Promise<string[]> {
  const peek = await cli(place, "bob", ["--json", "peek", channel, "-n", "20"]);
  const { messages } = JSON.parse(peek.stdout) as { messages: Array<{ trust: string }> };
  return messages.map((m) => m.trust);
}

/**
 * Attack 1's set-up: mallory publishes a key of her own as alice's, makes a channel of which she
 * is the maintainer and approves that key there, signed with her own (real) key.
 */
async function takeOverAlice(place: Place): Promise<void> {
  await cli(place, "mallory", ["id", "new", "--as", "mallory"]);
  const made = await cli(place, "mallory", ["--json", "id", "new", "--as", "alice", "--replace"]);
  const key = (JSON.parse(made.stdout) as { key: string }).key;
  await cli(place, "mallory", ["init", "mal", "--maintainer", "mallory"]);
  await cli(place, "mallory", ["post", "mal", "--from", "mallory", "--body", "my channel"]);
  await cli(place, "mallory", ["id", "approve", "mal", "alice", key, "--as", "mallory"]);
}

async function identityTakeover(place: Place): Promise<void> {
  await cli(place, "alice", ["init", "review"]);
  await cli(place, "alice", ["id", "new", "--as", "alice"]);
  await cli(place, "alice", ["post", "review", "--from", "alice", "--body", "the real alice"]);
  expect(await trusts(place, "review")).toEqual(["verified"]);
  await takeOverAlice(place);
  expect(await trusts(place, "mal")).toEqual(["verified"]);
  await cli(place, "mallory", ["post", "review", "--from", "alice", "--body", "pay mallory"]);
  expect(await trusts(place, "review")).toEqual(["verified", "forged"]);
  const read = await cli(place, "bob", ["--json", "read", "review", "--as", "bob"]);
  expect(read.stderr).toContain("attempted key change for alice");
  // What bob chose himself is what counts: once he pins the new key, it is alice's for him.
  const key = JSON.parse((await cli(place, "bob", ["--json", "id", "show", "alice"])).stdout)
    .published[0] as string;
  await cli(place, "bob", ["id", "trust", "alice", key]);
  expect(await trusts(place, "review")).toEqual(["verified", "verified"]);
}

/** A governed channel at `signatures: require` that bob has seen (and so pinned). */
async function governedChannel(place: Place): Promise<void> {
  for (const who of ["alice", "bob"]) await cli(place, who, ["id", "new", "--as", who]);
  await cli(place, "alice", [
    ...["init", "review", "--members", "alice,bob,mallory", "--maintainer", "alice"],
    ...["--band", "merge=approval", "--signatures", "require"],
  ]);
  await cli(place, "alice", ["post", "review", "--from", "alice", "--body", "rules"]);
  expect(await trusts(place, "review")).toEqual(["verified"]);
  // Bob reads the channel once: what he has seen of its policy is his from now on.
  const seen = await cli(place, "bob", ["--json", "read", "review", "--as", "bob", "--peek"]);
  expect(JSON.parse(seen.stdout).messages).toHaveLength(1);
}

/** Bob asks to deploy `title` in `place`'s deploy channel; `answer(seq)` runs meanwhile. */
async function bobRequestsIn(place: Place, title: string, answer: (seq: number) => Promise<void>) {
  const args = ["request", "deploy", "--as", "bob", "--action", "deploy", "--title", title];
  const child = startCli([...args, "--timeout", "4"], {
    root: place.root,
    env: place.env("bob"),
    timeoutMs: 30_000,
  });
  const posted = await stderrContains(child, "agent-chat: posted #");
  await answer(Number(/posted #(\d+)/.exec(posted)![1]));
  return collect(child);
}

/** Bob asks to merge; `answer(seq)` is what mallory does then; resolves with bob's result. */
async function bobRequests(place: Place, answer: (seq: number) => Promise<void>) {
  const child = startCli(
    ["request", "review", "--as", "bob", "--action", "merge", "--title", "Merge PR 12"].concat([
      "--timeout",
      "4",
    ]),
    { root: place.root, env: place.env("bob"), timeoutMs: 30_000 },
  );
  const posted = await stderrContains(child, "agent-chat: posted #");
  await answer(Number(/posted #(\d+)/.exec(posted)![1]));
  return collect(child);
}

async function forgedGovernance(place: Place): Promise<void> {
  await governedChannel(place);
  await takeOverAlice(place);
  const result = await bobRequests(place, async (seq) => {
    await cli(place, "mallory", ["approve", "review", String(seq), "--as", "alice"]);
  });
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toContain("no verdict from alice");
}

async function policyDowngrade(place: Place): Promise<void> {
  await governedChannel(place);
  await place.editMeta("review", (meta) => {
    meta.signatures = "off";
    meta.maintainer = "mallory";
    meta.bands = { "*": "auto" };
  });
  const shown = await cli(place, "bob", ["--json", "policy", "review"]);
  const policy = JSON.parse(shown.stdout);
  expect(policy).toMatchObject({ signatures: "require" });
  expect(policy.weaker).toEqual(
    expect.arrayContaining([
      "signatures off (pinned: require)",
      "maintainer mallory (pinned: alice)",
    ]),
  );
  expect(policy.warnings[0]).toContain("review: _meta.json states a weaker policy");
  const result = await bobRequests(place, (seq) =>
    place.plantReply({ from: "alice", to: "bob", replyTo: seq, status: "approved" }),
  );
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toContain("review: _meta.json states a weaker policy");
  // Nor does the unsigned "alice" reach bob as a message: it is held back, and the reason said.
  const read = await cli(place, "bob", ["--json", "read", "review", "--as", "bob"]);
  const got = JSON.parse(read.stdout) as { messages: Array<{ from: string; trust: string }> };
  expect(got.messages.filter((m) => m.trust !== "verified")).toEqual([]);
  expect(read.stderr).toContain("review: _meta.json states a weaker policy");
}

/** Bob's read of review: what reaches him, and what he was told. */
async function bobReads(place: Place, who = "bob") {
  const read = await cli(place, who, ["--json", "read", "review", "--as", who]);
  const got = JSON.parse(read.stdout) as { messages: Array<{ from: string; trust: string }> };
  return { messages: got.messages, stderr: read.stderr };
}

/**
 * Finding 3 of issue 40: alice, the maintainer, signs a stricter policy; mallory puts back the
 * `_meta.json` bob pinned before it. Bob follows what alice signed, not the file.
 */
async function signedTighteningRestored(place: Place): Promise<void> {
  for (const who of ["alice", "bob"]) await cli(place, who, ["id", "new", "--as", who]);
  await cli(place, "alice", [
    ...["init", "review", "--members", "alice,bob,mallory", "--maintainer", "alice"],
    ...["--band", "*=auto"],
  ]);
  await cli(place, "alice", ["post", "review", "--from", "alice", "--body", "rules"]);
  expect((await bobReads(place)).messages).toHaveLength(1);
  let before: Record<string, unknown> = {};
  await place.editMeta("review", (meta) => {
    before = { ...meta };
  });
  await cli(place, "alice", ["policy", "review", "--signatures", "require", "--as", "alice"]);
  await place.editMeta("review", (meta) => {
    for (const key of Object.keys(meta)) delete meta[key];
    Object.assign(meta, before);
  });
  await place.plantReply({ from: "alice", to: "bob", replyTo: 1, status: "approved" });
  const read = await bobReads(place);
  expect(read.messages.map((m) => m.trust)).toEqual(["verified"]);
  expect(read.stderr).toContain("signatures off (pinned: require)");
  const policy = JSON.parse((await cli(place, "bob", ["--json", "policy", "review"])).stdout);
  expect(policy).toMatchObject({ signatures: "require" });
}

/**
 * Finding 3 of issue 40: carol holds no key; she reads an empty channel that requires
 * signatures, and that first contact pins its policy: a hand downgrade after it is not obeyed.
 */
async function keylessReaderPins(place: Place): Promise<void> {
  await cli(place, "alice", ["init", "review", "--signatures", "require"]);
  expect((await bobReads(place, "carol")).messages).toEqual([]);
  await place.editMeta("review", (meta) => {
    meta.signatures = "off";
  });
  await place.plantReply({ from: "alice", to: "carol", replyTo: 1, status: "open" });
  const read = await bobReads(place, "carol");
  expect(read.messages).toEqual([]);
  expect(read.stderr).toContain("signatures off (pinned: require)");
}

/**
 * Finding 2 of issue 40: the same people in two roots, each with a governed `deploy` channel
 * that requires signatures, the same history in each. Whatever alice or bob signed in root B,
 * copied by mallory into root A, counts for nothing there.
 */
async function twinRoots(): Promise<[Place, Place]> {
  const a = folderPlace();
  const b = folderPlace(undefined, join(a.root, ".."), "other-root");
  for (const who of ["alice", "bob"]) await cli(a, who, ["id", "new", "--as", who]);
  for (const place of [a, b]) {
    await cli(place, "alice", [
      ...["init", "deploy", "--members", "alice,bob,mallory", "--maintainer", "alice"],
      ...["--band", "deploy=approval", "--signatures", "require"],
    ]);
    await cli(place, "alice", ["post", "deploy", "--from", "alice", "--body", "rules"]);
  }
  return [a, b];
}

/** Copies each file of B's `deploy` that A's does not have into A's (mallory's copy). */
function copyNewFiles(b: Place, a: Place, sub = ""): void {
  const [from, to] = [join(b.root, "deploy", sub), join(a.root, "deploy", sub)];
  mkdirSync(to, { recursive: true });
  const have = new Set(readdirSync(to));
  for (const name of readdirSync(from)) {
    if (!have.has(name) && name.endsWith(sub ? ".json" : ".md")) {
      copyFileSync(join(from, name), join(to, name));
    }
  }
}

describe("attacks by a member who wants to be someone else: the folder store", () => {
  it("1: a key published and 'approved' in the root by mallory is not alice's for bob", async () => {
    await identityTakeover(folderPlace());
  }, 90_000);

  it("2: mallory's approval as the alice she made up does not pass bob's request", async () => {
    await forgedGovernance(folderPlace());
  }, 90_000);

  it("4: a _meta.json edited down to off (and another maintainer) is reported, not obeyed", async () => {
    await policyDowngrade(folderPlace());
  }, 90_000);

  it("2: alice's signed message copied from another root's channel of the name is forged", async () => {
    const [a, b] = await twinRoots();
    await cli(b, "alice", ["post", "deploy", "--from", "alice", "--body", "ship it to prod"]);
    copyNewFiles(b, a);
    const peek = await cli(a, "bob", ["--json", "peek", "deploy"]);
    const messages = JSON.parse(peek.stdout).messages as Array<Record<string, unknown>>;
    expect(messages.map((m) => m.trust)).toEqual(["verified", "forged"]);
    expect(messages[1]!.trust_note).toContain("another instance of the channel");
    const read = await cli(a, "bob", ["--json", "read", "deploy", "--as", "bob"]);
    expect(JSON.parse(read.stdout).messages).toHaveLength(1);
    expect(read.stderr).toContain("#2 from alice is forged");
  }, 90_000);

  it("2: alice's approval of a request in another root approves nothing here", async () => {
    const [a, b] = await twinRoots();
    const there = await bobRequestsIn(b, "ship v2", async (seq) => {
      await cli(b, "alice", ["approve", "deploy", String(seq), "--as", "alice"]);
    });
    expect(there.code, there.stderr).toBe(0);
    const here = await bobRequestsIn(a, "drop the prod database", async () => copyNewFiles(b, a));
    expect(here.code, here.stderr).toBe(2);
    expect(here.stderr).toContain("no verdict from alice");
  }, 90_000);

  it("2: bob's signed read receipts from another root prove nothing here", async () => {
    const [a, b] = await twinRoots();
    for (const place of [a, b]) {
      await cli(place, "alice", [
        "post",
        "deploy",
        "--from",
        "alice",
        "--to",
        "bob",
        "--body",
        "go",
      ]);
    }
    await cli(b, "bob", ["read", "deploy", "--as", "bob"]);
    copyNewFiles(b, a, ".signed-receipts");
    const receipts = JSON.parse(
      (await cli(a, "alice", ["--json", "receipts", "deploy", "2"])).stdout,
    );
    expect(receipts.addressees[0]).toMatchObject({ agent: "bob" });
    expect(receipts.addressees[0].state).not.toBe("read");
    await cli(a, "bob", ["read", "deploy", "--as", "bob"]);
    const after = JSON.parse((await cli(a, "alice", ["--json", "receipts", "deploy", "2"])).stdout);
    expect(after.addressees[0].state).toBe("read");
  }, 90_000);

  it("3: a signed tightening holds though _meta.json is put back", async () => {
    await signedTighteningRestored(folderPlace());
  }, 90_000);

  it("3: a reader with no key of its own pins on first contact", async () => {
    await keylessReaderPins(folderPlace());
  }, 60_000);

  it("a reader whose config folder cannot be written still obeys the channel's policy", async () => {
    const place = folderPlace();
    await cli(place, "alice", ["init", "review", "--signatures", "require"]);
    await place.plantReply({ from: "alice", to: "carol", replyTo: 1, status: "open" });
    // A sandbox's home: the config folder is no folder at all (as root, modes do not stop it).
    const notAFolder = join(place.root, "..", "config-file");
    writeFileSync(notAFolder, "");
    const read = await runCli(["--json", "read", "review", "--as", "carol"], {
      root: place.root,
      env: { ...place.env("carol"), XDG_CONFIG_HOME: notAFolder },
    });
    expect(read.code, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout).messages).toEqual([]);
    expect(read.stderr).toContain("could not be saved");
  }, 60_000);

  it("the pinned maintainer's policy change is posted signed and followed; --accept is the reader's own", async () => {
    const place = folderPlace();
    await governedChannel(place);
    const changed = await cli(place, "alice", [
      ...["--json", "policy", "review", "--signatures", "warn", "--as", "alice"],
    ]);
    expect(JSON.parse(changed.stdout)).toMatchObject({ signatures: "warn", weaker: [] });
    const bobSees = JSON.parse((await cli(place, "bob", ["--json", "policy", "review"])).stdout);
    expect(bobSees).toMatchObject({ signatures: "warn", weaker: [], warnings: [] });
    // The change is a message in the channel, signed by alice: anyone can see who decided it.
    const peek = JSON.parse((await cli(place, "bob", ["--json", "peek", "review"])).stdout);
    expect(peek.messages.at(-1)).toMatchObject({
      from: "alice",
      status: "policy",
      trust: "verified",
    });

    await place.editMeta("review", (meta) => {
      meta.signatures = "off";
    });
    const human = await cli(place, "bob", ["policy", "review"]);
    expect(human.stdout).toContain("review: signatures warn");
    expect(human.stderr).toContain("signatures off (pinned: warn)");
    expect(human.stderr).toContain("agent-chat policy review --accept");
    const accepted = await cli(place, "bob", ["--json", "policy", "review", "--accept"]);
    expect(JSON.parse(accepted.stdout)).toMatchObject({ signatures: "off", weaker: [] });
  }, 90_000);

  it("a root reached through a link and by its own path has one set of pins", async () => {
    const place = folderPlace();
    await cli(place, "alice", ["init", "review"]);
    await cli(place, "alice", ["id", "new", "--as", "alice"]);
    await cli(place, "alice", ["post", "review", "--from", "alice", "--body", "the real alice"]);
    const link = `${place.root}-link`;
    symlinkSync(place.root, link);
    const viaLink: Place = { ...place, root: link };
    expect(await trusts(viaLink, "review")).toEqual(["verified"]);
    await cli(place, "mallory", ["id", "new", "--as", "alice", "--replace"]);
    await cli(place, "mallory", ["post", "review", "--from", "alice", "--body", "pay mallory"]);
    // A second set of pins for the real path would pin mallory's key on first sight.
    expect(await trusts(place, "review")).toEqual(["verified", "forged"]);
    expect(await trusts(viaLink, "review")).toEqual(["verified", "forged"]);
  }, 60_000);

  it("9: a signed message renamed after signing is not shown as verified", async () => {
    const place = folderPlace();
    await cli(place, "alice", ["init", "review"]);
    await cli(place, "alice", ["id", "new", "--as", "alice"]);
    await cli(place, "alice", [
      "post",
      "review",
      "--from",
      "alice",
      "--title",
      "pay 10",
      "--body",
      "to bob",
    ]);
    expect(await trusts(place, "review")).toEqual(["verified"]);
    const dir = join(place.root, "review");
    renameSync(join(dir, "0001-alice-pay-10.md"), join(dir, "0001-alice-pay-1000000.md"));
    const peek = await cli(place, "bob", ["--json", "peek", "review"]);
    expect(JSON.parse(peek.stdout).messages[0]).toMatchObject({
      file: "0001-alice-pay-1000000.md",
      trust: "forged",
      trust_note: expect.stringContaining("file name"),
    });
  }, 60_000);
});

describe("attacks through a daemon that bob's reads go to", () => {
  /** Bob's commands reach the daemon, which runs as bob (his pins); the others write files. */
  async function withDaemon(run: (place: Place) => Promise<void>): Promise<void> {
    const throughDaemon = (who: string): Record<string, string> =>
      who === "bob" ? { AGENT_CHAT_DAEMON: "" } : {};
    const place = folderPlace(throughDaemon);
    const bobEnv = place.env("bob");
    const world = {
      dir: tmp.dir,
      root: place.root,
      env: { ...bobEnv, AGENT_CHAT_ROOT: place.root, AGENT_CHAT_SOCKET: "" },
      cleanup: () => {},
      cli: (args: string[]) => runCli(args, { root: place.root, env: bobEnv }),
    };
    mkdirSync(place.root, { recursive: true });
    const daemon = await startDaemon(world as never);
    try {
      await run(place);
    } finally {
      await daemon.stop();
    }
  }

  it("1: the daemon verifies with bob's pins: the made-up key stays forged", async () => {
    await withDaemon(identityTakeover);
  }, 90_000);

  it("4: the daemon keeps the policy bob pinned", async () => {
    await withDaemon(policyDowngrade);
  }, 90_000);

  it("3: the daemon follows alice's signed tightening, not the file put back", async () => {
    await withDaemon(signedTighteningRestored);
  }, 90_000);

  it("9: a renamed signed file read through the daemon is not verified", async () => {
    await withDaemon(async (place) => {
      await cli(place, "alice", ["init", "review"]);
      await cli(place, "alice", ["id", "new", "--as", "alice"]);
      await cli(place, "alice", [
        "post",
        "review",
        "--from",
        "alice",
        "--title",
        "pay 10",
        "--body",
        "to bob",
      ]);
      expect(await trusts(place, "review")).toEqual(["verified"]);
      const dir = join(place.root, "review");
      renameSync(join(dir, "0001-alice-pay-10.md"), join(dir, "0001-alice-pay-1000000.md"));
      // The daemon sees the rename through its file watch; wait until it shows the new name.
      let shown: { file: string; trust: string } | undefined;
      await expect
        .poll(async () => {
          const peek = await cli(place, "bob", ["--json", "peek", "review"]);
          shown = JSON.parse(peek.stdout).messages[0];
          return shown?.file;
        })
        .toBe("0001-alice-pay-1000000.md");
      expect(shown?.trust).toBe("forged");
    });
  }, 60_000);
});

describeNats("attacks on NATS", (server) => {
  it("1: a key published and 'approved' in the KV by mallory is not alice's for bob", async () => {
    await identityTakeover(natsPlace(server()));
  }, 90_000);

  it("2: mallory's approval as the alice she made up does not pass bob's request", async () => {
    await forgedGovernance(natsPlace(server()));
  }, 90_000);

  it("4: a meta entry edited down to off is reported, not obeyed", async () => {
    await policyDowngrade(natsPlace(server()));
  }, 90_000);

  it("3: a reader with no key of its own pins on first contact", async () => {
    await keylessReaderPins(natsPlace(server()));
  }, 60_000);
});
