import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { AgentChatError } from "../../src/core/errors.js";
import { type Message, parseMessage } from "../../src/core/message.js";
import { canonicalText, withSigLine } from "../../src/core/signature.js";
import {
  createIdentity,
  exportIdentity,
  importIdentity,
  rotateIdentity,
} from "../../src/features/trust/identity.js";
import { privateKeyPath, publishedKeyPath } from "../../src/features/trust/keys.js";
import { signerFor } from "../../src/features/trust/signing.js";
import type { Store } from "../../src/store/types.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let root: string;
/** Alice's machine: her key, her pins. */
let aliceConfig: string;
/** A reader elsewhere: no keys, pins of its own. */
let readerConfig: string;
let warnings: string[];
const stores: Store[] = [];

beforeEach(async () => {
  tmp = tempDir();
  root = join(tmp.dir, "root");
  aliceConfig = join(tmp.dir, "alice-config");
  readerConfig = join(tmp.dir, "reader-config");
  warnings = [];
  const s = await open(aliceConfig);
  await s.init("review");
  await createIdentity(place(aliceConfig), "alice");
});

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  tmp.cleanup();
});

function place(configDir: string) {
  return { configDir, root, rootId: resolve(root) };
}

async function open(configDir: string | undefined): Promise<Store> {
  const s = await openStore(root, {
    signatures: { ...(configDir ? { configDir } : {}), onWarning: (w) => warnings.push(w) },
  });
  stores.push(s);
  return s;
}

async function trustOf(configDir: string | undefined = readerConfig): Promise<Message[]> {
  return (await open(configDir)).peek("review", 50);
}

function messageFile(seq: number): string {
  const dir = join(root, "review");
  const name = readdirSync(dir).find((n) => n.startsWith(`${String(seq).padStart(4, "0")}-`))!;
  return join(dir, name);
}

function editFile(seq: number, edit: (text: string) => string): void {
  const path = messageFile(seq);
  writeFileSync(path, edit(readFileSync(path, "utf8")));
}

async function code(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (e instanceof AgentChatError ? e.code : String(e)),
  );
}

describe("keys", () => {
  it("id new: the private key is 0600 under the config folder, the public key published in a dot folder", () => {
    const key = privateKeyPath(aliceConfig, "alice");
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(key.startsWith(aliceConfig)).toBe(true);
    const published = JSON.parse(readFileSync(publishedKeyPath(root, "alice"), "utf8"));
    expect(published).toMatchObject({ name: "alice", rotations: [] });
    expect(published.keys).toHaveLength(1);
    // Nothing of the private key in the root.
    const secret = readFileSync(key, "utf8").split("\n")[1]!;
    const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) =>
      e.isFile(),
    );
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      expect(readFileSync(join(f.parentPath, f.name), "utf8")).not.toContain(secret);
    }
  });

  it("a second id new for a name with a key is refused, here and on another machine", async () => {
    expect(await code(createIdentity(place(aliceConfig), "alice"))).toBe("KEY_CONFLICT");
    expect(await code(createIdentity(place(readerConfig), "alice"))).toBe("KEY_CONFLICT");
  });

  it("a key file the group or others can read is refused, with the fix", async () => {
    const key = privateKeyPath(aliceConfig, "alice");
    chmodSync(key, 0o644);
    const s = await open(aliceConfig);
    const err = await s.post("review", { from: "alice", body: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentChatError);
    expect((err as AgentChatError).code).toBe("UNSAFE_FILE");
    expect((err as AgentChatError).message).toContain(`chmod 600 ${key}`);
  });

  it("export and import carry the key to a second machine of the same agent", async () => {
    const exported = await exportIdentity(place(aliceConfig), "alice");
    const second = join(tmp.dir, "second");
    await importIdentity(place(second), exported);
    await (await open(second)).post("review", { from: "alice", body: "from the laptop" });
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified"]);
  });
});

describe("signed messages", () => {
  it("a poster with a key signs; a reader elsewhere verifies; a poster without one is unsigned", async () => {
    const s = await open(aliceConfig);
    await s.post("review", { from: "alice", body: "signed" });
    await s.post("review", { from: "bob", body: "no key" });
    expect(readFileSync(messageFile(1), "utf8")).toMatch(
      /\ntitle: signed\nchannel_id: [A-Za-z0-9_-]{22}\nsig: ed25519:\S+\n---\n/,
    );
    const got = await trustOf();
    expect(got.map((m) => [m.from, m.trust])).toEqual([
      ["alice", "verified"],
      ["bob", "unsigned"],
    ]);
    const read = await (await open(readerConfig)).read("review", { as: "bob" });
    expect(read.messages[0]!.trust).toBe("verified");
  });

  it("a body with CR LF line ends (a Windows editor, a pipe) verifies", async () => {
    await (await open(aliceConfig)).post("review", {
      from: "alice",
      body: "one\r\ntwo\rthree\r\n",
    });
    const [m] = await trustOf();
    expect(m).toMatchObject({ trust: "verified", body: "one\ntwo\nthree" });
  });

  it("without a config folder the library still verifies, and never signs", async () => {
    await (await open(aliceConfig)).post("review", { from: "alice", body: "signed" });
    await (await open(undefined)).post("review", { from: "alice", body: "no keys here" });
    expect((await trustOf(undefined)).map((m) => m.trust)).toEqual(["verified", "unsigned"]);
  });

  const tampering: Array<[string, (text: string) => string]> = [
    ["the body edited afterwards", (t) => t.replace("pay bob 10", "pay bob 1000")],
    ["the sender changed", (t) => t.replace("from: alice", "from: alicf")],
    ["a malformed signature line", (t) => t.replace(/sig: ed25519:(\S+)/, "sig: ed25519:$1x")],
    ["a signature line duplicated", (t) => t.replace(/(sig: .*\n)/, "$1$1")],
    ["a second from line", (t) => t.replace(/(sig: .*\n)/, "$1from: mallory\n")],
    [
      "the signature line moved into the body",
      (t) => {
        const line = /sig: .*\n/.exec(t)![0];
        return `${t.replace(line, "")}${line}`;
      },
    ],
    ["a line the parser skips", (t) => t.replace(/(sig: .*\n)/, "$1a line without colon\n")],
  ];
  it.each(tampering)("%s: forged, never verified, never a crash", async (_, edit) => {
    await (await open(aliceConfig)).post("review", { from: "alice", body: "pay bob 10" });
    editFile(1, edit);
    const [m] = await trustOf();
    expect(m?.trust).toBe("forged");
    expect(m?.trustNote).toBeTruthy();
  });

  it("a long-lived reader (a daemon) sees an edit made after it verified the message", async () => {
    await (await open(aliceConfig)).post("review", { from: "alice", body: "pay bob 10" });
    const daemon = await open(readerConfig);
    expect((await daemon.peek("review")).map((m) => m.trust)).toEqual(["verified"]);
    editFile(1, (t) => t.replace("pay bob 10", "pay bob 1000"));
    expect((await daemon.peek("review")).map((m) => m.trust)).toEqual(["forged"]);
  });

  it("a signed file copied to another number or channel is forged", async () => {
    const s = await open(aliceConfig);
    await s.post("review", { from: "alice", body: "approve" });
    await s.init("other");
    const text = readFileSync(messageFile(1), "utf8");
    writeFileSync(join(root, "review", "0002-alice-approve.md"), text);
    writeFileSync(join(root, "other", "0001-alice-approve.md"), text);
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified", "forged"]);
    expect((await (await open(readerConfig)).peek("other")).map((m) => m.trust)).toEqual([
      "forged",
    ]);
  });

  it("a message signed under a from that is no name (Cyrillic 'аlice') is forged and pins no key", async () => {
    // Mallory signs with a key of her own, made as "lice": the key `аlice` would be pinned under.
    const mallory = join(tmp.dir, "mallory");
    await createIdentity(place(mallory), "lice");
    await (await open(mallory)).post("review", { from: "lice", title: "pay 10", body: "pay" });
    const lice = messageFile(1);
    const parsed = parseMessage(readFileSync(lice, "utf8"), "0001-x.md", "review");
    if (!parsed.ok) throw new Error(parsed.reason);
    const { message } = parsed;
    const signer = (await signerFor(mallory, "lice"))!;
    const stripped = { ...message, from: "\u0430lice", extra: { ...message.extra } };
    delete stripped.extra.sig;
    const signed = canonicalText(stripped);
    const text = withSigLine(signed, { key: signer.key, signature: signer.sign(signed) });
    rmSync(lice);
    writeFileSync(join(root, "review", "0001-\u0430lice-pay-10.md"), text);
    const got = await trustOf();
    expect(got.map((m) => [m.from, m.trust, m.trustNote])).toEqual([
      ["\u0430lice", "forged", "the sender is not a valid name"],
    ]);
    expect(existsSync(join(readerConfig, "pins.json"))).toBe(false);
  });

  it("someone else's key for a pinned name: forged, and reported as an attempted key change", async () => {
    await (await open(aliceConfig)).post("review", { from: "alice", body: "real" });
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified"]); // pins alice here
    // Mallory makes a key of her own, replaces alice's published key file and posts as alice.
    const mallory = join(tmp.dir, "mallory");
    renameSync(publishedKeyPath(root, "alice"), join(tmp.dir, "alice.pub"));
    await createIdentity(place(mallory), "alice");
    await (await open(mallory)).post("review", { from: "alice", body: "fake" });
    const got = await trustOf();
    expect(got.map((m) => m.trust)).toEqual(["verified", "forged"]);
    expect(got[1]!.trustNote).toContain("not alice's pinned key");
    expect(warnings.filter((w) => w.includes("attempted key change for alice"))).toHaveLength(1);
  });

  it("rotation: a reader that pinned the old key follows the rotation the old key signed", async () => {
    const s = await open(aliceConfig);
    await s.post("review", { from: "alice", body: "old key" });
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified"]);
    await rotateIdentity(place(aliceConfig), "alice");
    await (await open(aliceConfig)).post("review", { from: "alice", body: "new key" });
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified", "verified"]);
    expect(warnings).toEqual([]);
  });

  const badKeyFiles: Array<[string, () => void]> = [
    ["a symbolic link", () => symlinkLike()],
    ["huge", () => writeFileSync(publishedKeyPath(root, "alice"), " ".repeat(200_000))],
    ["corrupt", () => writeFileSync(publishedKeyPath(root, "alice"), "{not json")],
  ];
  function symlinkLike(): void {
    const target = join(tmp.dir, "elsewhere.pub");
    renameSync(publishedKeyPath(root, "alice"), target);
    symlinkSync(target, publishedKeyPath(root, "alice"));
  }
  it.each(badKeyFiles)(
    "a published key file that is %s is ignored with one warning; the pin decides",
    async (_, spoil) => {
      await (await open(aliceConfig)).post("review", { from: "alice", body: "a" });
      await (await open(aliceConfig)).post("review", { from: "alice", body: "b" });
      spoil();
      // Alice's own machine pinned her key at id new: both verify, one warning for the file.
      const s = await open(aliceConfig);
      expect((await s.peek("review")).map((m) => m.trust)).toEqual(["verified", "verified"]);
      expect((await s.peek("review")).map((m) => m.trust)).toEqual(["verified", "verified"]);
      expect(warnings.filter((w) => w.includes(".keys"))).toHaveLength(1);
    },
  );

  it("with no published key (a NATS root, say) the first good signature is pinned", async () => {
    await (await open(aliceConfig)).post("review", { from: "alice", body: "first" });
    renameSync(publishedKeyPath(root, "alice"), join(tmp.dir, "gone.pub"));
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified"]);
    const mallory = join(tmp.dir, "mallory");
    await createIdentity(place(mallory), "alice");
    await (await open(mallory)).post("review", { from: "alice", body: "second" });
    expect((await trustOf()).map((m) => m.trust)).toEqual(["verified", "forged"]);
  });
});

describe("chat.py shares a signed channel", () => {
  const STANDIN = resolve(import.meta.dirname, "../../bench/reference/chat_standin.py");

  it("the reference reads signed messages; its own posts show as unsigned, not forged", async () => {
    await (await open(aliceConfig)).post("review", { from: "alice", body: "signed by alice" });
    const env = { ...process.env, AGENT_CHAT_ROOT: root };
    execFileSync("python3", [STANDIN, "post", "review", "--from", "bob", "--body", "from py"], {
      env,
    });
    await referencePost(join(root, "review"), { from: "carol", title: "t", body: "also py" });
    const out = execFileSync("python3", [STANDIN, "read", "review", "--as", "dave"], {
      env,
      encoding: "utf8",
    });
    expect(out).toContain("signed by alice");
    expect(out).toContain("from py");
    const got = await trustOf();
    expect(got.map((m) => [m.from, m.trust])).toEqual([
      ["alice", "verified"],
      ["bob", "unsigned"],
      ["carol", "unsigned"],
    ]);
  });
});

describe("the root stays clean", () => {
  it("a key folder in the root is no channel and no message", async () => {
    mkdirSync(join(root, ".keys", "x"), { recursive: true });
    const s = await open(readerConfig);
    expect((await s.channels()).map((c) => c.name)).toEqual(["review"]);
  });
});
