import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { collect, runCli, startCli, untilStdout, watching } from "../helpers/cli.js";
import { tempDir, writeOldFile } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
const cli = (args: string[], input?: string) =>
  runCli(args, input === undefined ? { root: tmp.dir } : { root: tmp.dir, input });

beforeEach(async () => {
  tmp = tempDir();
  expect((await cli(["init", "review", "--members", "alice,bob", "--topic", "schema"])).code).toBe(
    0,
  );
});

afterEach(() => tmp.cleanup());

const RULE = "=".repeat(70);

describe("the reference's commands, output and exit codes", () => {
  it("post, then read prints each message as a rule of 70 '=', the file text and an empty line", async () => {
    const post = await cli([
      "post",
      "review",
      "--from",
      "alice",
      "--to",
      "bob",
      "--title",
      "Hi",
      "--body",
      "Ready?",
    ]);
    expect(post.code).toBe(0);
    expect(post.stdout).toMatch(/^posted #1 .*review\/0001-alice-hi\.md\n$/);
    const read = await cli(["read", "review", "--as", "bob"]);
    expect(read.code).toBe(0);
    const file = readFileSync(join(tmp.dir, "review", "0001-alice-hi.md"), "utf8");
    expect(read.stdout).toBe(`${RULE}\n${file}\n`);
    const again = await cli(["read", "review", "--as", "bob"]);
    // chat.py's line, on stdout as its own.
    expect(again.stdout).toBe("(no new messages for bob in 'review'; cursor at #1)\n");
  });

  it("takes the root from --root before AGENT_CHAT_ROOT", async () => {
    const other = tempDir();
    try {
      const r = await runCli(["--root", other.dir, "init", "x"], { root: tmp.dir });
      expect(r.code).toBe(0);
      expect(existsSync(join(other.dir, "x", "_meta.json"))).toBe(true);
      expect(existsSync(join(tmp.dir, "x"))).toBe(false);
    } finally {
      other.cleanup();
    }
  });

  it("reads the body from stdin and from --body-file", async () => {
    expect(
      (await cli(["post", "review", "--from", "alice", "--title", "stdin"], "from stdin\n")).code,
    ).toBe(0);
    const f = join(tmp.dir, "body.md");
    writeFileSync(f, "# From a file\n\ntext");
    expect((await cli(["post", "review", "--from", "alice", "--body-file", f])).code).toBe(0);
    const peek = await cli(["--json", "peek", "review", "-n", "5"]);
    const { messages } = JSON.parse(peek.stdout);
    expect(messages.map((m: { title: string; body: string }) => [m.title, m.body])).toEqual([
      ["stdin", "from stdin"],
      ["From a file", "# From a file\n\ntext"],
    ]);
  });

  it.each([
    [
      ["--body-file", "/nonexistent/body.md"],
      /could not read body file \/nonexistent\/body\.md: ENOENT/,
    ],
    [["--body", "x".repeat(50)], /message body is 50 bytes; the limit is 10/],
  ])("refuses a bad body %j with exit 1 and writes nothing", async (flags, message) => {
    const r = await cli([
      "--max-body",
      "10",
      "post",
      "review",
      "--from",
      "alice",
      "--title",
      "t",
      ...flags,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/^agent-chat: /);
    expect(readdirSync(join(tmp.dir, "review")).filter((n) => n.endsWith(".md"))).toEqual([]);
  });

  it("refuses a body that is not UTF-8, on stdin or in --body-file, and posts nothing", async () => {
    const bad = Buffer.concat([Buffer.from("caf\u00e9 \uFFFD ok "), Buffer.from([0xff, 0x41])]);
    const piped = await runCli(["post", "review", "--from", "alice"], {
      root: tmp.dir,
      input: bad,
    });
    expect(piped.code).toBe(64);
    expect(piped.stderr).toBe(
      "agent-chat: the body on stdin is not valid UTF-8 (byte 0xff at offset 13); nothing was posted\n",
    );
    const file = join(tmp.dir, "body.bin");
    writeFileSync(file, Buffer.from([0x68, 0x69, 0xc3]));
    const fromFile = await cli(["post", "review", "--from", "alice", "--body-file", file]);
    expect(fromFile.code).toBe(64);
    expect(fromFile.stderr).toMatch(
      /body file .*body\.bin is not valid UTF-8 \(byte 0xc3 at offset 2\)/,
    );
    expect(readdirSync(join(tmp.dir, "review")).filter((n) => n.endsWith(".md"))).toEqual([]);
  });

  it("refuses a body over the limit on stdin without reading it all", async () => {
    const r = await cli(
      ["--max-body", "1000", "post", "review", "--from", "a", "--title", "t"],
      "y".repeat(5_000_000),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/more than 1000 bytes/);
  });

  it.each([
    [["bogus"], /unknown command 'bogus'/],
    [["read", "review"], /--as NAME is required \(or set AGENT_CHAT_NAME\)/],
    [["post", "review", "--body", "x"], /--from NAME is required/],
    [["read", "review", "--as", "bob", "--bogus"], /unknown option '--bogus'/],
    [
      ["wait", "review", "--as", "bob", "--timeout", "soon"],
      /--timeout must be a number of seconds/,
    ],
    [["peek", "review", "-n", "x"], /-n must be a positive integer/],
    [["init"], /missing required argument 'channel'/],
    [["archive", "review"], /say which messages to archive: --before N or --older-than 30d/],
    [["search", ""], /the search query is empty/],
    [["lease", "add", "review", "../outside/**", "--as", "bob"], /'\.' or '\.\.' segment/],
    [["init", "../x"], /invalid channel name/],
    [["read", "review", "--as", "../bob"], /invalid agent name/],
    [["post", "review", "--from", "alice", "--body", "  "], /message body is empty/],
    [["post", "review", "--from", "alice", "--to", "a b", "--body", "x"], /invalid agent name/],
    [["claim", "review", "1", "--as", "bob", "--ttl", "9y"], /lease|ttl|TTL/],
  ])("usage error %j exits 64", async (args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(message);
  });

  it("read --all shows the whole channel from #1, whoever each message is for (as chat.py)", async () => {
    await cli(["post", "review", "--from", "alice", "--to", "carol", "--body", "for carol"]);
    await cli(["post", "review", "--from", "bob", "--body", "own"]);
    await cli(["post", "review", "--from", "alice", "--to", "bob", "--body", "for bob"]);
    const r = await cli(["--json", "read", "review", "--as", "bob", "--all"]);
    const out = JSON.parse(r.stdout) as { cursor: number; messages: Array<{ body: string }> };
    expect(out.messages.map((m) => m.body)).toEqual(["for carol", "own", "for bob"]);
    expect(out.cursor).toBe(3);
  });

  it("with --json, every usage error is one JSON error on stdout, exit 64", async () => {
    for (const args of [
      ["--json", "bogus"],
      ["--json", "read", "review"],
      ["--json", "read", "review", "--as", "bob", "--bogus"],
      ["read", "review", "--json"],
      ["--json", "init"],
      ["--json", "--max-body", "abc", "channels"],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(64);
      const out = JSON.parse(r.stdout) as { error: { code: string; message: string } };
      expect(out.error.code, args.join(" ")).toBe("USAGE");
      expect(out.error.message.length).toBeGreaterThan(5);
      expect(out.error.message).not.toMatch(/^error:/);
    }
  });

  it.each([
    ["--max-body", ["--max-body", "{}", "channels"]],
    ["--timeout", ["wait", "review", "--as", "bob", "--timeout", "{}"]],
    ["--interval", ["wait", "review", "--as", "bob", "--interval", "{}"]],
    ["-n", ["peek", "review", "-n", "{}"]],
    ["--reply", ["post", "review", "--from", "a", "--body", "x", "--reply", "{}"]],
    ["--max-line", ["serve", "--max-line", "{}"]],
    ["--veto-window", ["init", "gov", "--maintainer", "m", "--veto-window", "{}"]],
  ])(
    "%s refuses abc, 1e3, 0x10, -5 and empty alike: a usage error, exit 64",
    async (flag, template) => {
      for (const bad of ["abc", "1e3", "0x10", "-5", ""]) {
        const r = await cli(template.map((a) => (a === "{}" ? bad : a)));
        expect(r.code, `${flag} ${JSON.stringify(bad)}: ${r.stderr}`).toBe(64);
        expect(r.stderr).toContain(`${flag} must be`);
        expect(r.stderr).toContain(JSON.stringify(bad));
      }
    },
  );

  it("a reader closing stdout early ends the command quietly with 141, no stack trace", async () => {
    // Far more output than a pipe holds, so the command is still writing when the reader goes.
    const { openStore } = await import("../../src/client/open.js");
    const store = await openStore(tmp.dir, { watch: false });
    for (let i = 0; i < 200; i++) {
      await store.post("review", { from: "alice", body: `${i} ${"y".repeat(2000)}` });
    }
    await store.close();
    const child = startCli(["peek", "review", "-n", "200"], { root: tmp.dir });
    await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
    child.stdout!.destroy();
    const r = await collect(child);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(141);
  });

  it("names that could escape the root are refused with exit 64 and what is allowed", async () => {
    for (const bad of ["../x", "a/b", ".hidden", "_x"]) {
      const r = await cli(["init", bad]);
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/invalid channel name .*: use ASCII letters, digits/);
    }
    const r = await cli(["read", "review", "--as", "../bob"]);
    expect(r.stderr).toMatch(/invalid agent name/);
  });

  it("a missing channel and a corrupt _meta.json are one clear line, no stack trace", async () => {
    const missing = await cli(["read", "nope", "--as", "bob"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `agent-chat: no channel nope in ${tmp.dir} (create it with: agent-chat init nope)\n`,
    );
    writeFileSync(join(tmp.dir, "review", "_meta.json"), "{oops");
    const corrupt = await cli(["roster", "review"]);
    expect(corrupt.code).toBe(1);
    expect(corrupt.stderr).toMatch(
      /^agent-chat: channel review: _meta.json is not valid JSON( \(at character \d+\))?\n$/,
    );
    expect(corrupt.stderr.split("\n")).toHaveLength(2);
  });

  it("wait: exit 2 on timeout, 130 on Ctrl-C, and the cursor does not move", async () => {
    const t = await cli(["wait", "review", "--as", "bob", "--timeout", "0.2"]);
    expect(t.code).toBe(2);
    expect(t.stderr).toMatch(/no relevant message within 0.2 s/);
    const waiter = startCli(["wait", "review", "--as", "bob"], { root: tmp.dir });
    await watching(waiter);
    waiter.kill("SIGINT");
    const r = await collect(waiter);
    expect(r.code).toBe(130);
    expect(existsSync(join(tmp.dir, "review", ".cursors", "bob.txt"))).toBe(false);
  });

  it("wait on several channels returns the first relevant message with --json", async () => {
    await cli(["init", "deploy"]);
    const waiter = startCli(["--json", "wait", "review,deploy", "--as", "bob", "--timeout", "20"], {
      root: tmp.dir,
    });
    await watching(waiter);
    await cli(["post", "deploy", "--from", "alice", "--body", "shipped"]);
    const r = await collect(waiter);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.messages.map((m: { channel: string; body: string }) => [m.channel, m.body])).toEqual(
      [["deploy", "shipped"]],
    );
    expect(doc.cursors).toEqual({ review: 0, deploy: 1 });
  });

  it("tasks: add, list, claim (loser exits 3), release by holder only", async () => {
    expect(
      (await cli(["task", "add", "review", "--title", "Review schema", "--as", "alice"])).stdout,
    ).toBe("added task-1 in review: Review schema\n");
    const claim = await cli(["claim", "review", "task-1.md", "--as", "bob"]);
    expect(claim.code).toBe(0);
    // chat.py's line on stdout, our lease on stderr.
    expect(claim.stdout).toBe("claimed task-1.md -> task-1.CLAIMED-bob.md\n");
    expect(claim.stderr).toMatch(/^task-1 in review: bob's, token 1, (29m \d+s|30m) left\n$/);
    const lost = await cli(["claim", "review", "1", "--as", "carol"]);
    expect(lost.code).toBe(3);
    expect(lost.stderr).toBe("agent-chat: task 1 is already claimed by bob\n");
    const list = await cli(["tasks", "review"]);
    expect(list.stdout).toMatch(
      /^task-1\tclaimed by bob\tReview schema\ttoken 1, (29m \d+s|30m) left\n$/,
    );
    const notHolder = await cli(["release", "review", "1", "--as", "carol"]);
    expect(notHolder.code).toBe(3);
    expect(notHolder.stderr).toMatch(
      /claimed by bob \(token 1, expires [^)]+\); only the holder can release it/,
    );
    expect((await cli(["release", "review", "1", "--as", "bob"])).code).toBe(0);
    const json = JSON.parse((await cli(["--json", "tasks", "review"])).stdout);
    expect(json.tasks).toMatchObject([{ id: "1", state: "open", title: "Review schema" }]);
  });

  it("tail prints new messages as NDJSON until Ctrl-C", async () => {
    const tail = startCli(["--json", "tail", "review"], { root: tmp.dir });
    await watching(tail);
    await cli(["post", "review", "--from", "alice", "--body", "one"]);
    await cli(["post", "review", "--from", "bob", "--body", "two"]);
    await untilStdout(tail, (out) => out.split("\n").length > 2);
    tail.kill("SIGINT");
    const r = await collect(tail);
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((m) => [m.seq, m.from, m.body])).toEqual([
      [1, "alice", "one"],
      [2, "bob", "two"],
    ]);
  });

  it("--json on every command prints exactly one JSON document", async () => {
    await cli(["post", "review", "--from", "alice", "--body", "x"]);
    for (const args of [
      ["channels"],
      ["roster", "review"],
      ["post", "review", "--from", "alice", "--body", "y"],
      ["read", "review", "--as", "bob", "--peek"],
      ["peek", "review"],
      ["tasks", "review"],
      ["task", "add", "review", "--title", "t", "--as", "a"],
      ["claim", "review", "1", "--as", "bob"],
      ["release", "review", "1", "--as", "bob"],
      ["init", "another"],
      ["read", "nope", "--as", "bob"],
    ]) {
      const r = await cli(["--json", ...args]);
      expect(r.stdout.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(() => JSON.parse(r.stdout), args.join(" ")).not.toThrow();
    }
    const err = JSON.parse((await cli(["--json", "read", "nope", "--as", "bob"])).stdout);
    expect(err).toEqual({ error: { code: "CHANNEL_NOT_FOUND", message: expect.any(String) } });
  });

  it("every command's --help has examples; --version prints the version", async () => {
    const version = await cli(["--version"]);
    expect(version.stdout).toBe(`${JSON.parse(readFileSync("package.json", "utf8")).version}\n`);
    const commands = ["init", "channels", "roster", "post", "read", "wait", "peek", "tail"];
    commands.push("claim", "release", "tasks");
    const helps = await Promise.all(commands.map((cmd) => cli([cmd, "--help"])));
    helps.forEach((r, i) => {
      expect(r.code, commands[i]).toBe(0);
      expect(r.stdout, commands[i]).toMatch(/Examples?:\n {2}agent-chat /);
    });
  }, 60_000);

  it("the main --help wraps its description as one paragraph, never mid-sentence", async () => {
    const r = await cli(["--help"]);
    const paragraph = r.stdout.split("\n\n")[1]!.split("\n");
    expect(paragraph.join(" ")).toBe(
      "Channels of markdown messages for agent sessions and people: post, read, wait without " +
        "spending tokens, claim tasks atomically. Compatible with the reference chat.py.",
    );
    // Wrapped to the width (80 on a pipe): only the last line may be short.
    for (const line of paragraph.slice(0, -1)) expect(line.length, line).toBeGreaterThan(60);
  });
});

describe("leases: claim --ttl, renew, done, fence, release --token", () => {
  beforeEach(async () => {
    expect((await cli(["task", "add", "review", "--title", "Ship", "--as", "alice"])).code).toBe(0);
  });

  /** Ends bob's lease as time would: its expiry, in the lease file, moves into the past. */
  function expireLease(id: string): void {
    const path = join(tmp.dir, "review", `.task-${id}.lease`);
    const lease = JSON.parse(readFileSync(path, "utf8"));
    writeFileSync(path, JSON.stringify({ ...lease, expiresAt: Date.now() - 5 * 60_000 }));
  }

  it("claim --ttl prints the token, also in --json; renew and done with it", async () => {
    const json = await cli(["--json", "claim", "review", "1", "--as", "bob", "--ttl", "1h30m"]);
    expect(json.code).toBe(0);
    const info = JSON.parse(json.stdout);
    expect(info).toMatchObject({ id: "1", state: "claimed", holder: "bob", token: 1 });
    const left = Date.parse(info.expiresAt) - Date.now();
    expect(left).toBeGreaterThan(89 * 60_000);
    expect(left).toBeLessThanOrEqual(90 * 60_000);

    const renew = await cli(["renew", "review", "1", "--as", "bob", "--token", "1", "--ttl", "2h"]);
    expect(renew.code).toBe(0);
    expect(renew.stdout).toMatch(/^renewed task-1 in review \(token 1, (1h 59m|2h) left\)\n$/);
    expect((await cli(["fence", "review", "1", "--token", "1"])).code).toBe(0);

    const done = await cli(["done", "review", "1", "--as", "bob", "--token", "1", "--note", "v2"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toBe("done: task-1 in review by bob\n");
    expect((await cli(["tasks", "review"])).stdout).toBe(
      "task-1\tdone by bob\tShip\ttoken 1, note: v2\n",
    );
    // chat.py, which knows no "done", sees the task taken and cannot hand it out again.
    expect(readdirSync(join(tmp.dir, "review")).filter((f) => f.startsWith("task-"))).toEqual([
      "task-1.CLAIMED-bob.md",
    ]);
    const fence = await cli(["fence", "review", "1", "--token", "1"]);
    expect(fence.code).toBe(3);
    expect(fence.stderr).toBe("agent-chat: token 1 is not the live grant of task-1: done by bob\n");
  });

  it("an expired lease goes to the next claimant with token 2; the late holder exits 3 and changes nothing", async () => {
    expect((await cli(["claim", "review", "1", "--as", "bob"])).code).toBe(0);
    expireLease("1");
    expect((await cli(["tasks", "review"])).stdout).toMatch(
      /^task-1\texpired, held by bob\tShip\ttoken 1, expired 5m( \d+s)? ago\n$/,
    );
    const taken = await cli(["claim", "review", "1", "--as", "carol"]);
    expect(taken.stdout).toBe("claimed 1 -> task-1.CLAIMED-carol.md\n");
    expect(taken.stderr).toMatch(/^task-1 in review: carol's, token 2, /);
    for (const late of [
      ["done", "review", "1", "--as", "bob", "--token", "1"],
      ["renew", "review", "1", "--as", "bob", "--token", "1"],
      ["release", "review", "1", "--as", "bob", "--token", "1"],
    ]) {
      const r = await cli(late);
      expect(r.code, late.join(" ")).toBe(3);
      expect(r.stderr).toMatch(/^agent-chat: task 1 is claimed by carol \(token 2, expires /);
    }
    const stale = await cli(["fence", "review", "1", "--token", "1"]);
    expect(stale.code).toBe(3);
    expect(stale.stderr).toMatch(/not the live grant of task-1: claimed by carol$/m);
    const fence = await cli(["--json", "fence", "review", "1", "--token", "2"]);
    expect(fence.code).toBe(0);
    expect(JSON.parse(fence.stdout)).toMatchObject({ live: true, task: { holder: "carol" } });
    const release = await cli(["release", "review", "1", "--as", "carol", "--token", "2"]);
    expect(release.code).toBe(0);
    expect((await cli(["tasks", "review"])).stdout).toBe("task-1\topen\tShip\n");
  });

  it.each([["0"], ["0m"], ["-5m"], ["soon"], ["1.5h"], ["8d"], ["169h"]])(
    "claim --ttl %s is a usage error, exit 64, and claims nothing",
    async (ttl) => {
      const r = await cli(["claim", "review", "1", "--as", "bob", `--ttl=${ttl}`]);
      expect(r.code).toBe(64);
      expect(r.stderr).toContain("--ttl must be a duration above 0 and at most 7d");
      expect((await cli(["tasks", "review"])).stdout).toBe("task-1\topen\tShip\n");
    },
  );

  it("a task chat.py claimed (a renamed marker, no lease) shows no lease and never expires", async () => {
    const dir = join(tmp.dir, "review");
    const { renameSync } = await import("node:fs");
    renameSync(join(dir, "task-1.md"), join(dir, "task-1.CLAIMED-dave.md"));
    expect((await cli(["tasks", "review"])).stdout).toBe(
      "task-1\tclaimed by dave\tShip\tno lease: claimed by chat.py, never expires\n",
    );
    expect((await cli(["claim", "review", "1", "--as", "bob"])).code).toBe(3);
    expect((await cli(["fence", "review", "1", "--token", "1"])).code).toBe(3);
  });
});

describe("one body limit", () => {
  const big = () => {
    const path = join(tmp.dir, "big.md");
    writeFileSync(path, "z".repeat(2_000_000));
    return path;
  };

  it("a post above the channel's limit is refused when written, whatever the poster's --max-body", async () => {
    const r = await cli([
      "--max-body",
      "3000000",
      "post",
      "review",
      "--from",
      "alice",
      "--body-file",
      big(),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "agent-chat: message body is 2000000 bytes; channel review takes at most 1048576, the most " +
        "its readers read (max_body_bytes in its _meta.json, set when the channel is created; else 1 MiB)\n",
    );
    expect(readdirSync(join(tmp.dir, "review")).filter((n) => n.endsWith(".md"))).toEqual([]);
  });

  it("a channel created with a larger limit records it, and every reader reads up to it", async () => {
    expect((await cli(["--max-body", "3000000", "init", "large"])).code).toBe(0);
    const meta = JSON.parse(readFileSync(join(tmp.dir, "large", "_meta.json"), "utf8"));
    expect(Object.keys(meta)).toEqual([
      ...["channel", "members", "topic", "created"],
      ...["channel_id", "max_body_bytes"],
    ]);
    expect(meta.max_body_bytes).toBe(3000000);
    const post = await cli([
      "--max-body",
      "3000000",
      "post",
      "large",
      "--from",
      "a",
      "--body-file",
      big(),
    ]);
    expect(post.code, post.stderr).toBe(0);
    const read = await cli(["--json", "read", "large", "--as", "bob"]);
    expect(read.code).toBe(0);
    const out = JSON.parse(read.stdout);
    expect(out.messages.map((m: { body: string }) => m.body.length)).toEqual([2_000_000]);
    expect(out.warnings).toEqual([]);
    const wait = await cli(["--json", "wait", "large", "--as", "carol", "--timeout", "10"]);
    expect(wait.code, wait.stderr).toBe(0);
    expect(JSON.parse(wait.stdout).messages).toHaveLength(1);
  });

  it("a file too large to read (chat.py has no limit) is reported by a parked wait, not waited on in silence", async () => {
    const header =
      "---\nseq: 1\nfrom: carol\nto: bob\ntitle: huge\nts: 2026-01-01T00:00:00Z\n---\n";
    writeOldFile(join(tmp.dir, "review", "0001-carol-huge.md"), header + "h".repeat(2_000_000));
    const r = await cli(["--json", "wait", "review", "--as", "bob", "--timeout", "2"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /0001-carol-huge\.md: 2000\d+ bytes, more than this reader reads \(a body of 1048576 bytes/,
    );
  });
});
