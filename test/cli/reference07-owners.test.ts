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

    it("lock owners are compared as chat.py compares them: exactly, whoever made the lock", async () => {
      const mine = await cli("lock", "dev", "src", "--as", "Bob.Smith");
      expect(mine.code, mine.stderr).toBe(0);
      const record = JSON.parse(
        readFileSync(join(root.dir, "dev", "locks", "agent-chat-1.json"), "utf8"),
      );
      expect(record.owner).toBe("Bob.Smith");
      expect(ref("check", "dev", "src").stdout).toMatch(/^locked agent-chat-1 owner=Bob\.Smith /);
      expect((await cli("check", "dev", "src")).stdout).toMatch(
        /^locked agent-chat-1 owner=Bob\.Smith /,
      );
      // Another spelling of the name is another owner to chat.py: refused by both, alike.
      for (const other of ["bob.smith", "bob-smith", "BOB.SMITH"]) {
        const theirs = ref("unlock", "dev", "agent-chat-1", "--as", other);
        const ours = await cli("unlock", "dev", "agent-chat-1", "--as", other);
        expect(theirs.stderr).toContain("PATH_LOCK_OWNER_MISMATCH");
        expect(ours.stderr).toMatch(/^agent-chat: PATH_LOCK_OWNER_MISMATCH: /);
        expect(ours.code).toBe(theirs.status);
        const lease = await cli("lease", "release", "dev", "src", "--as", other);
        expect(lease.code, `${other}: ${lease.stdout}`).not.toBe(0);
      }
      // The name as given is accepted by both: chat.py unlocks ours, and ours its own.
      expect((await cli("lease", "renew", "dev", "src", "--as", "Bob.Smith")).code).toBe(0);
      const freed = ref("unlock", "dev", "agent-chat-1", "--as", "Bob.Smith");
      expect(freed.status, freed.stderr).toBe(0);

      // chat.py's lock of `Alice`: `alice` may neither unlock it nor lock over it, in either CLI.
      const id = /locked (\w+)/.exec(ref("lock", "dev", "lib", "--as", "Alice").stdout)?.[1];
      for (const run of [(...a: string[]) => Promise.resolve(ref(...a)), cli]) {
        const unlock = await run("unlock", "dev", id as string, "--as", "alice");
        expect(unlock.stderr).toContain("PATH_LOCK_OWNER_MISMATCH");
        const over = await run("lock", "dev", "lib/x", "--as", "alice");
        expect(over.stderr).toContain("PATH_LOCK_CONFLICT");
      }
      expect((await cli("lease", "add", "dev", "lib/**", "--as", "alice")).code).not.toBe(0);
      expect((await cli("unlock", "dev", id as string, "--as", "Alice")).code).toBe(0);
    });

    it("a task lease of `Bob` is not `bob`'s: both CLIs refuse the other spelling alike", async () => {
      expect((await cli("task", "claim", "dev", "T1", "--as", "Bob")).code).toBe(0);
      const theirs = ref("task", "renew", "dev", "T1", "--as", "bob");
      const ours = await cli("task", "renew", "dev", "T1", "--as", "bob");
      expect(theirs.stderr).toContain("LEASE_OWNER_MISMATCH");
      expect(ours.stderr).toContain("LEASE_OWNER_MISMATCH");
      expect(ours.code).toBe(theirs.status);
      expect((await cli("task", "renew", "dev", "T1", "--as", "Bob")).code).toBe(0);
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
