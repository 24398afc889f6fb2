import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// `task update` on chat.py 0.7.5's task records, on one root with the real reference: the
// fields it changes, the refusals it makes (its error codes), and its task.updated message.
const skip = referenceSkipReason("0.7");

describe.skipIf(skip !== undefined)(
  `task update with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ref = (...args: string[]) => runReference("0.7", root.dir, args);
    const channel = () => join(root.dir, "dev");
    const record = (id: string) => readFileSync(join(channel(), "tasks", `${id}.json`), "utf8");
    /** The fields an update changed; `updated_at` is among them unless it ran in the same second. */
    const changed = (body: Record<string, unknown>) =>
      (body.changed_fields as string[]).filter((f) => f !== "updated_at");
    const updates = () =>
      readdirSync(channel())
        .filter((f) => /^\d+-.*task-updated/.test(f))
        .sort()
        .map((f) => readFileSync(join(channel(), f), "utf8"))
        .map((text) => ({
          from: /\nfrom: (.*)\n/.exec(text)?.[1],
          body: JSON.parse(text.slice(text.indexOf("\n---\n") + 5)) as Record<string, unknown>,
        }));

    beforeEach(() => {
      root = tempDir();
      expect(ref("init", "dev").status).toBe(0);
      expect(
        ref("task", "create", "dev", "T1", "--from", "alice", "--title", "Schema").status,
      ).toBe(0);
      expect(
        ref(
          "task",
          "create",
          "dev",
          "T2",
          "--from",
          "alice",
          "--title",
          "Docs",
          "--depends-on",
          "T1",
        ).status,
      ).toBe(0);
    });
    afterEach(() => root.cleanup());

    it("changes chat.py's fields as its own update does, and chat.py reads the result", async () => {
      const r = await cli(
        "task",
        "update",
        "dev",
        "T1",
        "--as",
        "alice",
        "--title",
        "Schema v2",
        "--files-hint",
        "src/b.ts,src/a.ts",
        "--acceptance",
        "typed",
        "--acceptance",
        "documented",
        "--owner",
        "bob",
        "--branch",
        "feat/schema",
      );
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe("updated task T1 [open]\n");
      const shown = ref("task", "show", "dev", "T1");
      expect(shown.status).toBe(0);
      expect(shown.stdout).toContain("title: Schema v2\n");
      expect(shown.stdout).toContain("owner: bob\n");
      expect(shown.stdout).toContain("files_hint: src/b.ts, src/a.ts\n");
      expect(shown.stdout).toContain("acceptance: typed; documented\n");
      expect(shown.stdout).toContain("branch: feat/schema\n");
      // chat.py's update of the same task, then ours clearing what it set: same message shape.
      expect(ref("task", "update", "dev", "T1", "--as", "bob", "--title", "Schema v3").status).toBe(
        0,
      );
      expect(
        (await cli("task", "update", "dev", "T1", "--as", "bob", "--clear-owner", "--clear-branch"))
          .code,
      ).toBe(0);
      const record1 = JSON.parse(record("T1"));
      expect(record1).toMatchObject({ title: "Schema v3", owner: null, branch: null });
      const [ours, theirs, ours2] = updates();
      expect(changed(ours2!.body)).toEqual(["branch", "owner"]);
      expect(Object.keys(ours!.body)).toEqual(Object.keys(theirs!.body));
      expect(ours!.from).toBe("alice");
      expect(changed(ours!.body)).toEqual(["acceptance", "branch", "files_hint", "owner", "title"]);
      expect(ours2!.body).toMatchObject({
        event: "task.updated",
        task_id: "T1",
        previous_status: "open",
      });
      // The update stamps chat.py's kind of time, which its own validation accepts.
      expect(ref("task", "list", "dev").status).toBe(0);
    });

    it("refuses what chat.py refuses, with its codes, and changes nothing", async () => {
      expect((await cli("task", "claim", "dev", "T1", "--as", "bob")).code).toBe(0);
      const cases: { args: string[]; code: string; exit: number }[] = [
        { args: ["T1", "--as", "bob"], code: "TASK_INVALID_UPDATE", exit: 64 },
        { args: ["T1", "--as", "carol", "--title", "x"], code: "LEASE_OWNER_MISMATCH", exit: 3 },
        {
          args: ["T1", "--as", "bob", "--owner", "carol"],
          code: "LEASE_MUTATION_REQUIRED",
          exit: 3,
        },
        {
          args: ["T1", "--as", "bob", "--status", "done"],
          code: "LEASE_MUTATION_REQUIRED",
          exit: 3,
        },
        {
          args: ["T1", "--as", "bob", "--depends-on", "T2"],
          code: "TASK_DEPENDENCY_CYCLE",
          exit: 64,
        },
        {
          args: ["T2", "--as", "bob", "--depends-on", "T9"],
          code: "TASK_UNKNOWN_DEPENDENCY",
          exit: 64,
        },
        {
          args: ["T2", "--as", "bob", "--files-hint", "../etc"],
          code: "TASK_PATH_OUTSIDE_WORKSPACE",
          exit: 64,
        },
        {
          args: ["T2", "--as", "bob", "--status", "in_progress"],
          code: "TASK_DEPENDENCY_NOT_READY",
          exit: 3,
        },
        {
          args: ["T2", "--as", "bob", "--status", "paused"],
          code: "TASK_INVALID_STATUS",
          exit: 64,
        },
        { args: ["T9", "--as", "bob", "--title", "x"], code: "TASK_NOT_FOUND", exit: 1 },
      ];
      const before = [record("T1"), record("T2"), updates().length];
      for (const c of cases) {
        const theirs = ref("task", "update", "dev", ...c.args);
        expect(theirs.status, c.args.join(" ")).toBe(2);
        expect(theirs.stderr, c.args.join(" ")).toContain(c.code);
        const ours = await cli("task", "update", "dev", ...c.args);
        expect(ours.stderr, c.args.join(" ")).toContain(c.code);
        expect(ours.code, c.args.join(" ")).toBe(c.exit);
      }
      expect([record("T1"), record("T2"), updates().length]).toEqual(before);
      // A final status stays final: cancelled never reopens.
      expect(
        (await cli("task", "update", "dev", "T2", "--as", "bob", "--status", "cancelled")).code,
      ).toBe(0);
      const reopen = await cli("task", "update", "dev", "T2", "--as", "bob", "--status", "open");
      expect(reopen.stderr).toContain("TASK_INVALID_TRANSITION");
      expect(
        ref("task", "update", "dev", "T2", "--as", "bob", "--status", "open").stderr,
      ).toContain("TASK_INVALID_TRANSITION");
    });

    it("the holder's update keeps the lease, which both still honour", async () => {
      expect(ref("task", "claim", "dev", "T1", "--from", "bob").status).toBe(0);
      const claim = readFileSync(join(channel(), "claims", "T1.bob.json"), "utf8");
      const r = await cli(
        "task",
        "update",
        "dev",
        "T1",
        "--as",
        "bob",
        "--title",
        "Schema, reworked",
      );
      expect(r.code).toBe(0);
      expect(r.stdout).toBe("updated task T1 [in_progress]\n");
      expect(readFileSync(join(channel(), "claims", "T1.bob.json"), "utf8")).toBe(claim);
      expect(ref("task", "renew", "dev", "T1", "--from", "bob").status).toBe(0);
      expect(ref("task", "claim", "dev", "T1", "--from", "carol").stderr).toContain(
        "LEASE_CONFLICT",
      );
      expect(
        (await cli("task", "update", "dev", "T1", "--as", "carol", "--title", "mine")).code,
      ).toBe(3);
    });
  },
);
