import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { collect, runCli, startCli, untilStdout, watching } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
const env = { AGENT_CHAT_DAEMON: "off", AGENT_CHAT_HARNESS: undefined, CLAUDECODE: undefined };
const cli = (args: string[]) => runCli(args, { root: tmp.dir, env });
const messages = () => readdirSync(join(tmp.dir, "review")).filter((f) => /^\d/.test(f));

beforeEach(async () => {
  tmp = tempDir();
  expect((await cli(["init", "review", "--members", "alice,bob,carol"])).code).toBe(0);
});

afterEach(() => tmp.cleanup());

interface Who {
  agent: string;
  state: string;
  why?: string;
  parkedOn?: string[];
  unread?: number;
  owes?: number[];
}

async function who(): Promise<Who[]> {
  const r = await cli(["--json", "who", "review"]);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { agents: Who[] }).agents;
}

describe("post --wait-for", () => {
  it("returns 0 once the addressee has read, printing who", async () => {
    const sender = startCli(
      [
        "post",
        "review",
        "--from",
        "alice",
        "--to",
        "bob",
        "--body",
        "ready?",
        "--wait-for",
        "read",
      ],
      { root: tmp.dir, env },
    );
    await untilStdout(sender, (out) => out.includes("posted #1"));
    expect((await cli(["read", "review", "--as", "bob"])).code).toBe(0);
    const r = await collect(sender);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/read by bob\n$/);
  });

  it("exits 2 on timeout, naming who has not and why", async () => {
    const r = await cli([
      "post",
      "review",
      "--from",
      "alice",
      "--to",
      "bob,carol",
      "--body",
      "x",
      "--wait-for",
      "answered",
      "--timeout",
      "1s",
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/#1 in review not answered by bob, carol within 1 s/);
    expect(r.stderr).toMatch(/bob: never notified; never seen/);
  });

  it("--json on timeout still reports the post it made (seq, path), with the timeout, exit 2", async () => {
    const r = await cli([
      "--json",
      "post",
      "review",
      "--from",
      "alice",
      "--to",
      "bob",
      "--body",
      "x",
      "--wait-for",
      "read",
      "--timeout",
      "1s",
    ]);
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out.seq).toBe(1);
    expect(out.path).toMatch(/review[/\\]0001-alice-x\.md$/);
    expect(out.error).toEqual({
      code: "TIMEOUT",
      message: expect.stringMatching(/not read by bob/),
    });
    expect(out.receipts.addressees).toEqual([
      expect.objectContaining({ agent: "bob", state: "stored" }),
    ]);
    expect(messages()).toEqual(["0001-alice-x.md"]);
  });

  it("a bad state, a lone --timeout or a missing channel: a clear error, nothing posted", async () => {
    const bad = await cli([
      "post",
      "review",
      "--from",
      "alice",
      "--body",
      "x",
      "--wait-for",
      "seen",
    ]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--wait-for must be one of stored, notified, read, answered/);
    const lone = await cli(["post", "review", "--from", "alice", "--body", "x", "--timeout", "3"]);
    expect(lone.code).toBe(64);
    const missing = await cli([
      "post",
      "nope",
      "--from",
      "alice",
      "--body",
      "x",
      "--wait-for",
      "read",
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/nope/);
    expect(messages()).toEqual([]);
  });
});

describe("receipts, explain, who", () => {
  it("receipts shows each addressee's state with times; a missing seq exits 1", async () => {
    await cli(["post", "review", "--from", "alice", "--to", "bob", "--body", "one"]);
    await cli(["read", "review", "--as", "bob"]);
    const r = await cli(["--json", "receipts", "review", "1"]);
    expect(r.code).toBe(0);
    const receipts = JSON.parse(r.stdout);
    expect(receipts.addressees).toEqual([
      { agent: "bob", state: "read", readAt: expect.any(String) },
    ]);
    const text = await cli(["receipts", "review", "1"]);
    expect(text.stdout).toMatch(/^#1 in review from alice: one\n {2}bob\tread\tread 20/);
    await cli(["post", "review", "--from", "alice", "--to", "carol", "--body", "two"]);
    expect((await cli(["receipts", "review", "2"])).stdout).toBe(
      "#2 in review from alice: two\n  carol\tstored\n",
    );
    expect((await cli(["receipts", "review", "9"])).code).toBe(1);
    expect((await cli(["receipts", "review", "x"])).code).toBe(64);
  });

  it("a message shown by tail --as bob is notified to bob", async () => {
    const tail = startCli(["tail", "review", "--as", "bob"], { root: tmp.dir, env });
    await watching(tail);
    await cli(["post", "review", "--from", "alice", "--to", "bob", "--body", "seen on tail"]);
    await untilStdout(tail, (out) => out.includes("seen on tail"));
    await vi.waitFor(
      async () => {
        const r = JSON.parse((await cli(["--json", "receipts", "review", "1"])).stdout);
        expect(r.addressees[0]).toMatchObject({ agent: "bob", state: "notified" });
      },
      { timeout: 5_000, interval: 100 },
    );
    tail.kill("SIGINT");
    await collect(tail);
  });

  it("explain --for says what is known of one addressee", async () => {
    await cli(["post", "review", "--from", "alice", "--body", "all of you"]);
    await cli(["read", "review", "--as", "carol"]);
    const r = await cli(["explain", "review", "1", "--for", "bob"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      "#1 in review from alice: all of you\n  bob: never notified; never seen in this store\n",
    );
    const carol = await cli(["explain", "review", "1", "--for", "carol"]);
    expect(carol.stdout).toMatch(/carol: read at 20.*, not answered/);
  });

  it("who: active, never seen, unread, owed answers", async () => {
    await cli([
      "post",
      "review",
      "--from",
      "alice",
      "--to",
      "bob",
      "--status",
      "question",
      "--body",
      "v2?",
    ]);
    const list = await who();
    expect(list.find((p) => p.agent === "alice")).toMatchObject({ state: "active" });
    expect(list.find((p) => p.agent === "bob")).toMatchObject({
      state: "never-seen",
      unread: 1,
      owes: [1],
    });
    const text = await cli(["who", "review"]);
    expect(text.stdout).toMatch(/^alice\tactive \d+s ago \(cli on .*, pid \d+\)\n/);
    expect(text.stdout).toMatch(
      /\nbob\tnever seen\t1 unread, oldest \d+s ago; owes an answer to #1\n/,
    );
  });

  it("a waiter killed with SIGKILL shows as gone, not waiting, within a few seconds", async () => {
    const waiter = startCli(["wait", "review", "--as", "bob", "--timeout", "60"], {
      root: tmp.dir,
      env,
    });
    await vi.waitFor(
      async () => {
        expect((await who()).find((p) => p.agent === "bob")?.state).toBe("waiting");
      },
      { timeout: 15_000, interval: 100 },
    );
    waiter.kill("SIGKILL");
    await collect(waiter);
    const started = Date.now();
    await vi.waitFor(
      async () => {
        const bob = (await who()).find((p) => p.agent === "bob");
        expect(bob).toMatchObject({ state: "gone", parkedOn: ["review"] });
        expect(bob?.why).toMatch(/waiting process \d+ died/);
      },
      { timeout: 5_000, interval: 100 },
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("corrupt, future and hand-written presence files: ignored with one warning each, no crash", async () => {
    const dir = join(tmp.dir, ".presence");
    mkdirSync(dir);
    writeFileSync(join(dir, "bob.json"), "\u0000garbage");
    writeFileSync(join(dir, "carol.json"), JSON.stringify({ v: 2, agent: "carol" }));
    writeFileSync(join(dir, "dave.json"), "dave is on holiday\n");
    const r = await cli(["who", "review"]);
    expect(r.code).toBe(0);
    const warnings = r.stderr.split("\n").filter((l) => l.includes("warning"));
    expect(warnings).toHaveLength(3);
    expect(r.stderr).toMatch(/carol.json|carol .*newer version/);
    expect(r.stdout).toMatch(/\nbob\tnever seen\n/);
    // A command as bob replaces the corrupt record with a good one.
    expect((await cli(["read", "review", "--as", "bob"])).code).toBe(0);
    expect((await who()).find((p) => p.agent === "bob")?.state).toBe("active");
  });
});
