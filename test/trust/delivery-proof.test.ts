import { afterEach, describe, expect, it } from "vitest";
import type { AgentChatError } from "../../src/core/errors.js";
import { formatSigValue, readReceiptText } from "../../src/core/signature.js";
import { signerFor } from "../../src/features/trust/signing.js";
import { trustBackends } from "./backends.js";

/**
 * Delivery facts under `signatures: require` (docs/delivery.md): `answered` only from a reply
 * the addressee signed, `read` only from the addressee's signed read receipt. A member who
 * writes the root by hand (an unsigned reply under bob's name, bob's cursor moved, a receipt
 * signed with her own key) proves nothing to the sender.
 */
for (const backend of trustBackends()) {
  describe.skipIf(backend.skip !== undefined)(
    `delivery proofs under require, ${backend.name}${backend.skip ? ` (${backend.skip})` : ""}`,
    () => {
      afterEach(() => backend.close());

      async function setup() {
        const r = await backend.make();
        for (const name of ["alice", "bob", "mallory"]) await r.key(name, name);
        const alice = await r.as("alice");
        await alice.init("ops", {
          members: ["alice", "bob", "mallory"],
          extra: { signatures: "require" },
        });
        await alice.post("ops", { from: "alice", to: "bob", title: "Ready?", body: "ship?" });
        return { r, alice, bob: await r.as("bob"), raw: await r.raw() };
      }

      const stateOf = async (store: Awaited<ReturnType<typeof setup>>["alice"]) =>
        (await store.receipts("ops", 1)).addressees[0]!;

      it("an unsigned reply under bob's name and a moved cursor prove neither answered nor read", async () => {
        const { alice, raw } = await setup();
        await raw.post("ops", { from: "bob", to: "alice", replyTo: 1, body: "done (not bob)" });
        await raw.read("ops", { as: "bob" }); // moves bob's cursor, as writing .cursors/bob.txt does
        const receipt = await stateOf(alice);
        expect(receipt.state).toBe("stored");
        expect(receipt.unproven).toBe("answered");
        const why = (await alice.explain("ops", 1)).addressees[0]!.why;
        expect(why).toContain("nothing bob signed proves it");
        for (const state of ["read", "answered"] as const) {
          const err = await alice.waitFor("ops", 1, { state, timeoutMs: 300 }).catch((e) => e);
          expect((err as AgentChatError).code).toBe("TIMEOUT");
        }
      });

      it("bob's own read signs a receipt that proves read; his signed reply proves answered", async () => {
        const { alice, bob } = await setup();
        const waiting = alice.waitFor("ops", 1, { state: "read", timeoutMs: 20_000 });
        await bob.read("ops", { as: "bob" });
        expect((await waiting).addressees[0]).toMatchObject({ agent: "bob", state: "read" });
        expect((await stateOf(alice)).unproven).toBeUndefined();
        await bob.post("ops", { from: "bob", to: "alice", replyTo: 1, body: "shipped" });
        expect(await stateOf(alice)).toMatchObject({ state: "answered", answer: 2 });
      });

      it("a receipt signed with another key, or bob's receipt for another channel, is none", async () => {
        const { r, alice, bob, raw } = await setup();
        const mallory = (await signerFor(r.configDir("mallory"), "mallory"))!;
        const at = Date.now();
        const sign = (text: string) =>
          formatSigValue({ key: mallory.key, signature: mallory.sign(text) });
        await raw.attestRead!("ops", "bob", {
          seq: 1,
          at,
          sig: sign(readReceiptText("ops", "bob", 1, at, undefined)),
        });
        expect((await stateOf(alice)).state).toBe("stored");

        await alice.init("other", { members: ["alice", "bob"], extra: { signatures: "require" } });
        await alice.post("other", { from: "alice", to: "bob", body: "elsewhere" });
        await bob.read("other", { as: "bob" });
        const bobs = (await signerFor(r.configDir("bob"), "bob"))!;
        const copied = formatSigValue({
          key: bobs.key,
          signature: bobs.sign(readReceiptText("other", "bob", 1, at, undefined)),
        });
        await raw.attestRead!("ops", "bob", { seq: 1, at, sig: copied });
        expect((await stateOf(alice)).state).toBe("stored");
      });

      it("what bob owes counts only verified messages: no forged question, no forged answer", async () => {
        const { alice, raw } = await setup();
        await raw.post("ops", { from: "bob", to: "alice", replyTo: 1, body: "done (not bob)" });
        const q = { from: "alice", to: "bob", title: "Pay 1000?", body: "(not alice)" };
        await raw.post("ops", { ...q, status: "question" });
        const bob = (await alice.who("ops")).find((p) => p.agent === "bob");
        expect(bob?.owes).toEqual([1]);
        expect(bob?.unread).toBe(1);
      });

      it("without require, the cursor still counts (honest agents, chat.py readers)", async () => {
        const r = await backend.make();
        const alice = await r.as("alice");
        await alice.init("open", { members: ["alice", "bob"] });
        await alice.post("open", { from: "alice", to: "bob", body: "hi" });
        await (await r.raw()).read("open", { as: "bob" });
        expect((await alice.receipts("open", 1)).addressees[0]!.state).toBe("read");
      });
    },
  );
}
