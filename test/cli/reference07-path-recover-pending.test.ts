import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceCommand, referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// `recover-pending` of ours on a path-lock change of the real chat.py 0.7.5 that died half-way
// (made to exit at its path.locked message): on copies of one root, ours and chat.py's leave
// the same locks/, and a planted journal cannot make ours write a lock of its choosing.
const skip = referenceSkipReason("0.7");

const DYING_LOCK = `
import os, sys
from pathlib import Path
from agent_chat import path_locks
root, posted = Path(sys.argv[1]), sys.argv[2] == "posted"
post = path_locks.PathLockStore._post_event
def die(self, *args, **kwargs):
    if posted:
        post(self, *args, **kwargs)
    os._exit(9)
path_locks.PathLockStore._post_event = die
path_locks.PathLockStore(root / "dev", root=root).lock("carol", ["src/a.py"], 300)
`;

describe.skipIf(skip !== undefined)(
  `path-lock recover-pending with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    let copy: ReturnType<typeof tempDir>;
    const ours = (...args: string[]) => runCli(args, { root: root.dir });
    const locks = (dir: string) => {
      const folder = join(dir, "dev", "locks");
      return Object.fromEntries(
        readdirSync(folder)
          .filter((f) => !f.startsWith("."))
          .sort()
          .map((f) => [f, readFileSync(join(folder, f), "utf8")]),
      );
    };
    const journal = () => join(root.dir, "dev", "locks", ".path-lock-transaction.json");

    function chatPyDies(posted: boolean): void {
      const python = join(dirname(referenceCommand("0.7") as string), "python");
      try {
        execFileSync(python, ["-c", DYING_LOCK, root.dir, posted ? "posted" : "no"], {
          stdio: "ignore",
        });
      } catch (err) {
        expect((err as { status?: number }).status).toBe(9);
      }
      expect(existsSync(journal())).toBe(true);
    }

    beforeEach(() => {
      root = tempDir();
      copy = tempDir();
      expect(runReference("0.7", root.dir, ["init", "dev"]).status).toBe(0);
    });
    afterEach(() => {
      root.cleanup();
      copy.cleanup();
    });

    for (const posted of [false, true]) {
      it(`mends a lock that died ${posted ? "after" : "before"} its message as chat.py does`, async () => {
        chatPyDies(posted);
        expect(
          runReference("0.7", root.dir, ["lock", "dev", "src/b.py", "--from", "bob"]).stderr,
        ).toContain("PATH_LOCK_TRANSACTION_PENDING");
        // Which locks hold is not known until it is mended: both checks refuse, exit 1.
        const theirCheck = runReference("0.7", root.dir, ["check", "dev", "src/b.py"]);
        expect([theirCheck.status, theirCheck.stderr]).toEqual([
          1,
          expect.stringContaining("PATH_LOCK_TRANSACTION_PENDING"),
        ]);
        const ourCheck = await ours("check", "dev", "src/b.py");
        expect([ourCheck.code, ourCheck.stderr], ourCheck.stderr).toEqual([
          1,
          expect.stringContaining("PATH_LOCK_TRANSACTION_PENDING"),
        ]);
        cpSync(root.dir, copy.dir, { recursive: true });
        expect(
          runReference("0.7", copy.dir, ["recover-pending", "dev", "--as", "fixer"]).status,
        ).toBe(0);
        const r = await ours("--json", "recover-pending", "dev", "--as", "fixer");
        expect(r.stderr).toBe("");
        expect(JSON.parse(r.stdout)).toMatchObject({
          channel: "dev",
          event: "path.locked",
          recovery: posted ? "cleanup" : "rollback",
        });
        expect(locks(root.dir)).toEqual(locks(copy.dir));
        expect(Object.keys(locks(root.dir))).toHaveLength(posted ? 1 : 0);
        const checked = await ours("check", "dev", "src/b.py");
        expect(checked.code, checked.stderr).toBe(0);
        expect(
          runReference("0.7", root.dir, ["lock", "dev", "src/b.py", "--from", "bob"]).status,
        ).toBe(0);
      });
    }

    it("nothing pending is no change; a planted journal writes nothing", async () => {
      const none = await ours("recover-pending", "dev", "--as", "fixer");
      expect(none.code).toBe(0);
      expect(none.stdout).toBe(
        "recovered pending path-lock transaction in dev (none was pending)\n",
      );
      chatPyDies(false);
      const planted = JSON.parse(readFileSync(journal(), "utf8")) as Record<string, unknown>;
      const forged = Buffer.from(
        JSON.stringify({
          lock_id: "other",
          channel: "dev",
          owner: "mallory",
          paths: [{ normalized_path: ".", display_path: ".", kind: "directory" }],
          expires_at: "2099-01-01T00:00:00+00:00",
          locked_at: "2026-01-01T00:00:00+00:00",
          updated_at: "2026-01-01T00:00:00+00:00",
          previous_owner: null,
          previous_expires_at: null,
          recovery_reason: null,
        }),
      ).toString("base64");
      const before = locks(root.dir);
      for (const j of [
        { ...planted, before: forged },
        { ...planted, target: "../../escape.json" },
      ]) {
        writeFileSync(journal(), `${JSON.stringify(j)}\n`);
        const r = await ours("recover-pending", "dev", "--as", "fixer");
        expect(r.code).toBe(1);
        expect(r.stderr).toContain("PATH_LOCK_TRANSACTION_INVALID");
        expect(locks(root.dir)).toEqual(before);
        expect(existsSync(journal())).toBe(true);
        expect(existsSync(join(root.dir, "escape.json"))).toBe(false);
      }
    });
  },
);
