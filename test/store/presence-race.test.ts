import { describe, expect, it } from "vitest";
import { Delivery } from "../../src/features/delivery/delivery.js";
import type { DeliveryHost } from "../../src/features/delivery/host.js";
import { parsePresence } from "../../src/features/delivery/presence.js";
import type { Note } from "../../src/store/records/index.js";

/**
 * One agent's presence record, written by revision-checked read-modify-writes that may be slow
 * (a replicated write) and overlap: a wait's end, written after it answered, must never erase the
 * agent's next wait, parked meanwhile; a late heartbeat must never bring back a wait that ended.
 */
/** A presence store whose next write can be held back, as a slow replicated write is. */
function slowHost() {
  let note: Note | undefined;
  /** The next write to be held back until `release` (the others go on meanwhile). */
  let held: Promise<void> | undefined;
  let open = () => {};
  const host = {
    location: "/x",
    now: () => Date.now(),
    actor: { harness: "cli", host: "h", pid: 1 },
    recordPresence: true,
    readNote: async () => note,
    writeNote: async (_scope: string, _kind: string, name: string, text: string, seen: unknown) => {
      const gate = held;
      held = undefined;
      await gate;
      if ((note?.version ?? 0) !== (seen ?? 0)) return false;
      note = { name, text, version: (Number(note?.version) || 0) + 1 };
      return true;
    },
    warnOnce: () => {},
  } as unknown as DeliveryHost;
  return {
    host,
    hold: () => {
      held = new Promise<void>((r) => {
        open = r;
      });
    },
    release: () => open(),
    record: () => (note?.text ? parsePresence(note.text).record : undefined),
  };
}

describe("presence of one agent's back-to-back waits", () => {
  it("a wait's end written late keeps the next wait, parked meanwhile, on the record", async () => {
    const h = slowHost();
    const delivery = new Delivery(h.host);
    const end1 = await delivery.park("bob", ["team"]);
    h.hold();
    // The first wait answered; the write of its end is slow (held back).
    const ending = end1();
    // The agent's next wait parks at once, and its write lands first.
    const end2 = await delivery.park("bob", ["team"]);
    expect(h.record()).toHaveProperty("parked");
    h.release();
    await ending;
    expect(h.record()).toMatchObject({ agent: "bob", parked: { channels: ["team"] } });
    await end2();
    expect(h.record()).not.toHaveProperty("parked");
  });
});
