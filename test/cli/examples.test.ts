import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.js";

const run = promisify(execFile);

describe("the README's runnable examples", () => {
  it("examples/library.mjs runs and shows a wait, a lost claim, a watch and a read", async () => {
    const tmp = tempDir();
    try {
      const { stdout } = await run(process.execPath, ["examples/library.mjs", tmp.dir], {
        timeout: 30_000,
      });
      expect(stdout).toBe(
        'bob got #1 "Draft ready" from alice\n' +
          "alice: CLAIM_LOST (task 12 is already claimed by bob)\n" +
          'alice\'s watch: #2 ack "On it"\n' +
          "alice reads 1 message(s); her cursor is now 2\n",
      );
    } finally {
      tmp.cleanup();
    }
  });

  it("npm run demo's script runs the 60-second tour", async () => {
    const tmp = tempDir();
    try {
      const { stdout } = await run(process.execPath, ["scripts/demo.mjs", tmp.dir], {
        timeout: 60_000,
      });
      expect(stdout).toContain("posted #1 ");
      expect(stdout).toContain("(bob's wait returned: exit 0)");
      expect(stdout).toContain("agent-chat: task 12 is already claimed by bob\n(exit 3)");
      expect(stdout).toContain("token 1 is live on task-12");
      expect(stdout).toContain("task-12\tdone by bob\tReview PR 12\ttoken 1, note: merged");
    } finally {
      tmp.cleanup();
    }
  });
});
