import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { generateKeyPair } from "../../src/features/trust/ed25519.js";
import { readPublishedKey } from "../../src/features/trust/keys.js";
import { tempDir } from "../helpers/tmp.js";

describe("published keys in an untrusted root", () => {
  it("a `.keys` folder planted as a link is never read through", () => {
    const tmp = tempDir();
    try {
      const root = join(tmp.dir, "root");
      const outside = join(tmp.dir, "outside");
      mkdirSync(root);
      mkdirSync(outside);
      const doc = { name: "alice", keys: [generateKeyPair().key], rotations: [] };
      writeFileSync(join(outside, "alice.pub"), JSON.stringify(doc));

      symlinkSync(outside, join(root, ".keys"));
      const problems: string[] = [];
      expect(readPublishedKey(root, "alice", (p) => problems.push(p))).toBeUndefined();
      expect(problems.join("\n")).toMatch(/\.keys/);
    } finally {
      tmp.cleanup();
    }
  });
});
