import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// chat.py 0.7.5's derived channel summary (`state`, `compact`, `state.md`) on one root that
// both CLIs write: the same Markdown byte for byte, the same JSON, the same state.compacted.
const skip = referenceSkipReason("0.7");

/** `state --json` without the one field that is the time it was made. */
const withoutTime = (json: string) => {
  const value = JSON.parse(json) as Record<string, unknown>;
  expect(value.generated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
  delete value.generated_at;
  return value;
};

describe.skipIf(skip !== undefined)(
  `state and compact with chat.py 0.7${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ref = (...args: string[]) => runReference("0.7", root.dir, args);
    const channel = () => join(root.dir, "dev");
    const messages = () => readdirSync(channel()).filter((f) => /^\d+-.*\.md$/.test(f));
    const ok = async (...args: string[]) => {
      const r = await cli(...args);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      return r.stdout;
    };
    const refOk = (...args: string[]) => {
      const r = ref(...args);
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      return r.stdout;
    };

    /** A channel with something in every section, written by both CLIs. */
    async function mixedChannel(): Promise<void> {
      refOk("init", "dev", "--members", "carol,alice,bob", "--topic", "Ship vNext — café");
      refOk("task", "create", "dev", "T1", "--from", "alice", "--title", "Build the prototype");
      refOk("task", "update", "dev", "T1", "--as", "alice", "--files-hint", "src/b.py,src/a.py");
      await ok("task", "create", "dev", "T2", "--title", "Déployer", "--as", "bob");
      await ok(
        "task",
        "create",
        "dev",
        "T3",
        "--title",
        "Docs",
        "--as",
        "bob",
        "--depends-on",
        "T1",
      );
      await ok(
        "task",
        "create",
        "dev",
        "T4",
        "--title",
        "Spare",
        "--as",
        "carol",
        "--acceptance",
        "x,y",
      );
      refOk("task", "claim", "dev", "T1", "--from", "bob");
      await ok("task", "claim", "dev", "T2", "--as", "carol");
      await ok("task", "done", "dev", "T2", "--as", "carol");
      refOk("task", "block", "dev", "T4", "--as", "carol");
      refOk(
        "post",
        "dev",
        "--from",
        "alice",
        "--title",
        "Decision: stdlib only",
        "--body",
        "We use\n\nthe stdlib",
      );
      await ok(
        "post",
        "dev",
        "--from",
        "bob",
        "--title",
        "Blocker: no credentials",
        "--body",
        "need a key",
      );
      await ok(
        "post",
        "dev",
        "--from",
        "carol",
        "--title",
        "notes",
        "--body",
        "## Evidence\nRan 42 tests\n  indented",
      );
      refOk("post", "dev", "--from", "bob", "--title", "[decision] naming", "--body", "");
      refOk(
        "post",
        "dev",
        "--from",
        "alice",
        "--title",
        "Verification: green",
        "--body",
        "all good",
      );
      refOk("lock", "dev", "src/a.py", "--from", "alice");
      await ok("lock", "dev", "docs", "--as", "bob");
    }

    beforeEach(() => {
      root = tempDir();
    });
    afterEach(() => root.cleanup());

    it("renders chat.py's state byte for byte, and its --json field for field", async () => {
      await mixedChannel();
      const theirs = refOk("state", "dev");
      const ours = await ok("state", "dev");
      expect(ours).toBe(theirs);
      for (const section of [
        "Goal & Topic",
        "Decisions",
        "Open Tasks",
        "Blockers",
        "Owners & Leases",
        "Path Locks",
        "Verification Evidence",
      ]) {
        expect(ours).toContain(`\n## ${section}\n`);
      }
      expect(ours).toContain("- `[T2]` **Task T2 completed: Déployer** (verified by `carol`");
      expect(ours).toContain("- `[T3]` **Task T3 blocked on dependencies: T1** (by `bob`)");
      expect(ours).toContain("  - Path Lock `agent-chat-1` (`docs`, expires: ");
      // The JSON text too: Python's key order, indent and \u escapes, one field apart.
      const theirJson = refOk("state", "dev", "--json");
      const ourJson = await ok("--json", "state", "dev");
      expect(withoutTime(ourJson)).toEqual(withoutTime(theirJson));
      const line = (text: string) => text.replace(/"generated_at": "[^"]*"/, "");
      expect(line(ourJson)).toBe(line(theirJson));
      expect(ourJson).toContain("D\\u00e9ployer");
      // Reading is derived only: nothing written, nothing posted.
      expect(existsSync(join(channel(), "state.md"))).toBe(false);
    });

    it("writes the state.md chat.py writes, and each reads the other's, with its state.compacted", async () => {
      await mixedChannel();
      const before = messages().length;
      const expected = refOk("state", "dev");
      expect(await ok("compact", "dev", "--as", "alice")).toBe(
        "compacted state for dev -> dev/state.md (open_tasks=3, locks=2, decisions=2)\n",
      );
      expect(readFileSync(join(channel(), "state.md"), "utf8")).toBe(expected);
      // chat.py's next summary counts our state.compacted as the last message, as its own.
      const next = await ok("state", "dev");
      expect(next).toBe(refOk("state", "dev"));
      refOk("compact", "dev", "--as", "bob");
      expect(readFileSync(join(channel(), "state.md"), "utf8")).toBe(next);
      expect(await ok("state", "dev", "--saved")).toBe(next);

      const audits = messages()
        .sort()
        .slice(before)
        .map((f) => readFileSync(join(channel(), f), "utf8"));
      expect(audits).toHaveLength(2);
      const parsed = audits.map((text) => ({
        from: /\nfrom: (.*)\n/.exec(text)?.[1],
        status: /\nstatus: (.*)\n/.exec(text)?.[1],
        title: /\ntitle: (.*)\n/.exec(text)?.[1],
        body: JSON.parse(text.slice(text.indexOf("\n---\n") + 5)) as Record<string, unknown>,
      }));
      const keys = Object.keys(parsed[1]!.body);
      expect(Object.keys(parsed[0]!.body)).toEqual(keys);
      expect(parsed.map((p) => [p.from, p.status, p.title])).toEqual([
        ["alice", "state.compacted", "state.compacted"],
        ["bob", "state.compacted", "state.compacted"],
      ]);
      expect(parsed[0]!.body).toMatchObject({
        event: "state.compacted",
        channel: "dev",
        open_tasks_count: 3,
        path_locks_count: 2,
        decisions_count: 2,
      });
      expect(parsed[1]!.body.last_seq).toBe((parsed[0]!.body.last_seq as number) + 1);
    });

    it("state --write --json prints the summary only; --no-audit posts nothing", async () => {
      refOk("init", "dev", "--members", "alice");
      const before = messages().length;
      const out = await ok("--json", "state", "dev", "--write", "--as", "alice");
      expect(JSON.parse(out).channel).toBe("dev");
      expect(messages()).toHaveLength(before + 1);
      await ok("compact", "dev", "--no-audit");
      expect(messages()).toHaveLength(before + 1);
      expect(await ok("state", "dev", "--saved")).toBe(refOk("state", "dev"));
    });

    it("leaves out what does not validate, names it, and --strict refuses", async () => {
      refOk("init", "dev", "--members", "alice");
      refOk("task", "create", "dev", "T1", "--from", "alice", "--title", "Good");
      writeFileSync(join(channel(), "tasks", "T9.json"), '{"id": "T9"}\n');
      const r = await cli("state", "dev");
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(refOk("state", "dev"));
      expect(r.stdout).toContain("`[T1]` **Good**");
      expect(r.stderr).toMatch(/TASK_REQUIRED_FIELD_MISSING.*left out of the summary/);
      const strict = await cli("state", "dev", "--strict");
      expect(strict.code).toBe(1);
      expect(strict.stdout).toBe("");
      expect(strict.stderr).toContain("TASK_REQUIRED_FIELD_MISSING");
      expect(ref("state", "dev", "--strict").status).not.toBe(0);
    });

    it("never writes through a planted state.md link, nor reads a message link", async () => {
      refOk("init", "dev", "--members", "alice");
      const outside = join(root.dir, "outside.txt");
      writeFileSync(outside, "---\nfrom: mallory\ntitle: Decision: planted\n---\nsecret\n");
      symlinkSync(outside, join(channel(), "0007-mallory-x.md"));
      symlinkSync(outside, join(channel(), "state.md"));
      const summary = await ok("state", "dev");
      expect(summary).not.toContain("planted");
      await ok("compact", "dev", "--no-audit");
      expect(lstatSync(join(channel(), "state.md")).isFile()).toBe(true);
      expect(readFileSync(outside, "utf8")).toContain("secret");
      expect((await cli("state", "dev", "--saved")).stdout).toBe(summary);
    });

    it("says which channel is missing, and refuses a bad name", async () => {
      const missing = await cli("state", "nope");
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("nope");
      const badName = await cli("state", "../x");
      expect(badName.code).toBe(1); // chat.py's, as its STATE_INVALID_CHANNEL
      expect(badName.stderr).toMatch(/^agent-chat: STATE_INVALID_CHANNEL: /);
      refOk("init", "dev");
      const none = await cli("state", "dev", "--saved");
      expect(none.code).toBe(1);
      expect(none.stderr).toContain("STATE_RECORD_NOT_FOUND");
    });

    it("a compact killed at any instant leaves the old state.md or the new, never part of one", async () => {
      refOk("init", "dev", "--members", "alice");
      // A large summary, so that a write takes long enough to be killed in the middle.
      for (let i = 1; i <= 1500; i++) {
        const name = `${String(i).padStart(4, "0")}-alice-d${i}.md`;
        const text = `---\nseq: ${i}\nfrom: alice\nto: all\nchannel: dev\nts: 2026-01-01T00:00:00+00:00\ntitle: Decision: choice ${i}\n---\n${"reason ".repeat(40)}\n`;
        writeFileSync(join(channel(), name), text);
      }
      const expected = refOk("state", "dev");
      expect(expected.length).toBeGreaterThan(400_000);
      await ok("compact", "dev", "--no-audit");
      const state = join(channel(), "state.md");
      let looks = 0;
      for (let round = 0; round < 12; round++) {
        const child = startCli(["compact", "dev", "--no-audit"], { root: root.dir });
        const timer = setTimeout(() => child.kill("SIGKILL"), 150 + ((round * 37) % 250));
        let finished = false;
        void collect(child).then(() => {
          finished = true;
        });
        // Read while it runs: every look finds the whole summary, never part of one, never none.
        while (!finished) {
          expect(readFileSync(state, "utf8")).toBe(expected);
          looks++;
          await new Promise((resolve) => setImmediate(resolve));
        }
        clearTimeout(timer);
      }
      expect(looks).toBeGreaterThan(12);
      expect(readFileSync(state, "utf8")).toBe(expected);
      // What a kill leaves is chat.py's kind of temporary: a dot-file nothing lists.
      const left = readdirSync(channel()).filter((f) => f.includes("state.md") && f !== "state.md");
      for (const f of left) expect(f).toMatch(/^\.state\.md\.tmp\.[0-9a-f]+\.tmp$/);
    });
  },
);
