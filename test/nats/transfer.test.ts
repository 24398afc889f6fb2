import { existsSync, readdirSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { runCli } from "../helpers/cli.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { tempDir } from "../helpers/tmp.js";

let counter = 0;
const ns = () => `x${process.pid}-${++counter}`;

/** Every file of a SPEC folder tree, by relative path, with its text. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[path.slice(dir.length + 1)] = readFileSync(path, "utf8");
  }
  return out;
}

describe.skipIf(natsSkipReason !== undefined)(
  `export and import between NATS and the SPEC folder${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
  () => {
    let server: NatsServer;
    const tmp = tempDir();
    beforeAll(async () => {
      server = await NatsServer.start();
    });
    afterAll(async () => {
      await server?.dispose();
      tmp.cleanup();
    });

    it("export writes the SPEC folder that the folder store reads as the same channel", async () => {
      const url = server.url(ns());
      const store = await NatsStore.open(url);
      await store.init("review", { members: ["alice", "bob"], topic: "schema v2" });
      await store.post("review", { from: "alice", title: "Re: schema: v2", body: "first\n\nbody" });
      await store.post("review", { from: "bob", to: "alice", body: "second", replyTo: 1 });
      await store.read("review", { as: "Bob" });
      await store.addTask("review", { title: "write tests", from: "alice" });
      await store.addTask("review", { id: "deploy", title: "ship it", from: "alice" });
      await store.claim("review", "deploy", "carol");
      await store.close();

      const dir = join(tmp.dir, "exported");
      const r = await runCli(["--json", "export", url, dir]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        channels: 1,
        messages: 2,
        cursors: 1,
        tasks: 2,
      });
      const files = tree(join(dir, "review"));
      expect(Object.keys(files).sort()).toEqual([
        ".cursors/bob.txt",
        ".seq",
        ".task-deploy.lease",
        "0001-alice-re-schema-v2.md",
        "0002-bob-second.md",
        "_meta.json",
        "task-1.md",
        "task-deploy.CLAIMED-carol.md",
      ]);
      expect(files[".cursors/bob.txt"]).toBe("2");
      expect(JSON.parse(files["_meta.json"]!)).toMatchObject({
        channel: "review",
        members: ["alice", "bob"],
        topic: "schema v2",
      });
      expect(files["0002-bob-second.md"]).toMatch(
        /^---\nseq: 2\nfrom: bob\nto: alice\nreply_to: 1\nchannel: review\nts: .+\nstatus: discussion\ntitle: second\n---\nsecond\n$/,
      );

      const fs = new FsStore(dir);
      const read = await fs.read("review", { as: "alice" });
      expect(read.messages.map((m) => [m.seq, m.from, m.body])).toEqual([[2, "bob", "second"]]);
      expect(await fs.cursor("review", "bob")).toBe(2);
      // The lease travels with the marker: the same holder, token and expiry on the folder.
      expect(
        (await fs.tasks("review")).map((t) => [t.id, t.state, t.holder ?? null, t.token ?? null]),
      ).toEqual([
        ["1", "open", null, null],
        ["deploy", "claimed", "carol", 1],
      ]);
      // The folder continues the numbering.
      expect((await fs.post("review", { from: "alice", body: "third" })).seq).toBe(3);
      await fs.close();

      const again = await runCli(["export", url, dir]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/already exists; export into an empty folder/);
    });

    it("import keeps sequence numbers, gaps, cursors and tasks; export gives the same files back", async () => {
      const src = join(tmp.dir, "source");
      const fs = new FsStore(src);
      await fs.init("ops", { topic: "on call" });
      for (let i = 1; i <= 5; i++) await fs.post("ops", { from: "alice", body: `note ${i}` });
      await fs.read("ops", { as: "bob" });
      await fs.addTask("ops", { title: "rotate keys", from: "alice" });
      await fs.claim("ops", "1", "bob");
      await fs.close();
      // A deleted message leaves a gap that the import must keep; a stray file is not imported.
      unlinkSync(join(src, "ops", "0003-alice-note-3.md"));
      rmSync(join(src, "ops", ".seq"));
      const stray = join(src, "ops", "2024-notes.md");
      await import("node:fs/promises").then((f) => f.writeFile(stray, "not a message"));
      const before = tree(join(src, "ops"));

      const url = server.url(ns());
      const r = await runCli(["import", src, url]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(
        /imported 1 channel\(s\), 4 message\(s\), 1 cursor\(s\), 1 task\(s\)/,
      );
      expect(r.stderr).toMatch(/2024-notes\.md: .*not imported/);

      const store = await NatsStore.open(url);
      const all = await store.read("ops", { as: "carol", all: true, peek: true });
      expect(all.messages.map((m) => m.seq)).toEqual([1, 2, 4, 5]);
      expect(await store.cursor("ops", "bob")).toBe(5);
      expect((await store.tasks("ops"))[0]).toMatchObject({ id: "1", holder: "bob" });
      expect((await store.post("ops", { from: "carol", body: "next" })).seq).toBe(6);

      const refused = await runCli(["import", src, url]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/channel ops already exists/);
      await store.close();

      const out = join(tmp.dir, "roundtrip");
      expect((await runCli(["export", url, out, "--channel", "ops"])).code).toBe(0);
      const after = tree(join(out, "ops"));
      for (const [file, text] of Object.entries(before)) {
        // Delivery records (when bob read) stay with the root they were made in (docs/delivery.md).
        if (file.startsWith(".receipts/")) continue;
        if (file === "2024-notes.md") expect(after[file]).toBeUndefined();
        else expect(after[file], file).toBe(text);
      }
      expect(Object.keys(after).filter((f) => f.startsWith("0006-"))).toHaveLength(1);
      expect(existsSync(join(out, "ops", "_meta.json"))).toBe(true);
    });

    it("refuses a root that is not a NATS URL, and an unreachable server, clearly", async () => {
      const bad = await runCli(["export", "/tmp/x", join(tmp.dir, "nowhere")]);
      expect(bad.code).toBe(64);
      expect(bad.stderr).toMatch(/expected a nats:\/\/host:port\/namespace URL/);
      const down = await runCli(["export", "nats://127.0.0.1:1/ns", join(tmp.dir, "nowhere")]);
      expect(down.code).toBe(1);
      expect(down.stderr).toMatch(/cannot connect to nats:\/\/127\.0\.0\.1:1: connection refused/);
    });
  },
);
