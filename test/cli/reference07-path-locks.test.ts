import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceSkipReason, requireReference, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// Path locks on one root shared with the real chat.py 0.7.5 (PyPI): its `locks/*.json` hold
// our leases back, the git guard honours them, and its `lock`/`check` see our exclusive leases.
const skip = referenceSkipReason("0.7");

describe.skipIf(skip !== undefined)(
  `path locks with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ref = (...args: string[]) => runReference("0.7", root.dir, args);

    beforeEach(async () => {
      root = tempDir();
      expect((await cli("init", "dev")).code).toBe(0);
    });
    afterEach(() => root.cleanup());

    it("a chat.py lock refuses our overlapping lease, naming its owner; its owner's and others pass", async () => {
      const locked = ref("lock", "dev", "src/a.ts", "--as", "alice");
      expect(locked.status, locked.stderr).toBe(0);
      const lockId = /locked (\w+)/.exec(locked.stdout)?.[1] as string;

      const refused = await cli("lease", "add", "dev", "src/**", "--as", "bob");
      expect(refused.code).toBe(3);
      expect(refused.stderr).toContain(`alice holds src/a.ts (chat.py path lock ${lockId}`);

      expect((await cli("lease", "add", "dev", "docs/**", "--as", "bob")).code).toBe(0);
      expect((await cli("lease", "add", "dev", "src/**", "--as", "alice")).code).toBe(0);
      const list = JSON.parse((await cli("--json", "leases", "dev")).stdout) as {
        leases: Array<{ pattern: string; holder: string; lock?: string }>;
      };
      expect(list.leases).toContainEqual(
        expect.objectContaining({ pattern: "src/a.ts", holder: "alice", lock: lockId }),
      );
    });

    it("the git guard refuses a commit under a chat.py lock of another agent", async () => {
      expect(ref("lock", "dev", "src", "--as", "alice").status).toBe(0);
      const repo = join(root.dir, "repo");
      mkdirSync(join(repo, "src"), { recursive: true });
      const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "pipe" });
      git("init", "-q");
      writeFileSync(join(repo, "src", "x.ts"), "x\n");
      git("add", "-A");

      const carol = await cli("guard", "dev", "--as", "carol", "--dir", repo);
      expect(carol.code).toBe(3);
      expect(carol.stderr).toMatch(/src\/x\.ts: leased by alice \(src, chat\.py path lock \w+\)/);
      expect((await cli("guard", "dev", "--as", "alice", "--dir", repo)).code).toBe(0);
    });

    it("chat.py's lock and check see our exclusive leases, until they are released", async () => {
      expect((await cli("lease", "add", "dev", "src/store/**", "--as", "bob")).code).toBe(0);
      expect((await cli("lease", "add", "dev", "*.md", "--as", "bob", "--shared")).code).toBe(0);

      const refused = ref("lock", "dev", "src/store/fs.ts", "--as", "carol");
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain("PATH_LOCK_CONFLICT");
      const check = ref("check", "dev", "src", "--as", "carol");
      expect(check.status, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/locked agent-chat-1 owner=bob/);
      // A shared lease is not written as a chat.py lock (chat.py has no shared kind).
      expect(ref("lock", "dev", "README.md", "--as", "carol").status).toBe(0);

      expect((await cli("lease", "release", "dev", "1", "--as", "bob")).code).toBe(0);
      const granted = ref("lock", "dev", "src/store/fs.ts", "--as", "carol");
      expect(granted.status, granted.stderr).toBe(0);
    });

    it("a glob without a folder reserves the whole channel for chat.py", async () => {
      expect((await cli("lease", "add", "dev", "*.ts", "--as", "bob")).code).toBe(0);
      const refused = ref("lock", "dev", "deep/in/a.ts", "--as", "carol");
      expect(refused.stderr).toContain("PATH_LOCK_CONFLICT");
    });

    it("a renewed lease moves chat.py's expiry with it", async () => {
      expect((await cli("lease", "add", "dev", "src", "--as", "bob", "--ttl", "1m")).code).toBe(0);
      await cli("lease", "renew", "dev", "src", "--as", "bob", "--ttl", "2h");
      const check = ref("check", "dev", "src", "--as", "carol");
      const expires = Date.parse(/expires=(\S+)/.exec(check.stdout)?.[1] as string);
      expect(expires - Date.now()).toBeGreaterThan(3_600_000);
    });

    it("racing ours and chat.py's on one path: exactly one wins", async () => {
      const command = requireReference("0.7");
      const theirs = ["carol", "dave", "erin", "fay"].map(
        (who) =>
          new Promise<boolean>((resolve) =>
            execFile(command, ["--root", root.dir, "lock", "dev", "src/a.ts", "--as", who], (err) =>
              resolve(err === null),
            ),
          ),
      );
      const ours = ["gil", "hal", "ivy", "jon"].map(async (who) => {
        const r = await cli("lease", "add", "dev", "src/**", "--as", who);
        expect([0, 3], r.stderr).toContain(r.code);
        return r.code === 0;
      });
      const won = await Promise.all([...theirs, ...ours]);
      expect(won.filter(Boolean)).toHaveLength(1);
      expect(
        readdirSync(join(root.dir, "dev", "locks")).filter((n) => n.endsWith(".json")),
      ).toHaveLength(1);
    });

    it("a .path-locks.lock planted as a link is refused, and nothing is made where it points", async () => {
      const elsewhere = join(root.dir, "elsewhere.lock");
      symlinkSync(elsewhere, join(root.dir, "dev", ".path-locks.lock"));
      const r = await cli("lease", "add", "dev", "src/**", "--as", "bob");
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(".path-locks.lock");
      expect(existsSync(elsewhere)).toBe(false);
    });
  },
);
