import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, until } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// Structured tasks and task leases on one root shared with the real chat.py 0.7.5 (PyPI): its
// `tasks/<id>.json` and `claims/<task>.<owner>.json`, in its formats, under its `_tasks.lock`.
const skip = referenceSkipReason("0.7");
const STUCK = fileURLToPath(new URL("./workers/stuck-claim.ts", import.meta.url));

interface Task {
  id: string;
  state: string;
  holder?: string;
  token?: number;
  file: string;
  structured?: { status: string; owner: string | null; dependsOn: string[] };
}

describe.skipIf(skip !== undefined)(
  `structured tasks with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ref = (...args: string[]) => runReference("0.7", root.dir, args);
    const channel = () => join(root.dir, "dev");
    const tasks = async () =>
      (JSON.parse((await cli("--json", "tasks", "dev")).stdout) as { tasks: Task[] }).tasks;
    /** The audit messages of the channel: status and JSON body, oldest first. */
    const audits = () =>
      readdirSync(channel())
        .filter((f) => /^\d+-/.test(f))
        .sort()
        .map((f) => readFileSync(join(channel(), f), "utf8"))
        .filter((text) => /\nstatus: (task|lease)\./.test(text))
        .map((text) => ({
          status: /\nstatus: (.*)\n/.exec(text)?.[1],
          body: JSON.parse(text.slice(text.indexOf("\n---\n") + 5)) as Record<string, unknown>,
        }));

    beforeEach(async () => {
      root = tempDir();
      expect((await cli("init", "dev")).code).toBe(0);
    });
    afterEach(() => root.cleanup());

    it("a lease chat.py granted to a capitalised name is its holder's through ours, no one else's (names compared exactly, as chat.py does)", async () => {
      expect(ref("task", "create", "dev", "T1", "--from", "alice", "--title", "one").status).toBe(
        0,
      );
      expect(ref("task", "claim", "dev", "T1", "--as", "Bob").status).toBe(0);
      for (const other of ["mallory", "bob-x", "Bob.", "bob", "BOB"]) {
        const refused = await cli("task", "renew", "dev", "T1", "--as", other);
        expect(refused.code, other).toBe(2);
        expect(refused.stderr).toContain("LEASE_OWNER_MISMATCH");
        expect(ref("task", "renew", "dev", "T1", "--as", other).stderr).toContain(
          "LEASE_OWNER_MISMATCH",
        );
      }
      const updated = await cli("task", "update", "dev", "T1", "--title", "mine", "--as", "Bob");
      expect(updated.code, updated.stderr).toBe(0);
      const renewed = await cli("task", "renew", "dev", "T1", "--as", "Bob");
      expect(renewed.code, renewed.stderr).toBe(0);
      // The claim stays chat.py's file of Bob, so chat.py's Bob still holds it.
      expect(readdirSync(join(channel(), "claims"))).toEqual(["T1.Bob.json"]);
      expect((await cli("task", "done", "dev", "T1", "--as", "Bob")).code).toBe(0);
      const shown = JSON.parse(readFileSync(join(channel(), "tasks", "T1.json"), "utf8"));
      expect(shown).toMatchObject({ status: "done", title: "mine", owner: null });
    });

    it("lists and claims chat.py's tasks; chat.py refuses to double-grant ours", async () => {
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

      const listed = await cli("tasks", "dev");
      expect(listed.stdout).toContain("tasks/T1\topen\tSchema");
      expect(listed.stdout).toContain("tasks/T2\topen\tDocs");

      const claimed = await cli("claim", "dev", "T1", "--as", "bob", "--ttl", "10m");
      expect(claimed.code, claimed.stderr).toBe(0);
      expect(claimed.stdout).toContain("claimed tasks/T1 in dev as bob (token 1, 10m left)");
      // A dependency not done: not claimable, by either.
      expect((await cli("claim", "dev", "T2", "--as", "bob")).stderr).toContain(
        "TASK_DEPENDENCY_NOT_READY",
      );

      const refused = ref("task", "claim", "dev", "T1", "--as", "carol");
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain("LEASE_CONFLICT: task T1 is leased by bob");
      const shown = ref("task", "show", "dev", "T1");
      expect(shown.stdout).toContain("status: in_progress");
      expect(shown.stdout).toContain("owner: bob");

      expect((await cli("renew", "dev", "T1", "--as", "bob", "--token", "1")).code).toBe(0);
      const other = await cli("done", "dev", "T1", "--as", "carol");
      expect(other.code).toBe(3);
      expect(other.stderr).toContain("LEASE_OWNER_MISMATCH");
      expect((await cli("done", "dev", "T1", "--as", "bob", "--token", "1")).code).toBe(0);
      expect(ref("task", "show", "dev", "T1").stdout).toContain("status: done");
      // T2 is ready now, to chat.py too; the listings agree.
      expect(ref("task", "claim", "dev", "T2", "--as", "carol").status).toBe(0);
      expect(await tasks()).toEqual([
        expect.objectContaining({ id: "T1", state: "done", file: "tasks/T1.json" }),
        expect.objectContaining({ id: "T2", state: "claimed", holder: "carol" }),
      ]);
      expect(ref("task", "list", "dev").status).toBe(0);
    });

    it("posts the audit messages chat.py posts, with the same JSON bodies", async () => {
      // chat.py's own claim and release, then ours: the bodies carry the same keys.
      expect(ref("task", "create", "dev", "A", "--from", "alice", "--title", "a").status).toBe(0);
      expect((await cli("task", "create", "dev", "B", "--title", "b", "--as", "alice")).code).toBe(
        0,
      );
      expect(ref("task", "claim", "dev", "A", "--as", "carol").status).toBe(0);
      expect((await cli("claim", "dev", "B", "--as", "bob")).code).toBe(0);
      expect(ref("task", "release", "dev", "A", "--as", "carol").status).toBe(0);
      expect((await cli("release", "dev", "B", "--as", "bob")).code).toBe(0);

      const [refCreated, ourCreated, refClaim, ourClaim, refRelease, ourRelease] = audits();
      const keys = (a?: { body: Record<string, unknown> }) => Object.keys(a?.body ?? {}).sort();
      expect(ourCreated?.status).toBe("task.created");
      expect(keys(ourCreated)).toEqual(keys(refCreated));
      expect(ourClaim?.status).toBe("lease.claimed");
      expect(keys(ourClaim)).toEqual(keys(refClaim));
      expect(ourClaim?.body.changed_fields).toEqual(refClaim?.body.changed_fields);
      expect(ourRelease?.status).toBe("lease.released");
      expect(keys(ourRelease)).toEqual(keys(refRelease));
      // chat.py's derived summary reads ours as its own.
      expect(ref("state", "dev").status).toBe(0);
    });

    it("tasks we create are ones chat.py lists, shows, claims and refuses to double-grant", async () => {
      const made = await cli(
        "task",
        "create",
        "dev",
        "api.v2",
        "--title",
        "New API",
        "--as",
        "alice",
        "--files-hint",
        "src/api.ts,src/routes.ts",
        "--acceptance",
        "tests pass",
        "--branch",
        "feat/api",
      );
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toBe("created task api.v2 [open]\n");
      expect(ref("task", "list", "dev").stdout).toMatch(/api\.v2\s+open\s+-\s+-\s+New API/);
      const shown = ref("task", "show", "dev", "api.v2").stdout;
      expect(shown).toContain("files_hint: src/api.ts, src/routes.ts");
      expect(shown).toContain("branch: feat/api");

      expect(ref("task", "claim", "dev", "api.v2", "--as", "carol").status).toBe(0);
      const refused = await cli("task", "claim", "dev", "api.v2", "--as", "bob");
      expect(refused.code, "exit 2, as chat.py's").toBe(2);
      expect(refused.stderr).toContain("LEASE_CONFLICT: task api.v2 is leased by carol");
      expect(
        (await cli("task", "create", "dev", "api.v2", "--title", "again", "--as", "bob")).code,
      ).not.toBe(0);
    });

    it("an expired chat.py lease is taken over only past the skew grace, as a recovery it reads", async () => {
      expect(ref("task", "create", "dev", "T1", "--from", "alice", "--title", "t").status).toBe(0);
      expect(
        ref("task", "claim", "dev", "T1", "--as", "carol", "--lease-seconds", "0.2").status,
      ).toBe(0);
      await until(async () =>
        (await cli("task", "show", "dev", "T1")).stdout.includes("lease ended"),
      );
      const early = await cli("task", "recover", "dev", "T1", "--as", "bob", "--reason", "quiet");
      expect(early.code, "exit 2, as chat.py's").toBe(2);
      expect(early.stderr).toContain("clock-skew grace");

      await until(async () => (await tasks())[0]?.state === "expired");
      const taken = await cli("claim", "dev", "T1", "--as", "bob");
      expect(taken.code, taken.stderr).toBe(0);
      const claim = JSON.parse(readFileSync(join(channel(), "claims", "T1.bob.json"), "utf8"));
      expect(claim).toMatchObject({ owner: "bob", previous_owner: "carol" });
      expect(claim.recovery_reason).toContain("claimed by bob");
      expect(readdirSync(join(channel(), "claims"))).toEqual(["T1.bob.json"]);
      expect(audits().at(-1)?.status).toBe("lease.recovered");
      // chat.py's late holder cannot act on it any more.
      expect(ref("task", "renew", "dev", "T1", "--as", "carol").stderr).toContain(
        "LEASE_OWNER_MISMATCH",
      );
      expect(ref("task", "done", "dev", "T1", "--as", "bob").status).toBe(0);
    });

    it("the holder's activity renews a lease we granted, and chat.py sees the new expiry", async () => {
      expect(ref("task", "create", "dev", "T1", "--from", "alice", "--title", "t").status).toBe(0);
      expect((await cli("claim", "dev", "T1", "--as", "bob", "--ttl", "6")).code).toBe(0);
      const expiry = () =>
        /lease_expires_at: (.*)/.exec(ref("task", "show", "dev", "T1").stdout)?.[1];
      const first = expiry();
      // Before a third of the lease has passed, activity changes nothing (one write per TTL/3).
      expect((await cli("post", "dev", "--from", "bob", "--body", "early")).code).toBe(0);
      expect(expiry()).toBe(first);
      await until(async () => Date.parse(first ?? "") - Date.now() < 3_500);
      expect((await cli("post", "dev", "--from", "bob", "--body", "still at it")).code).toBe(0);
      const renewed = expiry();
      expect(Date.parse(renewed ?? "")).toBeGreaterThan(Date.parse(first ?? ""));
      expect(audits().at(-1)?.status).toBe("lease.renewed");
      // Another agent's activity renews nothing of bob's.
      expect((await cli("post", "dev", "--from", "carol", "--body", "hello")).code).toBe(0);
      expect(expiry()).toBe(renewed);
    });

    it("block, and a task chat.py blocked is claimable again by either", async () => {
      expect((await cli("task", "create", "dev", "T1", "--title", "t", "--as", "alice")).code).toBe(
        0,
      );
      const blocked = await cli("task", "block", "dev", "T1", "--as", "alice");
      expect(blocked.stdout).toBe("blocked task T1 [blocked]\n");
      expect(ref("task", "show", "dev", "T1").stdout).toContain("status: blocked");
      expect((await cli("tasks", "dev")).stdout).toContain("tasks/T1\tblocked\tt");
      expect((await cli("claim", "dev", "T1", "--as", "bob")).code).toBe(0);
      const leased = await cli("task", "block", "dev", "T1", "--as", "alice");
      expect(leased.stderr).toContain("LEASE_MUTATION_REQUIRED");
    });

    it("a lease change that died half-way (chat.py's journal) refuses every change until recovered", async () => {
      expect(ref("task", "create", "dev", "T1", "--from", "alice", "--title", "t").status).toBe(0);
      mkdirSync(join(channel(), "claims"), { recursive: true });
      writeFileSync(join(channel(), "claims", ".lease-transaction.json"), "{}\n");
      const refused = await cli("claim", "dev", "T1", "--as", "bob");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("LEASE_TRANSACTION_PENDING");
      expect(readdirSync(join(channel(), "claims"))).toEqual([".lease-transaction.json"]);
    });

    it("a malformed or planted record is reported and never grants (nor crashes a listing)", async () => {
      expect(ref("task", "create", "dev", "T1", "--from", "alice", "--title", "good").status).toBe(
        0,
      );
      expect(ref("task", "create", "dev", "T2", "--from", "alice", "--title", "two").status).toBe(
        0,
      );
      const tasksDir = join(channel(), "tasks");
      writeFileSync(join(tasksDir, "bad.json"), "{not json");
      writeFileSync(join(tasksDir, "extra.json"), JSON.stringify({ id: "extra", mine: 1 }));
      symlinkSync("/etc/passwd", join(tasksDir, "link.json"));
      const listed = await cli("tasks", "dev");
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain("tasks/T1\topen\tgood");
      expect(listed.stderr).toMatch(/bad\.json is not JSON/);
      expect(listed.stderr).toContain("TASK_REQUIRED_FIELD_MISSING");
      expect(listed.stderr).toContain("link.json");

      // A claim planted for someone else, disagreeing with the task: nothing is granted over it.
      const claims = join(channel(), "claims");
      mkdirSync(claims);
      writeFileSync(join(claims, "T1.mallory.json"), "{}");
      const refused = await cli("claim", "dev", "T1", "--as", "bob");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("LEASE_REQUIRED_FIELD_MISSING");
      // A link planted where our claim would go is refused, never written through.
      const elsewhere = join(root.dir, "elsewhere.json");
      symlinkSync(elsewhere, join(claims, "T2.bob.json"));
      const linked = await cli("claim", "dev", "T2", "--as", "bob");
      expect(linked.code).toBe(1);
      expect(linked.stderr).toContain("claims/T2.bob.json");
      expect(existsSync(elsewhere)).toBe(false);
      expect(JSON.parse(readFileSync(join(tasksDir, "T2.json"), "utf8"))).toMatchObject({
        status: "open",
        owner: null,
      });
      expect(readdirSync(claims).sort()).toEqual(["T1.mallory.json", "T2.bob.json"]);
    });
  },
);

describe.skipIf(skip !== undefined)(
  `our lease journal, recovered by chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    beforeEach(async () => {
      root = tempDir();
      expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
      const made = runReference("0.7", root.dir, [
        "task",
        "create",
        "dev",
        "T1",
        "--from",
        "alice",
        "--title",
        "t",
      ]);
      expect(made.status, made.stderr).toBe(0);
    });
    afterEach(() => root.cleanup());

    /** A claim of ours SIGKILLed at its audit message (before or after posting it). */
    async function killedClaim(posted: boolean): Promise<void> {
      const journal = join(root.dir, "dev", "claims", ".lease-transaction.json");
      const args = ["--import", "tsx", STUCK, root.dir, "T1", "bob", ...(posted ? ["posted"] : [])];
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"] });
      const exited = new Promise((r) => child.once("exit", r));
      let said = "";
      child.stdout.on("data", (chunk: Buffer) => {
        said += chunk.toString();
      });
      await until(
        async () =>
          existsSync(journal) &&
          readFileSync(journal, "utf8").includes('"applied"') &&
          (!posted || said.includes("posted\n")),
      );
      child.kill("SIGKILL");
      await exited;
    }

    it("a claim that died before its audit message is rolled back by chat.py's recover-pending", async () => {
      await killedClaim(false);
      expect(
        runReference("0.7", root.dir, ["task", "claim", "dev", "T1", "--as", "carol"]).stderr,
      ).toContain("LEASE_TRANSACTION_PENDING");
      const recovered = runReference("0.7", root.dir, [
        "task",
        "recover-pending",
        "dev",
        "--as",
        "fixer",
      ]);
      expect(recovered.status, recovered.stderr).toBe(0);
      expect(runReference("0.7", root.dir, ["task", "show", "dev", "T1"]).stdout).toContain(
        "status: open",
      );
      expect(readdirSync(join(root.dir, "dev", "claims"))).toEqual([]);
      expect((await runCli(["claim", "dev", "T1", "--as", "bob"], { root: root.dir })).code).toBe(
        0,
      );
    });

    it("one that died after it is kept, and its journal cleaned, by chat.py's recover-pending", async () => {
      await killedClaim(true);
      const recovered = runReference("0.7", root.dir, [
        "task",
        "recover-pending",
        "dev",
        "--as",
        "fixer",
      ]);
      expect(recovered.status, recovered.stderr).toBe(0);
      const shown = runReference("0.7", root.dir, ["task", "show", "dev", "T1"]).stdout;
      expect(shown).toContain("status: in_progress");
      expect(shown).toContain("owner: bob");
      expect(readdirSync(join(root.dir, "dev", "claims"))).toEqual(["T1.bob.json"]);
    });
  },
);
