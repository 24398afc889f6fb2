import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import type { ChannelDump, NatsStore } from "../../src/store/nats/nats-store.js";
import { exportNamespace } from "../../src/store/transfer.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * A NATS namespace is shared like a folder root: any peer can store a task record or a cursor
 * key. The export must only ever write SPEC folder names inside the folder it exports to.
 */
let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
  mkdirSync(join(tmp.dir, "a", "sentinel"), { recursive: true });
  mkdirSync(join(tmp.dir, "a", "b", "export"), { recursive: true });
});
afterEach(() => tmp.cleanup());

/** Just what exportNamespace asks of a NATS store, serving one hostile channel. */
function storeWith(dump: Partial<ChannelDump>): NatsStore {
  const full: ChannelDump = {
    name: "ch",
    metaText: '{"channel":"ch","members":[],"topic":"","created":""}',
    messages: [],
    cursors: {},
    tasks: [],
    ...dump,
  };
  return { channels: async () => [{ name: "ch" }], dump: async () => full } as unknown as NatsStore;
}

describe("export of a namespace a peer wrote into", () => {
  const hostile: Array<[string, Partial<ChannelDump>]> = [
    [
      "a task holder that climbs out",
      { tasks: [{ file: "task-1.CLAIMED-../../../../sentinel/x.md", text: "x" }] },
    ],
    [
      "a message file name with a separator",
      { messages: [{ seq: 1, file: "0001-a/../../x.md", text: "x" }] },
    ],
    ["a cursor agent that climbs out", { cursors: { "../../../../sentinel/c": 1 } }],
  ];
  for (const [what, dump] of hostile) {
    it(`${what}: refused, nothing written outside the export folder`, async () => {
      const out = join(tmp.dir, "a", "b", "export");
      const err = await exportNamespace(storeWith(dump), out).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentChatError);
      expect((err as AgentChatError).message).toMatch(/not a SPEC folder name/);
      expect(readdirSync(join(tmp.dir, "a", "sentinel"))).toEqual([]);
      expect(readdirSync(out)).toEqual([]);
    });
  }
});
