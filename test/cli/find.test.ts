import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/** search, thread, read --thread, peek --archived, archive and prune as users run them. */
let tmp: ReturnType<typeof tempDir>;
const cli = (...args: string[]) => runCli(args, { root: tmp.dir });

beforeEach(async () => {
  tmp = tempDir();
  await cli("init", "plan");
  await cli(
    "post",
    "plan",
    "--from",
    "alice",
    "--title",
    "Schema v2",
    "--body",
    "We use Postgres.",
  );
  await cli(
    "post",
    "plan",
    "--from",
    "bob",
    "--to",
    "alice",
    "--reply",
    "1",
    "--body",
    "Postgres ok",
  );
  await cli("post", "plan", "--from", "alice", "--reply", "2", "--title", "Thanks", "--body", "ta");
  await cli("post", "plan", "--from", "carol", "--title", "Lunch", "--body", "pizza");
});

afterEach(() => tmp.cleanup());

describe("agent-chat search", () => {
  it("prints each hit with channel#seq, sender, title and the match marked", async () => {
    const r = await cli("search", "postgres");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^plan#2 {2}\S+ {2}bob → alice {2}\[discussion\]$/);
    expect(lines[1]).toBe("  ⟦Postgres⟧ ok");
    expect(lines[2]).toBe("  ⟦Postgres⟧ ok");
    expect(lines[3]).toMatch(/^plan#1 /);
    expect(lines[5]).toBe("  We use ⟦Postgres⟧.");
  });

  it("marks the title's matches too, with marks no markdown uses", async () => {
    await cli("post", "plan", "--from", "bob", "--title", "Zebra plan", "--body", "**bold** zebra");
    const lines = (await cli("search", "zebra", "plan")).stdout.split("\n");
    expect(lines.slice(1, 3)).toEqual(["  ⟦Zebra⟧ ⟦plan⟧", "  **bold** ⟦zebra⟧"]);
    const json = JSON.parse((await cli("--json", "search", "zebra")).stdout);
    expect(json.hits[0]).toMatchObject({ title: "Zebra plan", markedTitle: "⟦Zebra⟧ plan" });
    // A match in the title only: the snippet is the body's start, unmarked.
    await cli("post", "plan", "--from", "bob", "--title", "Quokka", "--body", "see title");
    expect((await cli("search", "quokka")).stdout.split("\n").slice(1, 3)).toEqual([
      "  ⟦Quokka⟧",
      "  see title",
    ]);
  });

  it("--json gives the hits with the total; filters and the limit apply", async () => {
    const r = await cli("--json", "search", "postgres", "--from", "alice", "-n", "5");
    expect(JSON.parse(r.stdout)).toMatchObject({
      query: "postgres",
      total: 1,
      hits: [{ channel: "plan", seq: 1, from: "alice", title: "Schema v2" }],
    });
    const scoped = await cli(
      "--json",
      "search",
      "--channel",
      "plan",
      "postgres",
      "--channel",
      "plan",
    );
    expect(JSON.parse(scoped.stdout)).toMatchObject({ query: "postgres", total: 2 });
    const limited = JSON.parse((await cli("--json", "search", "postgres", "-n", "1")).stdout);
    expect(limited).toMatchObject({ total: 2, hits: [{ seq: 2 }] });
  });

  it("bad input: a clear error, exit 64 for a bad query (1 for a missing channel), never a crash or a hang", async () => {
    const started = Date.now();
    for (const [args, message, code] of [
      [["search", ""], /search query is empty/, 64],
      [["search", "x".repeat(10_240)], /at most 1000/, 64],
      [["search", "x", "--since", "yesterday-ish"], /--since "yesterday-ish" is not a date/, 64],
      [["search", "x", "--channel", "nope"], /nope/, 1],
    ] as const) {
      const r = await cli(...args);
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
    }
    const regex = await cli("search", "(.*)+[");
    expect(regex.code).toBe(0);
    expect(regex.stderr).toContain("(no messages match)");
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe("agent-chat thread and read --thread", () => {
  it("prints the root and its replies, indented by depth; --json as a tree", async () => {
    const r = await cli("thread", "plan", "3");
    expect(r.code).toBe(0);
    const heads = r.stdout.split("\n").filter((l) => /^\s*#\d/.test(l));
    expect(heads.map((l) => l.replace(/ \[.*$/, ""))).toEqual([
      "#1 alice",
      "    #2 bob → alice",
      "        #3 alice",
    ]);
    const tree = JSON.parse((await cli("--json", "thread", "plan", "2")).stdout);
    expect(tree.thread).toMatchObject({
      seq: 1,
      replies: [{ seq: 2, reply_to: 1, replies: [{ seq: 3, replies: [] }] }],
    });
  });

  it("read --thread N prints only that thread, moving no cursor", async () => {
    const r = await cli("read", "plan", "--thread", "2");
    expect(r.code).toBe(0);
    expect(r.stdout.match(/^seq: \d+$/gm)).toEqual(["seq: 1", "seq: 2", "seq: 3"]);
    const after = JSON.parse((await cli("--json", "read", "plan", "--as", "dave")).stdout);
    expect(after.messages.map((m: { seq: number }) => m.seq)).toEqual([1, 3, 4]);
    const missing = await cli("thread", "plan", "99");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no message 99 in plan");
  });
});

describe("agent-chat archive, peek --archived and prune", () => {
  it("archives, says what moved and what stays; peek --archived reaches back", async () => {
    const dry = await cli("archive", "plan", "--before", "4", "--dry-run");
    expect(dry.stdout).toMatch(
      /^would archive 3 message\(s\) of plan \(#1…#3\) into _archive\/\d{4}-\d\d; #4, the newest, stays\n$/,
    );
    const r = await cli("--json", "archive", "plan", "--older-than", "0s");
    expect(JSON.parse(r.stdout)).toMatchObject({ moved: [1, 2, 3], kept: 4, dryRun: false });
    expect(readdirSync(join(tmp.dir, "plan")).filter((n) => n.endsWith(".md"))).toHaveLength(1);
    const peek = await cli("--json", "peek", "plan", "-n", "2", "--archived");
    expect(JSON.parse(peek.stdout).messages.map((m: { seq: number }) => m.seq)).toEqual([3, 4]);
    const hot = await cli("--json", "peek", "plan", "-n", "2");
    expect(JSON.parse(hot.stdout).messages.map((m: { seq: number }) => m.seq)).toEqual([4]);
    const found = await cli("search", "postgres", "--archived");
    expect(found.stdout).toContain("plan#2");
    expect(found.stdout).toContain("(archived)");
    const posted = await cli("post", "plan", "--from", "alice", "--body", "on");
    expect(posted.stdout).toMatch(/^posted #5 /);
  });

  it("archive needs --before or --older-than; a URL root is refused before connecting", async () => {
    const none = await cli("archive", "plan");
    expect(none.code).toBe(64);
    expect(none.stderr).toContain("--before N or --older-than 30d");
    const nats = await runCli(["--root", "nats://127.0.0.1:1", "archive", "plan", "--before", "2"]);
    expect(nats.code).toBe(64);
    expect(nats.stderr).toContain("on NATS, archive exports what it drops first");
    const bad = await cli("prune", "--older-than", "a month");
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("is not a duration");
  });

  it("prune lists the agents it removes", async () => {
    await cli("read", "plan", "--as", "bob");
    const none = await cli("prune", "--older-than", "30d");
    expect(none.stderr).toContain("(no agent is that long gone)");
    const all = await cli("prune", "--older-than", "0s", "--dry-run");
    expect(all.stdout).toMatch(/^would remove plan: bob \(last seen \d{4}-/);
  });
});
