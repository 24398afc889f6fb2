import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { referenceSkipReason, requireReference, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";
import { FULL } from "./sizes.js";

// Ours and the real chat.py 0.7.5 claiming the same structured tasks at once, with short
// leases that run out and are taken over, while some of our claimants are SIGKILLed mid-claim
// (and so mid-transaction, now and then). Never two holders of one task; no message lost.
const skip = referenceSkipReason("0.7");
const TASKS = 4;
const ROUNDS = FULL ? 40 : 12;
const WORKERS = 3;

interface Audit {
  seq: number;
  event: string;
  body: Record<string, string | null>;
}

describe.skipIf(skip !== undefined)(
  `mixed task claims with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const dir = () => join(root.dir, "dev");
    beforeAll(() => {
      root = tempDir("agent-chat-ref07-tasks-");
    });
    afterAll(() => root.cleanup());

    it("never two holders of one task, through SIGKILLs and takeovers; every change posted once", async () => {
      expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
      for (let i = 1; i <= TASKS; i++) {
        const made = runReference("0.7", root.dir, [
          "task",
          "create",
          "dev",
          `T${i}`,
          "--from",
          "lead",
          "--title",
          `t${i}`,
        ]);
        expect(made.status, made.stderr).toBe(0);
      }
      const watch = watchClaims(dir());
      const stats = { ours: 0, theirs: 0, killed: 0, recovered: 0 };
      const workers = [
        ...Array.from({ length: WORKERS }, (_, w) => ourWorker(root.dir, `ours${w}`, stats)),
        ...Array.from({ length: WORKERS }, (_, w) => referenceWorker(root.dir, `ref${w}`, stats)),
      ];
      await Promise.all(workers);
      const maxHolders = watch.stop();
      expect(maxHolders, "claim files of one task seen at once").toBeLessThanOrEqual(1);

      const audits = readAudits(dir());
      expect(audits.map((a) => a.seq)).toEqual(audits.map((_, i) => i + 1 + TASKS));
      expect(replayHolders(audits)).toEqual([]);
      console.log(
        `mixed claims: ${stats.ours} grants by ours, ${stats.theirs} by chat.py, ${stats.killed} of ours SIGKILLed, ` +
          `${stats.recovered} half-done changes recovered by chat.py's recover-pending, ${audits.length} audit messages`,
      );
    });
  },
);

/** One of our claimants: claims, sometimes finishes or releases, sometimes dies mid-claim. */
async function ourWorker(root: string, name: string, stats: Record<string, number>) {
  for (let round = 0; round < ROUNDS; round++) {
    const task = `T${1 + Math.floor(Math.random() * TASKS)}`;
    const child = startCli(["claim", "dev", task, "--as", name, "--ttl", "1"], { root });
    const kill = Math.random() < 0.3;
    if (kill) setTimeout(() => child.kill("SIGKILL"), 50 + Math.random() * 350);
    const result = await collect(child);
    if (result.signal === "SIGKILL") stats.killed!++;
    if (result.code === 0) {
      stats.ours!++;
      if (Math.random() < 0.5) await runCli(["release", "dev", task, "--as", name], { root });
    }
    if (result.stderr.includes("LEASE_TRANSACTION_PENDING")) recoverPending(root, stats);
  }
}

/** One of chat.py's: claims, takes over an expired lease with `recover --reason`, releases. */
async function referenceWorker(root: string, name: string, stats: Record<string, number>) {
  for (let round = 0; round < ROUNDS; round++) {
    const task = `T${1 + Math.floor(Math.random() * TASKS)}`;
    let result = await reference(root, [
      "task",
      "claim",
      "dev",
      task,
      "--as",
      name,
      "--lease-seconds",
      "1",
    ]);
    if (result.stderr.includes("LEASE_RECOVERY_REQUIRED")) {
      result = await reference(root, [
        "task",
        "recover",
        "dev",
        task,
        "--as",
        name,
        "--reason",
        "expired",
        "--lease-seconds",
        "1",
      ]);
    }
    if (result.code === 0) {
      stats.theirs!++;
      if (Math.random() < 0.5)
        await reference(root, ["task", "release", "dev", task, "--as", name]);
    }
    if (result.stderr.includes("LEASE_TRANSACTION_PENDING")) recoverPending(root, stats);
  }
}

/** A change that died half-way (a SIGKILLed claimant of ours) is finished or undone by chat.py. */
function recoverPending(root: string, stats: Record<string, number>): void {
  const done = runReference("0.7", root, ["task", "recover-pending", "dev", "--as", "fixer"]);
  if (done.status === 0) stats.recovered!++;
  else expect(done.stderr).toMatch(/LEASE_TRANSACTION_NOT_FOUND|TASK_LOCK_TIMEOUT/);
}

function reference(root: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(requireReference("0.7"), ["--root", root, ...args], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

/** Samples `claims/` while the workers run: the most claim files one task ever had at once. */
function watchClaims(channel: string): { stop: () => number } {
  let most = 0;
  const timer = setInterval(() => {
    let names: string[] = [];
    try {
      names = readdirSync(join(channel, "claims")).filter((n) => /^T\d+\..+\.json$/.test(n));
    } catch {
      return;
    }
    const per = new Map<string, number>();
    for (const n of names) per.set(n.split(".")[0]!, (per.get(n.split(".")[0]!) ?? 0) + 1);
    most = Math.max(most, ...per.values());
  }, 5);
  return {
    stop: () => {
      clearInterval(timer);
      return most;
    },
  };
}

function readAudits(channel: string): Audit[] {
  return readdirSync(channel)
    .filter((f) => /^\d+-/.test(f))
    .sort()
    .map((f) => readFileSync(join(channel, f), "utf8"))
    .map((text) => ({
      seq: Number(/\nseq: (\d+)\n/.exec(text)?.[1]),
      event: /\nstatus: (.*)\n/.exec(text)?.[1] ?? "",
      body: JSON.parse(text.slice(text.indexOf("\n---\n") + 5)),
    }))
    .filter((a) => a.event !== "task.created");
}

/**
 * Replays the audit messages task by task: a claim only of a task nobody holds, a takeover
 * only from its holder once that lease has ended, a release or finish only by the holder. What
 * a rollback undid is posted as `lease.transaction.recovered`, which resets the holder to the
 * task's state as restored. Returns every violation found.
 */
function replayHolders(audits: Audit[]): string[] {
  const holder = new Map<string, { owner: string; until: string } | undefined>();
  const wrong: string[] = [];
  for (const { seq, event, body } of audits) {
    const task = body.task_id as string;
    const now = holder.get(task);
    if (event === "lease.claimed" && now) {
      wrong.push(`#${seq}: ${body.lease_owner} claimed ${task} while ${now.owner} held it`);
    }
    if (event === "lease.recovered") {
      const at = Date.parse(body.updated_at as string);
      if (now?.owner !== body.previous_owner || at < Date.parse(now?.until ?? "")) {
        wrong.push(`#${seq}: ${task} taken from ${body.previous_owner} (holder ${now?.owner})`);
      }
    }
    if (event.startsWith("lease.transaction") || event === "task.updated") {
      holder.set(
        task,
        body.owner ? { owner: body.owner, until: body.lease_expires_at ?? "" } : undefined,
      );
    } else if (event === "lease.released" || event === "lease.completed") {
      holder.set(task, undefined);
    } else if (
      event === "lease.claimed" ||
      event === "lease.recovered" ||
      event === "lease.renewed"
    ) {
      holder.set(task, {
        owner: body.lease_owner as string,
        until: body.lease_expires_at as string,
      });
    }
  }
  return wrong;
}
