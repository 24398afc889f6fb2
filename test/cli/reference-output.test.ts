import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type ReferenceVersion, referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// The human output of the commands both CLIs have, which skills and scripts written for chat.py
// parse (`posted #1 -> review/0001-….md`, `claimed task-8.md -> task-8.CLAIMED-bob.md`, the
// roster's lines, a read with nothing new): the same command sequence on a root of each, the
// same stdout, but for the time a message was written.
const SESSION: string[][] = [
  ["init", "dev", "--members", "alice,bob", "--topic", "t"],
  ["roster", "dev"],
  ["post", "dev", "--from", "alice", "--to", "bob", "--title", "hello", "--body", "hi bob"],
  ["post", "dev", "--from", "bob", "--reply", "1", "--title", "re", "--body", "hi"],
  ["read", "dev", "--as", "bob"],
  ["read", "dev", "--as", "bob"],
  ["peek", "dev", "-n", "2"],
  ["wait", "dev", "--as", "alice", "--timeout", "5"],
  ["roster", "dev"],
  ["channels"],
  ["claim", "dev", "task-8.md", "--as", "bob"],
];

const withoutTimes = (text: string) => text.replace(/^ts: .*$/gm, "ts: …");

for (const version of ["0.3", "0.7"] as ReferenceVersion[]) {
  const skip = referenceSkipReason(version);
  describe.skipIf(skip !== undefined)(
    `chat.py ${version}'s lines, from ours${skip ? ` (${skip})` : ""}`,
    () => {
      let ours: ReturnType<typeof tempDir>;
      let theirs: ReturnType<typeof tempDir>;
      beforeEach(() => {
        ours = tempDir();
        theirs = tempDir();
      });
      afterEach(() => {
        ours.cleanup();
        theirs.cleanup();
      });

      it("init, roster, post, read, peek, wait, channels and claim print what chat.py prints", async () => {
        for (const args of SESSION) {
          if (args[0] === "claim") {
            for (const root of [ours.dir, theirs.dir])
              writeFileSync(join(root, "dev", "task-8.md"), "");
          }
          const reference = runReference(version, theirs.dir, args);
          const own = await runCli(args, { root: ours.dir, env: { AGENT_CHAT_DAEMON: "off" } });
          expect(reference.status, `${args.join(" ")}: ${reference.stderr}`).toBe(0);
          expect([args.join(" "), own.code, withoutTimes(own.stdout)]).toEqual([
            args.join(" "),
            0,
            withoutTimes(reference.stdout).replaceAll(theirs.dir, ours.dir),
          ]);
        }
      });
    },
  );
}
