import { utimesSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { daemonFixture } from "../daemon/harness.js";
import { collect, startCli } from "../helpers/cli.js";

const { world: makeWorld, serve } = daemonFixture();

/**
 * `prune` through a daemon while an agent's `wait` is parked on a channel quiet for 40 days:
 * the agent's cursor (old: nothing was read since) stays, and its wait gets only what is new.
 */
describe("prune through a daemon and a parked CLI wait", () => {
  it("keeps the waiting agent's cursor; the wait is given only the new message", async () => {
    const world = makeWorld();
    const ok = async (args: string[]) => {
      const r = await world.cli(args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return r;
    };
    await ok(["init", "quiet"]);
    for (let i = 1; i <= 4; i++) await ok(["post", "quiet", "--from", "alice", "--body", `#${i}`]);
    await ok(["read", "quiet", "--as", "bob"]);
    const fortyDaysAgo = new Date(Date.now() - 40 * 24 * 3_600_000);
    utimesSync(join(world.root, "quiet", ".cursors", "bob.txt"), fortyDaysAgo, fortyDaysAgo);
    await serve(world);

    const wait = startCli(["--json", "wait", "quiet", "--as", "bob", "--timeout", "30"], {
      env: world.env,
    });
    const waited = collect(wait);
    await vi.waitFor(
      async () => {
        const who = JSON.parse((await ok(["--json", "who", "quiet"])).stdout) as {
          agents: Array<{ agent: string; state: string }>;
        };
        expect(who.agents.find((a) => a.agent === "bob")?.state).toBe("waiting");
      },
      { timeout: 15_000, interval: 50 },
    );
    const pruned = JSON.parse((await ok(["--json", "prune", "--older-than", "30d"])).stdout) as {
      removed: Array<{ agent: string }>;
    };
    expect(pruned.removed.map((r) => r.agent)).not.toContain("bob");

    await ok(["post", "quiet", "--from", "alice", "--body", "#5"]);
    const result = await waited;
    expect(result.code, result.stderr).toBe(0);
    const seqs = (JSON.parse(result.stdout) as { messages: Array<{ seq: number }> }).messages;
    expect(seqs.map((m) => m.seq)).toEqual([5]);
  });
});
