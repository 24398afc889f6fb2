import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// chat.py 0.7.5's `locks/*.json` on a root shared with ours: one spelling per path, and the
// records as chat.py leaves them are the truth, never written back from our own list.
const skip = referenceSkipReason("0.7");

describe.skipIf(skip !== undefined)(
  `chat.py 0.7's lock records are the truth${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ref = (...args: string[]) => runReference("0.7", root.dir, args);
    const record = (id: string) => join(root.dir, "dev", "locks", `${id}.json`);
    const readRecord = (id: string) =>
      JSON.parse(readFileSync(record(id), "utf8")) as {
        owner: string;
        paths: Array<{ normalized_path: string }>;
      };

    beforeEach(async () => {
      root = tempDir();
      expect((await cli("init", "dev")).code).toBe(0);
    });
    afterEach(() => root.cleanup());

    it("our lock's record is its truth: edited to expire, it ends ours; planted, it grants nothing", async () => {
      const edit = (id: string, change: Record<string, unknown>) => {
        const r = JSON.parse(readFileSync(record(id), "utf8"));
        writeFileSync(record(id), `${JSON.stringify({ ...r, ...change }, null, 2)}\n`);
      };
      const json = async () =>
        JSON.parse((await cli("--json", "leases", "dev")).stdout).leases as Array<{
          holder: string;
          owner?: string;
          state: string;
          expiresAt: string;
          lock?: string;
        }>;
      expect((await cli("lock", "dev", "src/a.ts", "--as", "alice", "--ttl", "60")).code).toBe(0);
      const [granted] = await json();
      // A record moved later, or naming another owner, gives no one anything: ours keeps alice's
      // lease as it was, and mallory may not unlock it through either CLI.
      edit("agent-chat-1", { owner: "mallory", expires_at: "2999-01-01T00:00:00+00:00" });
      expect(await json()).toEqual([granted]);
      const theirs = await cli("unlock", "dev", "src/a.ts", "--as", "mallory");
      expect(theirs.stderr).toMatch(/PATH_LOCK_OWNER_MISMATCH/);
      expect((await cli("lease", "add", "dev", "src/**", "--as", "mallory")).code).not.toBe(0);
      edit("agent-chat-1", { owner: "alice", expires_at: granted?.expiresAt });

      // Moved earlier, as chat.py's own tests end a lock: ours' lease ends with it, and the
      // record stays (an expired lock stays until recovered) for chat.py or ours to recover.
      edit("agent-chat-1", { expires_at: "2000-01-01T00:00:00+00:00" });
      expect((await json()).map((l) => [l.holder, l.state])).toEqual([["alice", "expired"]]);
      expect((await cli("lease", "renew", "dev", "src/a.ts", "--as", "alice")).code).not.toBe(0);
      expect(readRecord("agent-chat-1").owner).toBe("alice");
      const recovered = await cli(
        "recover",
        "dev",
        "agent-chat-1",
        "--as",
        "bob",
        "--reason",
        "gone",
      );
      expect(recovered.stdout).toBe(
        "recovered agent-chat-1 for bob previous_owner=alice reason=gone\n",
      );
      expect(ref("check", "dev", "src/a.ts").stdout).toMatch(/^locked agent-chat-1 owner=bob /);
    });

    it("`a//b` and `a/./b` are written as chat.py spells them, `a/b`, and its commands keep working", async () => {
      const leased = await cli("lease", "add", "dev", "src//a.ts", "--as", "bob");
      expect(leased.code, leased.stderr).toBe(0);
      expect((await cli("lock", "dev", "src/./b.ts", "--as", "bob")).code).toBe(0);
      expect(readRecord("agent-chat-1").paths[0]!.normalized_path).toBe("src/a.ts");
      expect(readRecord("agent-chat-2").paths[0]!.normalized_path).toBe("src/b.ts");
      const check = ref("check", "dev", "src/a.ts", "--as", "carol");
      expect(check.status, check.stderr).toBe(0);
      expect(check.stdout).toContain("agent-chat-1");
      expect(ref("state", "dev", "--strict").status).toBe(0);
      expect((await cli("lease", "add", "dev", "src/a.ts", "--as", "carol")).code).toBe(3);
      expect((await cli("lease", "add", "dev", "./src/b.ts/", "--as", "carol")).code).toBe(3);
    });

    it("a lease chat.py unlocked is over: the next change of ours never writes it back", async () => {
      expect((await cli("lease", "add", "dev", "src/a.ts", "--as", "bob")).code).toBe(0);
      const unlocked = ref("unlock", "dev", "agent-chat-1", "--as", "bob");
      expect(unlocked.status, unlocked.stderr).toBe(0);
      expect((await cli("post", "dev", "--from", "bob", "--body", "still here")).code).toBe(0);
      expect((await cli("lease", "add", "dev", "docs/x.md", "--as", "carol")).code).toBe(0);
      expect(existsSync(record("agent-chat-1"))).toBe(false);
      const leases = JSON.parse((await cli("--json", "leases", "dev")).stdout) as {
        leases: Array<{ pattern: string }>;
      };
      expect(leases.leases.map((l) => l.pattern)).toEqual(["docs/x.md"]);
      expect((await cli("lease", "add", "dev", "src/a.ts", "--as", "dave")).code).toBe(0);
    });

    it("a lock chat.py recovered stays its new owner's when the old holder is active again", async () => {
      expect(
        (await cli("lease", "add", "dev", "src/a.ts", "--as", "bob", "--ttl", "1s")).code,
      ).toBe(0);
      await vi.waitFor(
        () => {
          const recovered = ref(
            "recover",
            "dev",
            "agent-chat-1",
            "--as",
            "carol",
            "--reason",
            "gone",
          );
          expect(recovered.status, recovered.stderr).toBe(0);
        },
        { timeout: 15_000, interval: 200 },
      );
      // The old holder's activity renews its leases; none of them is this lock any more.
      expect((await cli("post", "dev", "--from", "bob", "--body", "back")).code).toBe(0);
      expect((await cli("lease", "add", "dev", "docs/x.md", "--as", "bob")).code).toBe(0);
      expect(readRecord("agent-chat-1").owner).toBe("carol");
      expect((await cli("lease", "add", "dev", "src/a.ts", "--as", "bob")).code).toBe(3);
    });

    it("an expired lock of ours stays, as chat.py's do, until it is recovered", async () => {
      expect(
        (await cli("lease", "add", "dev", "src/a.ts", "--as", "bob", "--ttl", "1s")).code,
      ).toBe(0);
      // Past its end and our skew grace: chat.py can recover it.
      await vi.waitFor(
        async () => {
          const list = JSON.parse((await cli("--json", "leases", "dev")).stdout) as {
            leases: Array<{ state: string }>;
          };
          expect(list.leases[0]?.state).toBe("expired");
        },
        { timeout: 15_000, interval: 200 },
      );
      expect((await cli("lease", "add", "dev", "docs/x.md", "--as", "carol")).code).toBe(0);
      expect(existsSync(record("agent-chat-1"))).toBe(true);
      const refused = ref("lock", "dev", "src/a.ts", "--as", "dave");
      expect(refused.stderr).toContain("PATH_LOCK_RECOVERY_REQUIRED");
    });

    it("--force never leaves two live records of one path: chat.py's unlock by path keeps working", async () => {
      expect((await cli("lease", "add", "dev", "src", "--as", "alice")).code).toBe(0);
      const theirs = ref("lock", "dev", "docs", "--as", "carol");
      expect(theirs.status, theirs.stderr).toBe(0);
      for (const path of ["src", "src/a.ts", "docs/x.md"]) {
        const forced = await cli("lease", "add", "dev", path, "--as", "bob", "--force");
        expect(forced.code).toBe(3);
        expect(forced.stderr).toMatch(/^agent-chat: PATH_LOCK_CONFLICT: .*not even with --force/);
      }
      // A shared lease is no record of chat.py's: forcing it over an exclusive one stays ours.
      const shared = await cli("lease", "add", "dev", "src", "--as", "bob", "--shared", "--force");
      expect(shared.code, shared.stderr).toBe(0);
      const unlocked = ref("unlock", "dev", "src", "--as", "alice");
      expect(unlocked.status, unlocked.stderr).toBe(0);
      expect(existsSync(record("agent-chat-1"))).toBe(false);
    });

    it("lease add and lease release post chat.py's path.locked and path.lock.unlocked for the record", async () => {
      const audits = () =>
        readdirSync(join(root.dir, "dev"))
          .filter((f) => /^\d+-/.test(f))
          .sort()
          .map((f) => readFileSync(join(root.dir, "dev", f), "utf8"))
          .filter((text) => /\nstatus: path\./.test(text))
          .map((text) => {
            const body = JSON.parse(text.slice(text.indexOf("\n---\n") + 5));
            return [/\nstatus: (.*)\n/.exec(text)?.[1], body.lock_id, body.owner, body.paths];
          });
      expect((await cli("lease", "add", "dev", "src/a.ts", "--as", "bob")).code).toBe(0);
      // A shared lease is no record of chat.py's: nothing to tell it.
      expect((await cli("lease", "add", "dev", "docs", "--as", "bob", "--shared")).code).toBe(0);
      expect((await cli("lease", "release", "dev", "1", "--as", "bob")).code).toBe(0);
      const path = [{ display_path: "src/a.ts", kind: "file", normalized_path: "src/a.ts" }];
      expect(audits()).toEqual([
        ["path.locked", "agent-chat-1", "bob", path],
        ["path.lock.unlocked", "agent-chat-1", "bob", path],
      ]);
      expect(ref("state", "dev", "--strict").status).toBe(0);
    });
  },
);
