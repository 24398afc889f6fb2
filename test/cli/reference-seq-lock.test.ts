import { spawn } from "node:child_process";
import { lutimesSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type ReferenceVersion, referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

/** Takes the channel's `_seq.lock` as our post does, and is killed with SIGKILL holding it. */
async function killWhileHolding(channelDir: string): Promise<void> {
  const holder = spawn(process.execPath, [
    "--import",
    "tsx",
    fileURLToPath(new URL("../helpers/lock-holder.ts", import.meta.url)),
    channelDir,
  ]);
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once("data", () => resolve());
    holder.once("exit", () => reject(new Error("lock holder exited early")));
  });
  holder.kill("SIGKILL");
  await new Promise((r) => holder.once("exit", r));
}

// chat.py takes `_seq.lock` with mkdir and, once it is 30 s old, removes it with rmdir: a lock of
// ours left by a killed post must be one that rmdir removes, or chat.py spins on it for ever.
for (const version of ["0.3", "0.7"] as ReferenceVersion[]) {
  const skip = referenceSkipReason(version);
  describe.skipIf(skip !== undefined)(
    `our post killed holding _seq.lock, then chat.py ${version}${skip ? ` (${skip})` : ""}`,
    () => {
      let root: ReturnType<typeof tempDir>;
      beforeEach(() => {
        root = tempDir();
      });
      afterEach(() => root.cleanup());

      it("chat.py takes the dead lock over by its own 30 s rule and posts within its 10 s timeout", async () => {
        expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
        const channelDir = join(root.dir, "dev");
        await killWhileHolding(channelDir);
        // As 30 s later: chat.py judges a lock by its modification time alone.
        const then = Date.now() / 1000 - 31;
        lutimesSync(join(channelDir, "_seq.lock"), then, then);
        const post = ["post", "dev", "--from", "bob", "--title", "t", "--body", "after the kill"];
        const ref = runReference(version, root.dir, post, { timeoutMs: 20_000 });
        expect(ref.status, ref.stderr).toBe(0);
        expect(readdirSync(channelDir).filter((n) => n.endsWith(".md"))).toHaveLength(1);
        // What chat.py leaves of ours (the dead owner's name) our next post cleans away.
        expect((await runCli([...post, "--body", "ours"], { root: root.dir })).code).toBe(0);
      });

      it("our next post takes the dead lock over at once and leaves it free for chat.py", async () => {
        expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
        await killWhileHolding(join(root.dir, "dev"));
        const post = ["post", "dev", "--from", "bob", "--title", "t", "--body", "after the kill"];
        expect((await runCli(post, { root: root.dir })).code).toBe(0);
        const ref = runReference(version, root.dir, post, { timeoutMs: 20_000 });
        expect(ref.status, ref.stderr).toBe(0);
      });
    },
  );
}
