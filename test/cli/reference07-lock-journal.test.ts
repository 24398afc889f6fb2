import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, until } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// Every change of a lock record of ours goes through chat.py 0.7's journal
// (`locks/.path-lock-transaction.json`), its audit message posted by the store inside it: a
// process killed between the record and its message leaves the journal, which chat.py's and
// our `recover-pending` settle alike, and no record change goes unannounced.
const skip = referenceSkipReason("0.7");

/** Runs the store worker that is SIGKILLed at the audit message of its change. */
function dyingChange(root: string, op: "lock" | "release", when: "no" | "posted") {
  const child = spawn(process.execPath, [
    "--import",
    "tsx",
    fileURLToPath(new URL("../helpers/dying-lock-change.ts", import.meta.url)),
    root,
    op,
    when,
  ]);
  let out = "";
  child.stdout.on("data", (d) => {
    out += String(d);
  });
  return new Promise<{ signal: NodeJS.Signals | null; out: string }>((resolve) =>
    child.once("exit", (_code, signal) => resolve({ signal, out })),
  );
}

describe.skipIf(skip !== undefined)(
  `our lock records change under chat.py's journal${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (dir: string, ...args: string[]) => runCli(args, { root: dir });
    const ref = (dir: string, ...args: string[]) => runReference("0.7", dir, args);
    const journal = (dir: string) => join(dir, "dev", "locks", ".path-lock-transaction.json");
    const records = (dir: string) => {
      const folder = join(dir, "dev", "locks");
      if (!existsSync(folder)) return {};
      return Object.fromEntries(
        readdirSync(folder)
          .filter((f) => !f.startsWith("."))
          .sort()
          .map((f) => [f, readFileSync(join(folder, f), "utf8")]),
      );
    };
    const audits = (dir: string) =>
      readdirSync(join(dir, "dev"))
        .filter((f) => /^\d+-/.test(f))
        .sort()
        .map((f) => readFileSync(join(dir, "dev", f), "utf8"))
        .filter((text) => /\nstatus: path\./.test(text))
        .map((text) => ({
          from: /\nfrom: (.*)\n/.exec(text)?.[1],
          status: /\nstatus: (.*)\n/.exec(text)?.[1],
          body: JSON.parse(text.slice(text.indexOf("\n---\n") + 5)) as Record<string, unknown>,
        }));
    const leases = async (dir: string) =>
      (
        JSON.parse((await cli(dir, "--json", "leases", "dev")).stdout).leases as Array<{
          holder: string;
          state: string;
        }>
      ).map((l) => [l.holder, l.state]);

    beforeEach(async () => {
      root = tempDir();
      expect((await cli(root.dir, "init", "dev", "--members", "bob,carol")).code).toBe(0);
    });
    afterEach(() => root.cleanup());

    it("lock and lease add post path.locked once, from the store, naming the journal's transaction", async () => {
      const locked = await cli(root.dir, "lock", "dev", "src/a.ts", "docs/**", "--as", "bob");
      expect(locked.code).toBe(0);
      expect((await cli(root.dir, "lease", "add", "dev", "lib/**", "--as", "carol")).code).toBe(0);
      const posted = audits(root.dir);
      expect(posted.map((a) => [a.status, a.from, a.body.lock_id])).toEqual([
        ["path.locked", "bob", "agent-chat-1"],
        ["path.locked", "carol", "agent-chat-3"],
      ]);
      for (const a of posted) {
        expect(a.body.transaction_id).toMatch(/^[0-9a-f]{32}$/);
      }
      expect(existsSync(journal(root.dir))).toBe(false);
      // chat.py's view: both locks, no pending change.
      expect(ref(root.dir, "check", "dev", "src/a.ts", "lib/x").stdout).toMatch(
        /^locked agent-chat-1 owner=bob .*\nlocked agent-chat-3 owner=carol /,
      );
    });

    it("recover of a shared lease chat.py never saw posts path.locked for the new record, once", async () => {
      const shared = await cli(
        root.dir,
        "lease",
        "add",
        "dev",
        "src/a.ts",
        "--shared",
        "--as",
        "bob",
        "--ttl",
        "1s",
      );
      expect(shared.code).toBe(0);
      let taken = shared;
      await until(async () => {
        taken = await cli(
          root.dir,
          "recover",
          "dev",
          "src/a.ts",
          "--as",
          "carol",
          "--reason",
          "gone",
        );
        return taken.code === 0;
      });
      expect(audits(root.dir).map((a) => [a.status, a.from, a.body.lock_id])).toEqual([
        ["path.locked", "carol", "agent-chat-2"],
      ]);
      expect(ref(root.dir, "check", "dev", "src/a.ts").stdout).toMatch(
        /^locked agent-chat-2 owner=carol /,
      );
    });

    for (const settler of ["chat.py", "ours"] as const) {
      it(`a lock killed before its path.locked leaves the journal; ${settler === "ours" ? "our" : "chat.py's"} recover-pending takes the record back`, async () => {
        const died = await dyingChange(root.dir, "lock", "no");
        expect(died).toEqual({ signal: "SIGKILL", out: "" });
        expect(existsSync(journal(root.dir))).toBe(true);
        expect(Object.keys(records(root.dir))).toEqual(["agent-chat-1.json"]);
        expect(audits(root.dir)).toEqual([]);
        // Both refuse lock changes until it is settled, as chat.py does after its own crash.
        expect(ref(root.dir, "lock", "dev", "lib", "--as", "carol").stderr).toMatch(
          /PATH_LOCK_TRANSACTION_PENDING/,
        );
        const refused = await cli(root.dir, "lock", "dev", "lib", "--as", "carol");
        expect(refused.stderr).toMatch(/PATH_LOCK_TRANSACTION_PENDING/);

        const settled =
          settler === "chat.py"
            ? ref(root.dir, "recover-pending", "dev", "--as", "fixer").status
            : (await cli(root.dir, "recover-pending", "dev", "--as", "fixer")).code;
        expect(settled).toBe(0);
        expect(existsSync(journal(root.dir))).toBe(false);
        // No silent record: the lock that was never announced is gone in both views.
        expect(records(root.dir)).toEqual({});
        expect(await leases(root.dir)).toEqual([]);
        expect(ref(root.dir, "check", "dev", "src/a.ts").stdout).toBe("available\n");
        expect((await cli(root.dir, "lock", "dev", "src/a.ts", "--as", "carol")).code).toBe(0);
      });

      it(`a lock killed after its path.locked leaves the journal; ${settler === "ours" ? "our" : "chat.py's"} recover-pending keeps the record`, async () => {
        const died = await dyingChange(root.dir, "lock", "posted");
        expect(died).toEqual({ signal: "SIGKILL", out: "" });
        expect(existsSync(journal(root.dir))).toBe(true);
        const settled =
          settler === "chat.py"
            ? ref(root.dir, "recover-pending", "dev", "--as", "fixer").status
            : (await cli(root.dir, "recover-pending", "dev", "--as", "fixer")).code;
        expect(settled).toBe(0);
        expect(existsSync(journal(root.dir))).toBe(false);
        expect(Object.keys(records(root.dir))).toEqual(["agent-chat-1.json"]);
        expect(audits(root.dir).map((a) => [a.status, a.body.lock_id])).toEqual([
          ["path.locked", "agent-chat-1"],
        ]);
        expect(await leases(root.dir)).toEqual([["bob", "live"]]);
        expect(ref(root.dir, "check", "dev", "src/a.ts").stdout).toMatch(
          /^locked agent-chat-1 owner=bob /,
        );
      });

      it(`a release killed before its path.lock.unlocked leaves the journal; ${settler === "ours" ? "our" : "chat.py's"} recover-pending puts the record back, a lock both honour`, async () => {
        expect((await cli(root.dir, "lock", "dev", "src/a.ts", "--as", "bob")).code).toBe(0);
        const held = records(root.dir);
        const died = await dyingChange(root.dir, "release", "no");
        expect(died).toEqual({ signal: "SIGKILL", out: "" });
        expect(existsSync(journal(root.dir))).toBe(true);
        expect(records(root.dir)).toEqual({});
        expect(audits(root.dir).map((a) => a.status)).toEqual(["path.locked"]);
        const settled =
          settler === "chat.py"
            ? ref(root.dir, "recover-pending", "dev", "--as", "fixer").status
            : (await cli(root.dir, "recover-pending", "dev", "--as", "fixer")).code;
        expect(settled).toBe(0);
        // The record is back as it was: bob's lock, for chat.py and for ours alike.
        expect(records(root.dir)).toEqual(held);
        expect(ref(root.dir, "check", "dev", "src/a.ts").stdout).toMatch(
          /^locked agent-chat-1 owner=bob /,
        );
        const theirs = await cli(root.dir, "lock", "dev", "src", "--as", "carol");
        expect(theirs.stderr).toMatch(/PATH_LOCK_CONFLICT/);
        // A change of ours to another lock never removes it silently; bob unlocks it, announced.
        expect((await cli(root.dir, "lock", "dev", "lib", "--as", "carol")).code).toBe(0);
        expect(Object.keys(records(root.dir))).toContain("agent-chat-1.json");
        expect((await cli(root.dir, "unlock", "dev", "agent-chat-1", "--as", "bob")).code).toBe(0);
        expect(ref(root.dir, "check", "dev", "src/a.ts").stdout).toBe("available\n");
        expect(audits(root.dir).map((a) => [a.status, a.body.lock_id])).toEqual([
          ["path.locked", "agent-chat-1"],
          ["path.locked", "agent-chat-2"],
          ["path.lock.unlocked", "agent-chat-1"],
        ]);
      });

      it(`a release killed after its path.lock.unlocked leaves the journal; ${settler === "ours" ? "our" : "chat.py's"} recover-pending keeps it released`, async () => {
        expect((await cli(root.dir, "lock", "dev", "src/a.ts", "--as", "bob")).code).toBe(0);
        const died = await dyingChange(root.dir, "release", "posted");
        expect(died).toEqual({ signal: "SIGKILL", out: "" });
        expect(existsSync(journal(root.dir))).toBe(true);
        const settled =
          settler === "chat.py"
            ? ref(root.dir, "recover-pending", "dev", "--as", "fixer").status
            : (await cli(root.dir, "recover-pending", "dev", "--as", "fixer")).code;
        expect(settled).toBe(0);
        expect(records(root.dir)).toEqual({});
        expect(await leases(root.dir)).toEqual([]);
        expect(audits(root.dir).map((a) => [a.status, a.from, a.body.lock_id])).toEqual([
          ["path.locked", "bob", "agent-chat-1"],
          ["path.lock.unlocked", "bob", "agent-chat-1"],
        ]);
      });
    }
  },
);
