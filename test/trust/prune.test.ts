import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openStore } from "../../src/client/open.js";
import type { Store } from "../../src/store/types.js";
import { tempDir } from "../helpers/tmp.js";
import { trustBackends } from "./backends.js";

const DAY = 24 * 3_600_000;
/** The stores below live 40 days after the cursors were written: a channel quiet that long. */
const later = () => Date.now() + 40 * DAY;

/**
 * Prune never removes the state of an agent that is there (docs/search.md, "Prune"): a wait
 * parked on a channel quiet for weeks leaves an old cursor and a fresh presence record; its
 * cursor stays, and the wait is given only what is new.
 */
for (const backend of trustBackends()) {
  describe.skipIf(backend.skip !== undefined)(
    `prune and a live agent, ${backend.name}${backend.skip ? ` (${backend.skip})` : ""}`,
    () => {
      const opened: Store[] = [];
      afterEach(async () => {
        for (const s of opened.splice(0)) await s.close();
        await backend.close();
      });
      const open = async (root: string, now?: () => number) => {
        const s = await openStore(root, now ? { now } : {});
        opened.push(s);
        return s;
      };

      it("keeps the cursor of a parked agent; its wait is given only the new message", async () => {
        const { root } = await backend.make();
        const today = await open(root);
        await today.init("quiet");
        for (let i = 1; i <= 4; i++) await today.post("quiet", { from: "alice", body: `#${i}` });
        await today.read("quiet", { as: "bob" });
        await today.read("quiet", { as: "carol" }); // carol then leaves for good

        const bob = await open(root, later);
        const waiting = bob.wait(["quiet"], { as: "bob", timeoutMs: 30_000 });
        const pruner = await open(root, later);
        await vi.waitFor(
          async () => {
            const who = await pruner.who("quiet");
            expect(who.find((p) => p.agent === "bob")?.state).toBe("waiting");
          },
          { timeout: 15_000, interval: 20 },
        );
        const pruned = await pruner.retention!.prune({ olderThanMs: 30 * DAY });
        expect(pruned.removed.map((r) => r.agent)).toEqual(["carol"]);
        const gone = pruned.presence.map((p) => p.agent);
        expect(gone).toContain("carol");
        expect(gone).not.toContain("bob");

        await today.post("quiet", { from: "alice", body: "#5" });
        expect((await waiting).messages.map((m) => m.seq)).toEqual([5]);
      });

      it("keeps the cursor of an agent seen lately that read nothing new", async () => {
        const { root } = await backend.make();
        const today = await open(root);
        await today.init("quiet");
        await today.post("quiet", { from: "alice", body: "#1" });
        await today.read("quiet", { as: "bob" });
        const bob = await open(root, later);
        await bob.read("quiet", { as: "bob" }); // nothing new: the cursor stays as it was
        const pruned = await (await open(root, later)).retention!.prune({ olderThanMs: 30 * DAY });
        expect(pruned.removed).toEqual([]);
        expect((await bob.read("quiet", { as: "bob" })).messages).toEqual([]);
      });
    },
  );
}

describe("a cursor removed under a parked wait, folder store", () => {
  it("the wait still gives only what is new: it never goes below the cursor it started from", async () => {
    const tmp = tempDir();
    const store = await openStore(tmp.dir);
    try {
      await store.init("quiet");
      for (let i = 1; i <= 4; i++) await store.post("quiet", { from: "alice", body: `#${i}` });
      await store.read("quiet", { as: "bob" });
      const waiting = store.wait(["quiet"], { as: "bob", timeoutMs: 30_000 });
      await vi.waitFor(
        async () => {
          const who = await store.who("quiet");
          expect(who.find((p) => p.agent === "bob")?.state).toBe("waiting");
        },
        { timeout: 15_000, interval: 20 },
      );
      rmSync(join(tmp.dir, "quiet", ".cursors", "bob.txt")); // by hand, or an older prune
      await store.post("quiet", { from: "alice", body: "#5" });
      expect((await waiting).messages.map((m) => m.seq)).toEqual([5]);
    } finally {
      await store.close();
      tmp.cleanup();
    }
  });
});
