import { afterEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { trustBackends } from "./backends.js";

/**
 * Loop guards count only what the channel's policy delivers (docs/signatures.md, "Loop
 * guards"): under `signatures: require`, files written under a member's name without its
 * signature never pause that member, while its own signed posts still do.
 */
for (const backend of trustBackends()) {
  describe.skipIf(backend.skip !== undefined)(
    `loop guards under require, ${backend.name}${backend.skip ? ` (${backend.skip})` : ""}`,
    () => {
      afterEach(() => backend.close());

      async function setup(limits: Record<string, number>) {
        const r = await backend.make();
        await r.key("alice", "alice");
        const alice = await r.as("alice");
        await alice.init("ops", {
          members: ["alice", "bob"],
          extra: { signatures: "require", ...limits },
        });
        return { alice, raw: await r.raw() };
      }

      const code = (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          (e: unknown) => (e instanceof AgentChatError ? e.code : String(e)),
        );

      it("32 unsigned look-alikes from alice do not trip the rate limit; her own posts still do", async () => {
        const { alice, raw } = await setup({ post_rate_limit: 5 });
        for (let i = 0; i < 32; i++) await raw.post("ops", { from: "alice", body: `fake ${i}` });
        for (let i = 0; i < 5; i++) {
          expect(
            await code(alice.post("ops", { from: "alice", body: `real ${i}` })),
          ).toBeUndefined();
        }
        expect(await code(alice.post("ops", { from: "alice", body: "one too many" }))).toBe(
          "PAUSED",
        );
      });

      it("a pause written into _meta.json by hand binds no one; the one alice's guard signs does", async () => {
        const { alice, raw } = await setup({ post_rate_limit: 3 });
        const forged = { since: "2026-01-01T00:00:00+00:00", reason: "mallory says so" };
        await raw.updateMeta!("ops", (m) => ({ ...m, paused: { alice: forged } }));
        expect(
          await code(alice.post("ops", { from: "alice", body: "still here" })),
        ).toBeUndefined();
        for (let i = 0; i < 2; i++) await alice.post("ops", { from: "alice", body: `real ${i}` });
        expect(await code(alice.post("ops", { from: "alice", body: "a loop" }))).toBe("PAUSED");
        const pause = ((await alice.roster("ops")).paused as Record<string, { sig?: string }>)
          .alice;
        expect(pause?.sig).toMatch(/^ed25519:/);
        expect(await code(alice.post("ops", { from: "alice", body: "again" }))).toBe("PAUSED");
      });

      it("an unsigned ping-pong between alice and bob does not pause alice", async () => {
        const { alice, raw } = await setup({ ping_pong_limit: 4 });
        for (let i = 0; i < 8; i++) {
          await raw.post("ops", { from: i % 2 ? "bob" : "alice", body: `fake ${i}` });
        }
        expect(await code(alice.post("ops", { from: "alice", body: "real" }))).toBeUndefined();
        expect((await alice.roster("ops")).paused).toBeUndefined();
      });
    },
  );
}
