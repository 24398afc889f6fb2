import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { referenceSkipReason, requireReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";
import { FULL } from "./sizes.js";

// Ours and the real chat.py 0.7.5 taking path locks on overlapping paths (`src` covers `src/a`)
// with 1–3 s leases, unlocking, and recovering expired ones, while some of ours are SIGKILLed.
// At every snapshot of `locks/` (the one truth both read) and of our lease list, at most one
// live holder per path; and every record that appears, changes owner or goes away has the
// audit message chat.py posts for it.
const skip = referenceSkipReason("0.7");
const PATHS = ["src", "src/a", "src/b", "docs/x", "docs", "lib/c", "lib/d"];
const ROUNDS = FULL ? 15 : 5;
/** How long each round's workers keep trying. */
const ROUND_MS = 3_000;
const WORKERS = 3;
/** Why ours' locks were refused, by the start of the message (printed with the figures). */
const refusals = new Map<string, number>();
/** The locks whose pending change a `recover-pending` of chat.py's settled. */
const settledByRecovery = new Set<string>();

interface Seen {
  owner: string;
  paths: string[];
}

describe.skipIf(skip !== undefined)(
  `mixed path locks with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const dir = () => join(root.dir, "dev");
    beforeAll(() => {
      root = tempDir("agent-chat-ref07-locks-");
    });
    afterAll(() => root.cleanup());

    it("never two live holders of one path, through SIGKILLs and recoveries; no silent record change", async () => {
      expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
      const stats = { ours: 0, theirs: 0, killed: 0, recovered: 0, unlocked: 0, snapshots: 0 };
      const watch = watchLocks(dir(), stats);
      // On a loaded machine a round may end before either side took a lock: rounds go on (up
      // to twice as many) until both have, so that the row always mixes the two.
      const mixed = () => stats.ours > 0 && stats.theirs > 0;
      let round = 0;
      for (; round < ROUNDS || (!mixed() && round < 2 * ROUNDS); round++) {
        const until = Date.now() + ROUND_MS;
        await Promise.all([
          ...Array.from({ length: WORKERS }, (_, w) =>
            ourWorker(root.dir, `ours${w}`, until, stats),
          ),
          ...Array.from({ length: WORKERS }, (_, w) =>
            referenceWorker(root.dir, `Ref${w}`, until, stats),
          ),
        ]);
      }
      const { doubles, transitions } = watch.stop();
      const silent = silentChanges(dir(), transitions, settledByRecovery);
      console.log(
        `mixed path locks: ${round} rounds, ${stats.ours} locks by ours, ${stats.theirs} by chat.py, ` +
          `${stats.killed} of ours SIGKILLed, ${stats.recovered} recoveries, ${stats.unlocked} unlocks, ` +
          `${stats.snapshots} snapshots, ${doubles.length} double holders, ${transitions.length} record ` +
          `changes seen, ${silent.length} silent`,
      );
      console.log("ours refused:", JSON.stringify([...refusals]));
      if (doubles.length > 0) console.log([...new Set(doubles)].slice(0, 8).join("\n"));
      expect([...new Set(doubles)], "two live holders of one path at one snapshot").toEqual([]);
      expect(silent, "record changes with no audit message").toEqual([]);
      expect(stats.ours).toBeGreaterThan(0);
      expect(stats.theirs).toBeGreaterThan(0);
    });
  },
);

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** 1–2 distinct paths that do not overlap one another (one lock request may not). */
function somePaths(): string[] {
  const first = PATHS[Math.floor(Math.random() * PATHS.length)] as string;
  if (Math.random() < 0.5) return [first];
  const second = PATHS.filter((p) => !overlap(p, first))[0];
  return second ? [first, second] : [first];
}

function seconds(): string {
  return String(1 + Math.floor(Math.random() * 3));
}

/** Half the time, unlocks the lock just taken. */
async function maybeUnlock(
  unlock: () => Promise<{ code: number | null }>,
  stats: Record<string, number>,
): Promise<void> {
  if (Math.random() < 0.5 && (await unlock()).code === 0) stats.unlocked!++;
}

/** One of ours: locks, sometimes unlocks, recovers what it finds expired, sometimes dies. */
async function ourWorker(root: string, name: string, until: number, stats: Record<string, number>) {
  while (Date.now() < until) {
    const args = ["lock", "dev", ...somePaths(), "--as", name, "--lease-seconds", seconds()];
    const child = startCli(args, { root });
    if (Math.random() < 0.25) setTimeout(() => child.kill("SIGKILL"), 50 + Math.random() * 400);
    const result = await collect(child);
    if (result.signal === "SIGKILL") stats.killed!++;
    const id = /^locked (\S+) /.exec(result.stdout)?.[1];
    if (result.code === 0 && id) {
      stats.ours!++;
      await maybeUnlock(() => runCli(["unlock", "dev", id, "--as", name], { root }), stats);
    } else if (result.code !== null) {
      count(refusals, result.stderr.slice(0, 40));
      await recoverExpired(root, name, args.slice(2, -4), stats, false);
    }
  }
}

/** One of chat.py's: the same, with `recover` when its lock meets an expired one. */
async function referenceWorker(
  root: string,
  name: string,
  until: number,
  stats: Record<string, number>,
) {
  while (Date.now() < until) {
    const paths = somePaths();
    const result = await reference(root, [
      "lock",
      "dev",
      ...paths,
      "--as",
      name,
      "--lease-seconds",
      seconds(),
    ]);
    const id = /^locked (\S+) /.exec(result.stdout)?.[1];
    if (result.code === 0 && id) {
      stats.theirs!++;
      await maybeUnlock(() => reference(root, ["unlock", "dev", id, "--as", name]), stats);
    } else if (result.stderr.includes("PATH_LOCK_RECOVERY_REQUIRED")) {
      await recoverExpired(root, name, paths, stats, true);
    } else if (result.stderr.includes("PATH_LOCK_TRANSACTION_PENDING")) {
      // The change it settles: one that died before its message is rolled back, made and
      // removed with no message of its own (silentChanges).
      const target = journalTarget(join(root, "dev"));
      const settled = await reference(root, ["recover-pending", "dev", "--as", name]);
      if (settled.code === 0 && target) settledByRecovery.add(target);
    }
  }
}

/** Recovers each lock over `paths` that `check` says has ended (chat.py's, or ours' CLI). */
async function recoverExpired(
  root: string,
  name: string,
  paths: string[],
  stats: Record<string, number>,
  theirs: boolean,
) {
  const run = (args: string[]) => (theirs ? reference(root, args) : runCli(args, { root }));
  const check = await run(["check", "dev", ...paths, "--as", name]);
  for (const m of check.stdout.matchAll(/^locked (\S+) owner=\S+ expires=(\S+)$/gm)) {
    if (Date.parse(m[2] as string) > Date.now()) continue;
    const args = ["recover", "dev", m[1] as string, "--as", name, "--reason", "expired"];
    const done = await run([...args, "--lease-seconds", seconds()]);
    if (done.code === 0) stats.recovered!++;
  }
}

function reference(
  root: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(requireReference("0.7"), ["--root", root, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d) => {
      stdout += d;
    });
    child.stderr?.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Whether two channel paths overlap as chat.py's locks do: equal, or one a folder above. */
function overlap(a: string, b: string): boolean {
  return a === b || a === "." || b === "." || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

interface Record07 {
  lock_id: string;
  owner: string;
  expires_at: string;
  recovery_reason: string | null;
  paths: Array<{ normalized_path: string }>;
}

/** The records of `locks/` that parse now (one being replaced or removed is skipped). */
function records(channel: string): Record07[] {
  let names: string[] = [];
  try {
    names = readdirSync(join(channel, "locks")).filter((n) => /^[^._].*\.json$/.test(n));
  } catch {
    return [];
  }
  const out: Record07[] = [];
  for (const n of names) {
    try {
      out.push(JSON.parse(readFileSync(join(channel, "locks", n), "utf8")));
    } catch {
      // removed, or not yet whole, between the listing and the read
    }
  }
  return out;
}

/** Our lease list (`.leases.json`): the leases whose record is ours, by record id, with ends. */
function ourLeases(channel: string): Map<string, number> {
  const out = new Map<string, number>();
  try {
    const doc = JSON.parse(readFileSync(join(channel, ".leases.json"), "utf8"));
    for (const l of doc.leases as Array<{ token: number; group?: number; expiresAt: number }>) {
      const id = `agent-chat-${l.group ?? l.token}`;
      out.set(id, Math.max(out.get(id) ?? 0, l.expiresAt));
    }
  } catch {
    // none yet, or being replaced
  }
  return out;
}

/**
 * Snapshots `locks/` and our lease list while the workers run. A holder is live when its record
 * has not expired (chat.py's rule) and, for a record of ours, our lease has not either (ours
 * reads the record as its truth, so a record chat.py recovered or removed is no lease of ours).
 * Collects each snapshot with two live holders of one path, and each change of a record seen.
 */
function watchLocks(
  channel: string,
  stats: Record<string, number>,
): { stop: () => { doubles: string[]; transitions: string[] } } {
  const doubles: string[] = [];
  const transitions: string[] = [];
  const last = new Map<string, Seen>();
  const timer = setInterval(() => {
    stats.snapshots!++;
    const now = Date.now();
    const recs = records(channel);
    const leases = ourLeases(channel);
    const live = recs.filter((r) => {
      if (Date.parse(r.expires_at) <= now) return false;
      const mine = r.lock_id.startsWith("agent-chat-") && r.recovery_reason === null;
      return !mine || (leases.get(r.lock_id) ?? 0) > now;
    });
    doubles.push(...doubleHolders(live));
    const now2 = new Map(
      recs.map((r) => [
        r.lock_id,
        { owner: r.owner, paths: r.paths.map((x) => x.normalized_path) } as Seen,
      ]),
    );
    transitions.push(...changes(last, now2));
    last.clear();
    for (const [id, seen] of now2) last.set(id, seen);
  }, 10);
  return {
    stop: () => {
      clearInterval(timer);
      return { doubles, transitions };
    },
  };
}

/** Each pair of live locks whose paths overlap (`src` and `src/a`; `src/a` and `src/b` do not). */
function doubleHolders(live: Record07[]): string[] {
  const out: string[] = [];
  for (const [i, a] of live.entries()) {
    for (const b of live.slice(i + 1)) {
      const shared = a.paths.find((x) =>
        b.paths.some((y) => overlap(x.normalized_path, y.normalized_path)),
      );
      if (shared) {
        out.push(`${shared.normalized_path}: ${a.lock_id}(${a.owner}), ${b.lock_id}(${b.owner})`);
      }
    }
  }
  return out;
}

/** What changed from one snapshot of the records to the next: made, handed over, removed. */
function changes(last: Map<string, Seen>, now: Map<string, Seen>): string[] {
  const out: string[] = [];
  for (const [id, seen] of now) {
    const before = last.get(id);
    if (!before) out.push(`locked ${id} ${seen.owner}`);
    else if (before.owner !== seen.owner) out.push(`recovered ${id} ${seen.owner}`);
  }
  for (const id of last.keys()) if (!now.has(id)) out.push(`unlocked ${id}`);
  return out;
}

/** The lock a change in progress names (`locks/.path-lock-transaction.json`), if one is. */
function journalTarget(channel: string): string | undefined {
  try {
    const text = readFileSync(join(channel, "locks", ".path-lock-transaction.json"), "utf8");
    const target = (JSON.parse(text) as { target?: unknown }).target;
    return typeof target === "string" ? target.replace(/\.json$/, "") : undefined;
  } catch {
    return undefined; // none, or caught half-written
  }
}

/**
 * The record changes seen that have no audit message of chat.py's kind in the channel. A lock
 * whose change died before its message (its process SIGKILLed, its journal left) and that a
 * `recover-pending` settled (`settled`: the journal's lock) is rolled back: made and removed
 * with no message, rightly, for it never was.
 */
function silentChanges(
  channel: string,
  transitions: string[],
  settled: ReadonlySet<string>,
): string[] {
  const audits = new Set<string>();
  for (const f of readdirSync(channel).filter((n) => /^\d+-/.test(n))) {
    const text = readFileSync(join(channel, f), "utf8");
    const status = /\nstatus: (path\.[a-z.]+)\n/.exec(text)?.[1];
    if (!status) continue;
    const body = JSON.parse(text.slice(text.indexOf("\n---\n") + 5));
    const verb = { "path.locked": "locked", "path.lock.recovered": "recovered" }[status];
    if (verb) audits.add(`${verb} ${body.lock_id} ${body.owner}`);
    if (status === "path.lock.unlocked") audits.add(`unlocked ${body.lock_id}`);
  }
  // A record's first sighting may be a recovery's result (the lock made and recovered between two
  // snapshots): its recovery message accounts for it.
  const audited = new Set([...audits].map((a) => a.split(" ")[1]));
  const rolledBack = (id: string) => {
    const seen = transitions.filter((t) => t.split(" ")[1] === id);
    return (
      settled.has(id) &&
      !audited.has(id) &&
      seen.length === 2 &&
      seen[0]!.startsWith(`locked ${id} `) &&
      seen[1] === `unlocked ${id}`
    );
  };
  return transitions.filter(
    (t) =>
      !audits.has(t) &&
      !audits.has(t.replace(/^locked /, "recovered ")) &&
      !rolledBack(t.split(" ")[1]!),
  );
}
