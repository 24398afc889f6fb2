import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type ReferenceVersion, referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// The SPEC v0.1 core against the real reference from PyPI, both versions: one channel, posts
// from both sides, each reads what the other wrote and the sequence stays gapless.
for (const version of ["0.3", "0.7"] as ReferenceVersion[]) {
  const skip = referenceSkipReason(version);
  describe.skipIf(skip !== undefined)(
    `the real chat.py ${version}${skip ? ` (${skip})` : ""}`,
    () => {
      let root: ReturnType<typeof tempDir>;
      beforeEach(() => {
        root = tempDir();
      });
      afterEach(() => root.cleanup());

      it("shares a channel: each reads the other's posts, seqs gapless", async () => {
        const init = await runCli(["init", "dev", "--members", "alice,bob"], { root: root.dir });
        expect(init.code).toBe(0);
        const ref = runReference(version, root.dir, [
          "post",
          "dev",
          "--from",
          "bob",
          "--to",
          "alice",
          "--title",
          "From Python",
          "--body",
          "hi",
        ]);
        expect(ref.status, ref.stderr).toBe(0);
        const ours = await runCli(
          ["post", "dev", "--from", "alice", "--to", "bob", "--title", "From Node", "--body", "yo"],
          { root: root.dir },
        );
        expect(ours.code, ours.stderr).toBe(0);
        expect(ours.stdout).toContain("posted #2");

        const read = await runCli(["--json", "read", "dev", "--as", "alice"], { root: root.dir });
        const got = JSON.parse(read.stdout) as { messages: Array<{ seq: number; title: string }> };
        expect(got.messages.map((m) => [m.seq, m.title])).toEqual([[1, "From Python"]]);

        const theirs = runReference(version, root.dir, ["read", "dev", "--as", "bob"]);
        expect(theirs.status, theirs.stderr).toBe(0);
        expect(theirs.stdout).toContain("title: From Node");
        expect(theirs.stdout).not.toContain("title: From Python");
      });

      it("a channel chat.py created under a name off our rule is listed by name, never hidden", async () => {
        for (const name of ["my channel", "café"]) {
          const made = runReference(version, root.dir, ["init", name]);
          expect(made.status, made.stderr).toBe(0);
        }
        expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
        const json = await runCli(["--json", "channels"], { root: root.dir });
        expect(json.code).toBe(0);
        const out = JSON.parse(json.stdout) as {
          channels: Array<{ name: string }>;
          warnings: string[];
        };
        expect(out.channels.map((c) => c.name)).toEqual(["dev"]);
        const rule = "use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit";
        expect(out.warnings).toEqual([
          `channel "café" is not usable here (invalid channel name "café": ${rule}; chat.py allows more): rename its folder to use it, e.g. to caf`,
          `channel "my channel" is not usable here (invalid channel name "my channel": ${rule}; chat.py allows more): rename its folder to use it, e.g. to my-channel`,
        ]);
        const text = await runCli(["channels"], { root: root.dir });
        expect(text.stderr).toContain('channel "my channel" is not usable here');
        expect(text.stderr).toContain('channel "café" is not usable here');
      });

      it("shares task-<id>.md claims: neither grants a task the other claimed", async () => {
        const cli = (...args: string[]) => runCli(args, { root: root.dir });
        expect((await cli("init", "dev")).code).toBe(0);
        for (const title of ["first", "second"]) {
          expect((await cli("task", "add", "dev", "--title", title, "--as", "carol")).code).toBe(0);
        }
        const theirs = runReference(version, root.dir, [
          "claim",
          "dev",
          "task-1.md",
          "--as",
          "alice",
        ]);
        expect(theirs.status, theirs.stderr).toBe(0);
        const refused = await cli("claim", "dev", "1", "--as", "bob");
        expect(refused.code).toBe(3);
        expect(refused.stderr).toContain("claimed by alice");

        expect((await cli("claim", "dev", "2", "--as", "bob")).code).toBe(0);
        const lost = runReference(version, root.dir, [
          "claim",
          "dev",
          "task-2.md",
          "--as",
          "alice",
        ]);
        expect(lost.status).not.toBe(0);
        expect(lost.stderr).toContain("already claimed");
      });
    },
  );
}
