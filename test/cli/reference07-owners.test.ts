import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// Owners in chat.py 0.7.5's records are written as the agent gave its name, so that chat.py
// knows the lease for that agent's own; and a refusal is chat.py's, code and exit status.
const skip = referenceSkipReason("0.7");

describe.skipIf(skip !== undefined)(
  `owners and refusals as chat.py 0.7 has them${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ref = (...args: string[]) => runReference("0.7", root.dir, args);

    beforeEach(async () => {
      root = tempDir();
      expect((await cli("init", "dev")).code).toBe(0);
      expect(ref("task", "create", "dev", "T1", "--from", "alice", "--title", "one").status).toBe(
        0,
      );
    });
    afterEach(() => root.cleanup());

    it("a lease ours grants to `Bob.Smith` is written so, and chat.py lets Bob.Smith renew it", async () => {
      const claimed = await cli("task", "claim", "dev", "T1", "--as", "Bob.Smith");
      expect(claimed.code, claimed.stderr).toBe(0);
      const claim = JSON.parse(
        readFileSync(join(root.dir, "dev", "claims", "T1.Bob.Smith.json"), "utf8"),
      );
      expect(claim.owner).toBe("Bob.Smith");
      const renewed = ref("task", "renew", "dev", "T1", "--as", "Bob.Smith");
      expect(renewed.status, renewed.stderr).toBe(0);
    });

    it("`task renew` of a task nobody leases is chat.py's LEASE_NOT_FOUND, exit 2", async () => {
      const theirs = ref("task", "renew", "dev", "T1", "--as", "bob");
      const ours = await cli("task", "renew", "dev", "T1", "--as", "bob");
      expect(theirs.stderr).toContain("LEASE_NOT_FOUND");
      expect(ours.stderr).toMatch(/^agent-chat: LEASE_NOT_FOUND: no active lease for task T1\n$/);
      expect(ours.code).toBe(theirs.status);
      expect(ours.code).toBe(2);
    });
  },
);
