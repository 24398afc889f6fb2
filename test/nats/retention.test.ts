import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentChatError } from "../../src/core/errors.js";
import { messageFileName } from "../../src/core/message.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { runCli } from "../helpers/cli.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { tempDir } from "../helpers/tmp.js";

let counter = 0;
const ns = () => `r${process.pid}-${++counter}`;

/** Retention on NATS: export what is dropped into a SPEC folder, then purge (docs/search.md). */
describe.skipIf(natsSkipReason !== undefined)(
  `archive on NATS${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
  () => {
    let server: NatsServer;
    let tmp: ReturnType<typeof tempDir>;
    beforeAll(async () => {
      server = await NatsServer.start();
      tmp = tempDir();
    });
    afterAll(async () => {
      await server?.dispose();
      tmp?.cleanup();
    });

    async function channelOf(count: number) {
      const url = server.url(ns());
      const store = await NatsStore.open(url);
      await store.init("ch");
      for (let i = 1; i <= count; i++) {
        await store.post("ch", { from: "alice", title: `note ${i}`, body: `body ${i}` });
      }
      return { url, store };
    }

    it("exports, then purges; numbering goes on and cursors stay valid", async () => {
      const { url, store } = await channelOf(3);
      expect((await store.read("ch", { as: "bob" })).cursor).toBe(3);
      for (let i = 4; i <= 10; i++) {
        await store.post("ch", { from: "alice", title: `note ${i}`, body: `body ${i}` });
      }
      const out = join(tmp.dir, "export1");
      const result = await store.archive!("ch", { before: 8, exportTo: out });
      expect(result.moved).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(result.kept).toBe(10);
      await store.close();

      // The export is a SPEC folder: the folder store reads the dropped messages from it.
      const exported = new FsStore(out);
      const old = await exported.read("ch", { as: "x", all: true, peek: true });
      expect(old.messages.map((m) => [m.seq, m.body])).toEqual(
        [1, 2, 3, 4, 5, 6, 7].map((n) => [n, `body ${n}`]),
      );
      await exported.close();

      // A fresh client sees only what stayed, numbers on, and bob reads each message once.
      const again = await NatsStore.open(url);
      const all = await again.read("ch", { as: "carol", all: true, peek: true });
      expect(all.messages.map((m) => m.seq)).toEqual([8, 9, 10]);
      expect((await again.post("ch", { from: "alice", title: "next", body: "eleven" })).seq).toBe(
        11,
      );
      const bob = await again.read("ch", { as: "bob" }); // from its cursor, 3
      expect(bob.messages.map((m) => m.seq)).toEqual([8, 9, 10, 11]);
      await again.close();
    }, 30_000);

    it("a run stopped between export and purge loses nothing; running it again finishes", async () => {
      const { url, store } = await channelOf(6);
      const out = join(tmp.dir, "export2");
      const third = join(out, "ch", messageFileName(3, "alice", "note 3"));
      // Someone else's file where message 3 goes: 1 and 2 are exported, then archive stops
      // before purging anything (the state a crash between export and purge leaves).
      mkdirSync(join(out, "ch"), { recursive: true });
      writeFileSync(third, "not ours\n");
      const err = await store.archive!("ch", { before: 5, exportTo: out }).catch((e) => e);
      expect((err as AgentChatError).code).toBe("CHANNEL_EXISTS");
      const left = await store.read("ch", { as: "x", all: true, peek: true });
      expect(left.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      await store.close();

      rmSync(third);
      const again = await NatsStore.open(url);
      expect((await again.archive!("ch", { before: 5, exportTo: out })).moved).toEqual([
        1, 2, 3, 4,
      ]);
      const hot = await again.read("ch", { as: "x", all: true, peek: true });
      expect(hot.messages.map((m) => m.seq)).toEqual([5, 6]);
      await again.close();
      const exported = new FsStore(out);
      const old = await exported.read("ch", { as: "x", all: true, peek: true });
      expect(old.messages.map((m) => m.body)).toEqual(["body 1", "body 2", "body 3", "body 4"]);
      await exported.close();
    }, 30_000);

    it("is refused without an export folder, and a dry run purges nothing", async () => {
      const { store } = await channelOf(4);
      const err = await store.archive!("ch", { before: 3 }).catch((e) => e);
      expect((err as AgentChatError).code).toBe("INVALID_ARGUMENT");
      const dry = await store.archive!("ch", { before: 3, dryRun: true });
      expect([dry.moved, dry.dryRun]).toEqual([[1, 2], true]);
      const all = await store.read("ch", { as: "x", all: true, peek: true });
      expect(all.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
      await store.close();
    }, 30_000);

    it("the CLI archives on a nats:// root with --export, and says what is missing without it", async () => {
      const { url, store } = await channelOf(4);
      await store.close();
      const refused = await runCli(["archive", "ch", "--before", "3"], { root: url });
      expect(refused.code).toBe(64);
      expect(refused.stderr).toMatch(/--export DIR/);
      const out = join(tmp.dir, "export-cli");
      const done = await runCli(["archive", "ch", "--before", "3", "--export", out], { root: url });
      expect([done.code, done.stdout]).toEqual([
        0,
        `archived 2 message(s) of ch (#1…#2) into ${join(out, "ch")}; #4, the newest, stays\n`,
      ]);
      const peek = await runCli(["peek", "ch", "-n", "10"], { root: url });
      expect(peek.stdout).not.toMatch(/note 1\b/);
      expect(peek.stdout).toMatch(/note 3/);
    }, 30_000);

    it("prune removes the cursors and presence of agents not seen since a time, listing them", async () => {
      const { url, store } = await channelOf(2);
      const created = async (key: string) =>
        (
          await (store as unknown as { kv: { get(k: string): Promise<{ created: Date }> } }).kv.get(
            key,
          )
        ).created.getTime();
      await store.read("ch", { as: "old-bob" });
      const bob = await created("presence.old-bob");
      // The cut falls between the two agents' writes, by the server's own times: ann starts
      // once the clock has passed bob's last write.
      while (Date.now() < bob + 2) await new Promise((r) => setTimeout(r, 1));
      await store.read("ch", { as: "new-ann" });
      const ann = await created(`cursor.ch.new-ann`);
      expect(ann).toBeGreaterThan(bob);
      await store.close();
      const dayMs = 86_400_000;
      const at = (bob + ann) / 2 + 30 * dayMs;
      const later = await NatsStore.open(url, { now: () => at, recordPresence: false });
      try {
        const dry = await later.prune!({ olderThanMs: 30 * dayMs, dryRun: true });
        expect(dry.removed.map((r) => [r.channel, r.agent])).toEqual([["ch", "old-bob"]]);
        // alice posted the channel's messages before bob read them.
        expect(dry.presence.map((p) => p.agent).sort()).toEqual(["alice", "old-bob"]);
        expect(await later.cursor("ch", "old-bob")).toBe(2);
        const done = await later.prune!({ olderThanMs: 30 * dayMs });
        expect([done.removed.length, done.presence.length, done.dryRun]).toEqual([1, 2, false]);
        expect(await later.cursor("ch", "old-bob")).toBe(0);
        expect(await later.cursor("ch", "new-ann")).toBe(2);
        expect((await later.who("ch")).find((p) => p.agent === "old-bob")?.state).toBe(
          "never-seen",
        );
      } finally {
        await later.close();
      }
      const cli = await runCli(["prune", "--older-than", "0s", "--dry-run"], { root: url });
      expect([cli.code, cli.stdout]).toEqual([
        0,
        expect.stringMatching(/^would remove ch: new-ann \(last seen \d{4}-/),
      ]);
    }, 30_000);
  },
);
