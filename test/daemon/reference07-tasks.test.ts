import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { type Daemon, makeWorld, startDaemon, type World } from "./harness.js";

// chat.py 0.7's task commands through a daemon say what they say without one: the warning for
// a task record that cannot be read, `task update`'s refusals, `state` and `recover-pending`.
const skip = referenceSkipReason("0.7");

describe.skipIf(skip !== undefined)(
  `chat.py 0.7 tasks through the daemon${skip ? ` (${skip})` : ""}`,
  () => {
    let world: World;
    let daemon: Daemon | undefined;
    const direct = (...args: string[]) => world.cli(args, { AGENT_CHAT_DAEMON: "off" });
    const served = (...args: string[]) => world.cli(args);

    beforeEach(() => {
      world = makeWorld();
      expect(runReference("0.7", world.root, ["init", "dev"]).status).toBe(0);
      const made = runReference("0.7", world.root, [
        "task",
        "create",
        "dev",
        "T1",
        "--from",
        "alice",
        "--title",
        "ok",
      ]);
      expect(made.status).toBe(0);
      writeFileSync(join(world.root, "dev", "tasks", "T9.json"), '{"id": "T9"}\n');
    });
    afterEach(async () => {
      await daemon?.stop();
      daemon = undefined;
      world.cleanup();
    });

    it("names an unreadable task record on stderr, as without a daemon", async () => {
      const alone = await direct("tasks", "dev");
      daemon = await startDaemon(world);
      const through = await served("tasks", "dev");
      expect(alone.stderr).toContain("TASK_REQUIRED_FIELD_MISSING");
      expect(through.stdout).toBe(alone.stdout);
      expect(through.stderr).toBe(alone.stderr);
      expect((await served("info")).stdout).toMatch(/daemon:\s+live/);
    });

    it("task update, state and recover-pending answer alike through it", async () => {
      daemon = await startDaemon(world);
      const cases = [
        ["task", "update", "dev", "T1", "--as", "alice"],
        ["task", "update", "dev", "T1", "--as", "alice", "--depends-on", "T1"],
        ["task", "recover-pending", "dev", "--as", "alice"],
        ["state", "dev"],
      ];
      for (const args of cases) {
        const through = await served(...args);
        const alone = await direct(...args);
        expect([through.code, through.stdout, through.stderr], args.join(" ")).toEqual([
          alone.code,
          alone.stdout,
          alone.stderr,
        ]);
      }
      const updated = await served(
        "task",
        "update",
        "dev",
        "T1",
        "--as",
        "alice",
        "--title",
        "renamed",
      );
      expect(updated.stdout).toBe("updated task T1 [open]\n");
      const record = JSON.parse(readFileSync(join(world.root, "dev", "tasks", "T1.json"), "utf8"));
      expect(record.title).toBe("renamed");
    });
  },
);
