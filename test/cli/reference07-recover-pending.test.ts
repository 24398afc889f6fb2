import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, until } from "../helpers/cli.js";
import { referenceCommand, referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// `task recover-pending` of ours on a lease change that died half-way, its journal left in
// claims/.lease-transaction.json: by ours (SIGKILLed) or by the real chat.py 0.7.5 (made to
// exit at its audit message). The same root copied, chat.py's recover-pending on one copy and
// ours on the other must leave the same files and post the same message.
const skip = referenceSkipReason("0.7");
const STUCK = fileURLToPath(new URL("./workers/stuck-claim.ts", import.meta.url));

/** chat.py claiming T1 for carol, exiting at its audit message (after posting it with `posted`). */
const DYING_CLAIM = `
import os, sys
from pathlib import Path
from agent_chat import lease_store, task_store
root, posted = Path(sys.argv[1]), sys.argv[2] == "posted"
post = task_store.TaskStore._post_event
def die(self, *args, **kwargs):
    if posted:
        post(self, *args, **kwargs)
    os._exit(9)
task_store.TaskStore._post_event = die
lease_store.LeaseStore(root / "dev", root=root).claim("T1", "carol", lease_seconds=300)
`;

describe.skipIf(skip !== undefined)(
  `task recover-pending with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    let copy: ReturnType<typeof tempDir>;
    const ours = (...args: string[]) => runCli(args, { root: root.dir });
    const journal = (dir: string) => join(dir, "dev", "claims", ".lease-transaction.json");
    /** What recovery leaves: the task record, the claim files, and the last message's body. */
    const outcome = (dir: string) => {
      const chan = join(dir, "dev");
      const last = readdirSync(chan)
        .filter((f) => /^\d+-/.test(f))
        .sort()
        .at(-1) as string;
      const text = readFileSync(join(chan, last), "utf8");
      const body = JSON.parse(text.slice(text.indexOf("\n---\n") + 5)) as Record<string, unknown>;
      delete body.updated_at;
      const claims = readdirSync(join(chan, "claims")).sort();
      return {
        task: JSON.parse(readFileSync(join(chan, "tasks", "T1.json"), "utf8")),
        claims: Object.fromEntries(
          claims.map((f) => [f, readFileSync(join(chan, "claims", f), "utf8")]),
        ),
        message: {
          title: /\ntitle: (.*)\n/.exec(text)?.[1],
          from: /\nfrom: (.*)\n/.exec(text)?.[1],
          body,
        },
      };
    };

    beforeEach(() => {
      root = tempDir();
      copy = tempDir();
      expect(runReference("0.7", root.dir, ["init", "dev"]).status).toBe(0);
      expect(
        runReference("0.7", root.dir, [
          "task",
          "create",
          "dev",
          "T1",
          "--from",
          "alice",
          "--title",
          "t",
        ]).status,
      ).toBe(0);
    });
    afterEach(() => {
      root.cleanup();
      copy.cleanup();
    });

    /** A claim of ours SIGKILLed at its audit message (before or after posting it). */
    async function oursDies(posted: boolean): Promise<void> {
      const args = ["--import", "tsx", STUCK, root.dir, "T1", "bob", ...(posted ? ["posted"] : [])];
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"] });
      const exited = new Promise((r) => child.once("exit", r));
      let said = "";
      child.stdout.on("data", (chunk: Buffer) => {
        said += chunk.toString();
      });
      await until(
        async () =>
          existsSync(journal(root.dir)) &&
          readFileSync(journal(root.dir), "utf8").includes('"applied"') &&
          (!posted || said.includes("posted\n")),
      );
      child.kill("SIGKILL");
      await exited;
    }

    function chatPyDies(posted: boolean): void {
      const python = join(dirname(referenceCommand("0.7") as string), "python");
      try {
        execFileSync(python, ["-c", DYING_CLAIM, root.dir, posted ? "posted" : "no"], {
          stdio: "ignore",
        });
      } catch (err) {
        expect((err as { status?: number }).status).toBe(9);
      }
      expect(existsSync(journal(root.dir))).toBe(true);
    }

    const cases = [
      { who: "ours", posted: false, kill: () => oursDies(false), recovery: "rollback" },
      { who: "ours", posted: true, kill: () => oursDies(true), recovery: "cleanup" },
      { who: "chat.py", posted: false, kill: async () => chatPyDies(false), recovery: "rollback" },
      { who: "chat.py", posted: true, kill: async () => chatPyDies(true), recovery: "cleanup" },
    ];
    for (const c of cases) {
      it(`mends a change of ${c.who} that died ${c.posted ? "after" : "before"} its message as chat.py does`, async () => {
        await c.kill();
        expect((await ours("task", "claim", "dev", "T1", "--as", "dave")).stderr).toContain(
          "LEASE_TRANSACTION_PENDING",
        );
        cpSync(root.dir, copy.dir, { recursive: true });
        const theirs = runReference("0.7", copy.dir, [
          "task",
          "recover-pending",
          "dev",
          "--as",
          "fixer",
        ]);
        expect(theirs.status, theirs.stderr).toBe(0);
        const r = await ours("--json", "task", "recover-pending", "dev", "--as", "fixer");
        expect(r.stderr).toBe("");
        expect(JSON.parse(r.stdout)).toEqual({
          channel: "dev",
          task: "T1",
          event: "lease.claimed",
          recovery: c.recovery,
        });
        expect(existsSync(journal(root.dir))).toBe(false);
        const mine = outcome(root.dir);
        const reference = outcome(copy.dir);
        expect(mine.task.status).toBe(c.posted ? "in_progress" : "open");
        // The task's stamp is kept from the change (cleanup) or from before it (rollback).
        expect(mine).toEqual(reference);
        // The channel takes lease changes again, both CLIs.
        const next = runReference("0.7", root.dir, [
          "task",
          "claim",
          "dev",
          "T1",
          "--from",
          "erin",
        ]);
        expect(next.stderr).not.toContain("LEASE_TRANSACTION_PENDING");
      });
    }

    it("refuses as chat.py refuses: nothing pending, a planted journal, a resolution out of place", async () => {
      const none = await ours("task", "recover-pending", "dev", "--as", "fixer");
      expect(none.code, "exit 2, as chat.py's").toBe(2);
      expect(none.stderr).toContain("LEASE_TRANSACTION_NOT_FOUND");
      expect(
        runReference("0.7", root.dir, ["task", "recover-pending", "dev", "--as", "fixer"]).stderr,
      ).toContain("LEASE_TRANSACTION_NOT_FOUND");

      chatPyDies(false);
      const good = readFileSync(journal(root.dir), "utf8");
      const before = readdirSync(join(root.dir, "dev")).sort();
      // Journals that would write outside the task's own files: refused, nothing touched.
      const planted = JSON.parse(good) as Record<string, unknown>;
      const evil = [
        { ...planted, task_file: "../escape.json" },
        {
          ...planted,
          claim_changes: [
            {
              file: "../../outside.json",
              previous: null,
              next: (planted.claim_changes as { next: string }[])[0]!.next,
            },
          ],
        },
        { ...planted, task_before: Buffer.from('{"id": "T1"}').toString("base64") },
      ];
      // A resolution is for a journal in phase applied only.
      const resolve = ["--resolve-publication", "published"];
      const attempts = [
        ...evil.map((j) => ({ j, extra: [] as string[] })),
        { j: { ...planted, phase: "prepared" }, extra: resolve },
      ];
      for (const { j, extra } of attempts) {
        writeFileSync(journal(root.dir), `${JSON.stringify(j)}\n`);
        const r = await ours("task", "recover-pending", "dev", "--as", "fixer", ...extra);
        const args = ["task", "recover-pending", "dev", "--as", "fixer", ...extra];
        const code = /^agent-chat: ([A-Z_]+):/.exec(
          runReference("0.7", root.dir, args).stderr,
        )?.[1];
        expect(code).toMatch(/^(LEASE_TRANSACTION_INVALID|TASK_REQUIRED_FIELD_MISSING)$/);
        expect(r.stderr).toContain(`agent-chat: ${code}:`);
        expect(r.code, "exit 2, as chat.py's").toBe(2);
        expect(
          existsSync(join(root.dir, "escape.json")) || existsSync(join(root.dir, "outside.json")),
        ).toBe(false);
        expect(readdirSync(join(root.dir, "dev")).sort()).toEqual(before);
      }
      writeFileSync(journal(root.dir), good);
      expect((await ours("task", "recover-pending", "dev", "--as", "fixer")).code).toBe(0);
    });
  },
);
