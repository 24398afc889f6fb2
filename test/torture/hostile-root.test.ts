import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { type Daemon, makeWorld, RawClient, startDaemon, type World } from "../daemon/harness.js";
import { type CliResult, runCli, startCli, untilStdout } from "../helpers/cli.js";
import { writeOldFile } from "../helpers/tmp.js";
import { type Agent, connectAgent } from "../mcp/client.js";
import { rawRequest } from "../viewer/helpers.js";

/**
 * docs/design.md §10, "the root is untrusted input": a root full of links, pipes, huge and broken files,
 * beside a sentinel tree outside it. Every command and server is run against it; each must
 * answer in time, safely or with a clear error, never read or change anything outside the root,
 * and the good channel `ok` must keep working throughout.
 */

const SECRET = "SENTINEL-SECRET-5f1c9e";
/** A CLI command (or a server's answer) that takes longer than this hangs. */
const BUDGET_MS = 8_000;
/** The lock's own timeout is 10 s: a command facing a foreign lock may use all of it. */
const LOCK_BUDGET_MS = 20_000;
const HUGE_BYTES = 64 * 1024 * 1024;
/** `read` of the huge channel may grow the CLI by less than half the file over `read ok`. */
const RSS_MARGIN_KB = 32 * 1024;
const BIG = 9_007_199_254_740_991; // Number.MAX_SAFE_INTEGER, as a file name's seq
const PAST = Date.now() / 1000 - 60;

/** Message-shaped, task-shaped and meta-shaped, so that any reader that follows a link shows it. */
const SECRET_MESSAGE = `---\nseq: 1\nfrom: mallory\nto: all\nchannel: x\nts: 2025-01-01T00:00:00+00:00\nstatus: discussion\ntitle: ${SECRET}\n---\n${SECRET}\n`;
const SECRET_META = JSON.stringify({ channel: "x", members: [], topic: SECRET, created: "" });

const GOOD = [
  "big-name",
  "big-seq",
  "cursor-link",
  "fifo",
  "huge",
  "junk",
  "malformed",
  "ok",
  "seq-hard",
  "seq-link",
  "task-link",
  "ws-link",
  "ws-name",
];
/** Folders whose `_meta.json` cannot be used: never listed, named in at most one warning. */
const BROKEN = ["bad-json", "bad-members", "chan-link", "meta-link"];
const ALL = [...GOOD, ...BROKEN].sort();
/** Where a claim or the channel workspace could reach outside the root (and `ok`). */
const TASK_CHANNELS = ["chan-link", "meta-link", "ok", "task-link"];
const WS_CHANNELS = ["bad-json", "chan-link", "fifo", "meta-link", "ok", "ws-link", "ws-name"];

interface Hostile {
  world: World;
  sentinel: string;
  /** Outputs that showed the secret, named by what produced them. */
  leaks: string[];
  /** Bodies posted to `ok` whose post said it succeeded: each must be there exactly once. */
  okPosted: string[];
  before: Map<string, string>;
  cli(args: string[], budgetMs?: number, env?: Record<string, string>): Promise<Outcome>;
  /** What differs outside the root since the world was built. */
  changedOutside(): string[];
}

interface Outcome extends CliResult {
  hung: boolean;
  label: string;
}

/** The parent P of the root holds the sentinel, so `../..` from a channel is P. */
async function hostileWorld(
  plant: (root: string, sentinel: string) => Promise<void>,
): Promise<Hostile> {
  const world = makeWorld();
  const sentinel = join(world.dir, "sentinel");
  const leaks: string[] = [];
  const file = (path: string, text: string) => writeFileSync(join(sentinel, path), text);
  mkdirSync(join(sentinel, "chan"), { recursive: true });
  mkdirSync(join(sentinel, "ws", "inner"), { recursive: true });
  mkdirSync(join(sentinel, "lock-target"), { recursive: true });
  mkdirSync(join(world.dir, "probe"));
  file("secret.md", SECRET_MESSAGE);
  file("seq-link-target.txt", "5");
  file("seq-hard-target.txt", "6");
  file("cursor-target.txt", "99");
  file("meta.json", SECRET_META);
  file("chan/_meta.json", SECRET_META);
  file("chan/0001-mallory-secret.md", SECRET_MESSAGE);
  file("ws/secret.md", SECRET_MESSAGE);
  file("ws/inner/secret.md", SECRET_MESSAGE);
  file("lock-target/keep.txt", SECRET);
  const h: Hostile = {
    world,
    sentinel,
    leaks,
    okPosted: [],
    before: new Map(),
    async cli(args, budgetMs = BUDGET_MS, env = {}) {
      const label = `agent-chat ${args.join(" ")}`;
      let r: Outcome;
      try {
        const res = await runCli(args, { env: { ...world.env, ...env }, timeoutMs: budgetMs });
        r = { ...res, hung: false, label };
      } catch {
        r = { code: null, signal: "SIGKILL", stdout: "", stderr: "", hung: true, label };
      }
      if (`${r.stdout}${r.stderr}`.includes(SECRET)) leaks.push(label);
      return r;
    },
    changedOutside() {
      const now = outsideChecksum(world.dir);
      const paths = new Set([...h.before.keys(), ...now.keys()]);
      return [...paths].filter((p) => h.before.get(p) !== now.get(p)).sort();
    },
  };
  await plant(world.root, sentinel);
  h.before = outsideChecksum(world.dir);
  return h;
}

/** Path → type, size, mode, mtime and content (or link target) of everything outside the root. */
function outsideChecksum(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!lstatSync(dir, { throwIfNoEntry: false })) return new Map([[".", "removed"]]);
  // The world's parent folder: only the names in it (the daemon's socket lives in run/).
  const top = readdirSync(dir).filter((n) => !["root", "run", "home", "probe"].includes(n));
  out.set(".", top.sort().join(","));
  const walk = (rel: string) => {
    const path = join(dir, rel);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) return;
    let what = `${st.mode.toString(8)} ${st.size} ${st.mtimeMs}`;
    if (st.isSymbolicLink()) what += ` -> ${readlinkSync(path)}`;
    else if (st.isFile())
      what += ` ${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
    out.set(rel, what);
    if (st.isDirectory()) for (const n of readdirSync(path).sort()) walk(join(rel, n));
  };
  walk("sentinel");
  return out;
}

function message(seq: number, channel: string, title: string, body: string): string {
  return `---\nseq: ${seq}\nfrom: eve\nto: all\nchannel: ${channel}\nts: 2025-01-01T00:00:00+00:00\nstatus: discussion\ntitle: ${title}\n---\n${body}\n`;
}

/** What is wrong with a command's outcome; empty when it succeeded, or failed clearly. */
function problems(r: Outcome, allowed: number[] = [0, 1]): string[] {
  if (r.hung) return [`${r.label}: hung (killed after its budget)`];
  const out: string[] = [];
  if (r.code === null || !allowed.includes(r.code)) {
    out.push(`${r.label}: exit ${r.code ?? r.signal} (allowed ${allowed.join(", ")})`);
  }
  if (/^\s+at /m.test(r.stderr)) out.push(`${r.label}: stack trace: ${r.stderr.slice(0, 300)}`);
  const last = r.stderr.trimEnd().split("\n").at(-1) ?? "";
  if (r.code === 1 && !last.startsWith("agent-chat: ")) {
    out.push(`${r.label}: unclear error: ${JSON.stringify(r.stderr.slice(0, 300))}`);
  }
  if (`${r.stdout}${r.stderr}`.includes(SECRET)) out.push(`${r.label}: shows the secret`);
  return out;
}

function json<T>(r: Outcome): T {
  return JSON.parse(r.stdout) as T;
}

interface ReadJson {
  cursor: number;
  messages: Array<{ seq: number; body: string; title: string }>;
}

/** Sets up the channels of the main hostile world (see the list). */
async function plantAll(root: string, sentinel: string): Promise<void> {
  const store = new FsStore(root, { watch: false });
  const post = (ch: string, body: string) =>
    store.post(ch, { from: "alice", title: body, body: `${body} in ${ch}` });
  for (const ch of GOOD) await store.init(ch);
  for (const ch of ["ok", "seq-link", "seq-hard", "fifo", "malformed", "cursor-link", "huge"]) {
    await post(ch, "first");
  }
  await post("ok", "second");
  await post("ok", "third");
  await post("cursor-link", "second");
  await store.addTask("ok", { title: "Write the summary", from: "alice" });
  await store.close();
  const at = (ch: string, ...rest: string[]) => join(root, ch, ...rest);

  rmSync(at("seq-link", ".seq"));
  symlinkSync("../../sentinel/seq-link-target.txt", at("seq-link", ".seq"));
  rmSync(at("seq-hard", ".seq"));
  linkSync(join(sentinel, "seq-hard-target.txt"), at("seq-hard", ".seq"));
  execFileSync("mkfifo", [at("fifo", "0002-eve-pipe.md")]);
  writeOldFile(at("big-name", `${BIG}-eve-big.md`), message(BIG, "big-name", "big", "big"));
  writeFileSync(at("big-seq", ".seq"), String(BIG - 1));
  writeOldFile(at("malformed", "0002-notes.md"), "---\nfrom: eve\ntitle: notes\nno end\n");
  symlinkSync(join(sentinel, "secret.md"), at("task-link", "task-7.md"));
  mkdirSync(at("meta-link"));
  symlinkSync("../../sentinel/meta.json", at("meta-link", "_meta.json"));
  symlinkSync("../sentinel/chan", at("chan-link"));
  mkdirSync(at("cursor-link", ".cursors"), { recursive: true });
  symlinkSync(join(sentinel, "cursor-target.txt"), at("cursor-link", ".cursors", "bob.txt"));
  mkdirSync(at("bad-json"));
  writeFileSync(at("bad-json", "_meta.json"), '{"channel": "bad-json", "members": [');
  mkdirSync(at("bad-members"));
  writeFileSync(at("bad-members", "_meta.json"), JSON.stringify({ channel: "x", members: 5 }));
  symlinkSync(join(sentinel, "ws"), at("ws-link", "_workspace"));
  mkdirSync(at("ws-name", "_workspace", "c++"), { recursive: true });
  writeFileSync(at("ws-name", "_workspace", "c++", "notes.md"), "c++ notes\n");
  // Sparse: 64 MB long, a few bytes on disk, a message's frontmatter first.
  writeFileSync(at("huge", "0002-eve-huge.md"), message(2, "huge", "huge", "x"));
  truncateSync(at("huge", "0002-eve-huge.md"), HUGE_BYTES);
  utimesSync(at("huge", "0002-eve-huge.md"), PAST, PAST);
  writeOldFile(at("junk", "0001-eve-binary.md"), Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28]));
  writeOldFile(at("junk", "0002-eve-empty.md"), "");
  writeOldFile(at("junk", "0003-eve-fine.md"), message(3, "junk", "fine", "fine"));
}

/** Max RSS (KB) of one CLI run, written by a preloaded hook as the process exits. */
async function cliRss(h: Hostile, args: string[]): Promise<{ kb: number; r: Outcome }> {
  const probe = join(h.world.dir, "probe");
  const hook = join(probe, "rss.cjs");
  const out = join(probe, `rss-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    hook,
    `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(out)}, String(process.resourceUsage().maxRSS)));`,
  );
  const r = await h.cli(args, BUDGET_MS, { NODE_OPTIONS: `--require ${hook}` });
  let kb = Number.NaN;
  try {
    kb = Number(readFileSync(out, "utf8"));
  } catch {
    // killed: no figure
  }
  return { kb, r };
}

describe.each([
  ["relative", "../.."],
  ["absolute", "sentinel/lock-target"],
])("a stale `_seq.lock` that is a symbolic link (%s target)", (_kind, target) => {
  let h: Hostile;
  beforeAll(async () => {
    h = await hostileWorld(async (root, sentinel) => {
      const store = new FsStore(root, { watch: false });
      for (const ch of ["ok", "lock"]) {
        await store.init(ch);
        await store.post(ch, { from: "alice", title: "first", body: "first" });
        await store.addTask(ch, { title: "a task", from: "alice" });
      }
      await store.close();
      const link = join(root, "lock", "_seq.lock");
      symlinkSync(target === "../.." ? target : join(sentinel, "lock-target"), link);
      lutimesSync(link, PAST, PAST);
    });
  });
  afterAll(() => h.world.cleanup());

  it("post, claim and release answer in time, and nothing outside the root is touched", async () => {
    // At once: each may wait out the lock's 10 s timeout.
    const runs = await Promise.all(
      [
        ["--json", "post", "lock", "--from", "eve", "--title", "t", "--body", "b"],
        ["claim", "lock", "1", "--as", "bob"],
        ["release", "lock", "1", "--as", "bob"],
      ].map((args) => h.cli(args, LOCK_BUDGET_MS)),
    );
    expect({
      problems: runs.flatMap((r) => problems(r, [0, 1, 3])),
      changedOutside: h.changedOutside(),
    }).toEqual({ problems: [], changedOutside: [] });
  });

  it("the good channel beside it still reads and posts", async () => {
    const post = await h.cli(["--json", "post", "ok", "--from", "eve", "--body", "after"]);
    const read = await h.cli(["--json", "read", "ok", "--as", "zed", "--all"]);
    expect([...problems(post, [0]), ...problems(read, [0])]).toEqual([]);
    expect(json<ReadJson>(read).messages.map((m) => [m.seq, m.body])).toEqual([
      [1, "first"],
      [2, "after"],
    ]);
  });
});

describe("a hostile root", () => {
  let h: Hostile;
  beforeAll(async () => {
    h = await hostileWorld(plantAll);
  });
  afterAll(() => h.world.cleanup());

  it("`channels` lists every usable channel and names each broken one in at most one warning", async () => {
    const [human, machine] = await Promise.all([
      h.cli(["channels"]),
      h.cli(["--json", "channels"]),
    ]);
    expect([...problems(human, [0]), ...problems(machine, [0])]).toEqual([]);
    // The table (chat.py's columns): a header, then a line per channel and its indented "last:".
    const [header, ...rows] = human.stdout.split("\n").filter((l) => l && !l.startsWith(" "));
    expect(header).toMatch(/^CHANNEL\s+MSGS/);
    const listed = rows.map((l) => l.split(/\s+/)[0]);
    const listedJson = json<{ channels: Array<{ name: string }> }>(machine).channels.map(
      (c) => c.name,
    );
    expect(listed).toEqual(GOOD);
    expect(listedJson).toEqual(GOOD);
    const lines = human.stderr.split("\n");
    const warnings = Object.fromEntries(
      BROKEN.map((ch) => [ch, lines.filter((l) => l.includes(ch)).length]),
    );
    // The two corrupt ones must be named; the links may be passed over silently.
    expect(warnings).toMatchObject({ "bad-json": 1, "bad-members": 1 });
    expect(Math.max(...Object.values(warnings))).toBeLessThanOrEqual(1);
  });

  it.each(["big-name", "big-seq"])(
    "%s: repeated posts near 2^53 get distinct numbers that readers deliver",
    async (ch) => {
      const posts: Outcome[] = [];
      for (let i = 0; i < 3; i++) {
        posts.push(
          await h.cli([
            "--json",
            "post",
            ch,
            "--from",
            "eve",
            "--title",
            "same",
            "--body",
            `p${i}`,
          ]),
        );
      }
      expect(posts.flatMap((r) => problems(r, [0]))).toEqual([]);
      const seqs = posts.map((r) => json<{ seq: number }>(r).seq);
      expect(seqs.filter((s) => !Number.isSafeInteger(s))).toEqual([]);
      expect(new Set(seqs).size).toBe(3);
      const read = await h.cli(["--json", "read", ch, "--as", "zed", "--all"]);
      expect(problems(read, [0])).toEqual([]);
      const got = json<ReadJson>(read).messages.map((m) => [m.seq, m.body]);
      expect(got).toEqual(expect.arrayContaining(seqs.map((s, i) => [s, `p${i}`])));
    },
  );

  it("malformed: the next post never reuses the number of a file that does not parse, and reads never repeat", async () => {
    const notes = join(h.world.root, "malformed", "0002-notes.md");
    const before = readFileSync(notes, "utf8");
    const first = await h.cli(["--json", "read", "malformed", "--as", "bob"]);
    const post = await h.cli(["--json", "post", "malformed", "--from", "eve", "--body", "next"]);
    const second = await h.cli(["--json", "read", "malformed", "--as", "bob"]);
    const third = await h.cli(["--json", "read", "malformed", "--as", "bob"]);
    expect([first, post, second, third].flatMap((r) => problems(r, [0]))).toEqual([]);
    expect(json<{ seq: number }>(post).seq).not.toBe(2);
    expect(readFileSync(notes, "utf8")).toBe(before);
    const delivered = [first, second, third].flatMap((r) =>
      json<ReadJson>(r).messages.map((m) => m.seq),
    );
    expect(delivered).toEqual([1, json<{ seq: number }>(post).seq]);
  });

  it("huge: read and peek never load a 64 MB message file (max RSS against `read ok`)", async () => {
    const base = await cliRss(h, ["read", "ok", "--as", "zed", "--all", "--peek"]);
    const read = await cliRss(h, ["read", "huge", "--as", "zed", "--all", "--peek"]);
    const peek = await cliRss(h, ["peek", "huge", "-n", "5"]);
    expect([base, read, peek].flatMap(({ r }) => problems(r))).toEqual([]);
    console.log(
      `hostile root: max RSS read ok ${base.kb} KB, read huge ${read.kb} KB, peek huge ${peek.kb} KB`,
    );
    expect(read.kb - base.kb).toBeLessThan(RSS_MARGIN_KB);
    expect(peek.kb - base.kb).toBeLessThan(RSS_MARGIN_KB);
  });

  it.each([
    ["seq-link", "sentinel/seq-link-target.txt"],
    ["seq-hard", "sentinel/seq-hard-target.txt"],
  ])(
    "%s: a post numbers from the root alone and never writes through `.seq`",
    async (ch, target) => {
      const post = await h.cli(["--json", "post", ch, "--from", "eve", "--body", "b"]);
      expect(problems(post)).toEqual([]);
      if (post.code === 0) expect(json<{ seq: number }>(post).seq).toBe(2);
      expect(h.changedOutside().filter((p) => p === target)).toEqual([]);
    },
  );

  it("cursor-link: a cursor that is a link is never read or written through", async () => {
    const read = await h.cli(["--json", "read", "cursor-link", "--as", "bob"]);
    expect(problems(read)).toEqual([]);
    if (read.code === 0) expect(json<ReadJson>(read).messages.map((m) => m.seq)).toEqual([1, 2]);
    expect(h.changedOutside().filter((p) => p.startsWith("sentinel/cursor"))).toEqual([]);
  });

  it("ws-link: the workspace of a channel whose `_workspace` is a link shows and writes nothing outside", async () => {
    const runs = await Promise.all([
      h.cli(["ws", "tree", "--channel", "ws-link", "--files"]),
      h.cli(["ws", "show", "secret.md", "--channel", "ws-link"]),
      h.cli(["ws", "show", "inner/secret.md", "--channel", "ws-link"]),
    ]);
    const turn = await h.cli([
      "ws",
      "turn",
      "--channel",
      "ws-link",
      "--as",
      "bob",
      "create a folder blog for the article",
    ]);
    expect([...runs, turn].flatMap((r) => problems(r))).toEqual([]);
    expect(h.changedOutside().filter((p) => p.startsWith("sentinel/ws"))).toEqual([]);
  });

  /**
   * The commands on every channel: the read-only ones at once, then a post, then the ones that
   * read what it wrote. Claims and the workspace where they can reach outside (each CLI run
   * costs a node start; the full matrix would not fit the time budget). On `ok` all succeed.
   */
  it.each(ALL)(
    "%s: every CLI command answers in time, safely or with a clear error",
    async (ch) => {
      const good = ch === "ok";
      const marker = `ok-cli-${Date.now()}`;
      const found: string[] = [];
      const check = (r: Outcome, allowed: number[], mustSucceed = good) =>
        found.push(...problems(r, mustSucceed ? [0] : allowed));
      const first: Array<[string[], number[], boolean?]> = [
        [
          ["roster", ch],
          [0, 1],
        ],
        [
          ["--json", "peek", ch, "-n", "5"],
          [0, 1],
        ],
        [
          ["tasks", ch],
          [0, 1],
        ],
        [
          ["read", ch, "--as", "carol", "--all", "--peek"],
          [0, 1],
        ],
        [
          ["wait", ch, "--as", "bob", "--timeout", "1"],
          [0, 1, 2],
        ],
        // Search, threads and retention (docs/search.md) read every file of the channel.
        [
          ["search", "secret", "--channel", ch, "--archived"],
          [0, 1],
        ],
        [
          ["thread", ch, "1", "--archived"],
          [0, 1],
        ],
        [
          ["archive", ch, "--before", "1000", "--dry-run"],
          [0, 1],
        ],
      ];
      if (good) first.push([["peek", ch], [0]], [["--json", "roster", ch], [0]]);
      if (WS_CHANNELS.includes(ch)) {
        first.push(
          [
            ["ws", "tree", "--channel", ch, "--files"],
            [0, 1],
          ],
          [
            ["--json", "ws", "tree", "--channel", ch],
            [0, 1],
          ],
          [["ws", "show", "secret.md", "--channel", ch], [1], false],
        );
      }
      const outcomes = await Promise.all(first.map(([args]) => h.cli(args)));
      for (const [i, r] of outcomes.entries()) check(r, first[i]![1], first[i]![2]);

      const body = good ? marker : "probe";
      const post = await h.cli([
        "--json",
        "post",
        ch,
        "--from",
        "eve",
        "--title",
        "probe",
        "--body",
        body,
      ]);
      check(post, [0, 1]);
      if (good && post.code === 0) h.okPosted.push(marker);

      const then: Array<Promise<Outcome[]>> = [
        h.cli(["read", ch, "--as", "bob"]).then((r) => [r]),
        h.cli(["--json", "read", ch, "--as", "dave", "--all"]).then((r) => [r]),
      ];
      if (TASK_CHANNELS.includes(ch)) {
        const task = good ? "1" : "7";
        const claim = async () => {
          const c = await h.cli(["claim", ch, task, "--as", "bob"]);
          return [
            c,
            await h.cli(["release", ch, task, "--as", "bob"]),
            await h.cli(["--json", "tasks", ch]),
          ];
        };
        then.push(claim());
      }
      if (WS_CHANNELS.includes(ch)) {
        const turn = [
          "ws",
          "turn",
          "--channel",
          ch,
          "--as",
          "bob",
          "create a folder drafts for notes",
        ];
        then.push(h.cli(turn).then((r) => [r]));
      }
      for (const r of (await Promise.all(then)).flat()) check(r, [0, 1, 3]);
      expect(found).toEqual([]);
    },
  );

  describe("the daemon", () => {
    let daemon: Daemon | undefined;
    let sub: RawClient | undefined;
    const fresh = async (): Promise<Daemon> => {
      if (daemon) return daemon;
      daemon = await startDaemon(h.world);
      sub = await RawClient.connect(daemon.socket);
      sub.send({ id: "sub", op: "subscribe", channels: ["ok"] });
      return daemon;
    };
    /** A daemon that stopped answering would fail every channel after it: start a new one. */
    const discard = async () => {
      sub?.close();
      daemon?.child.kill("SIGKILL");
      await daemon?.exited;
      daemon = undefined;
    };
    afterAll(discard);

    it("lists the channels despite the broken ones", async () => {
      const client = await RawClient.connect((await fresh()).socket);
      const list = await client.request({ id: "list", op: "channels" });
      client.close();
      expect(list.error).toBeUndefined();
      expect((list.result as Array<{ name: string }>).map((c) => c.name)).toEqual(GOOD);
    });

    it.each(ALL)("%s: answers every request, and another client meanwhile", async (ch) => {
      const d = await fresh();
      const hostile = await RawClient.connect(d.socket);
      const other = await RawClient.connect(d.socket);
      const marker = `ok-daemon-${ch}`;
      const requests = [
        { op: "read", channel: ch, as: "bob", all: true, peek: true },
        { op: "peek", channel: ch, count: 5 },
        { op: "post", channel: ch, from: "eve", body: ch === "ok" ? marker : "probe" },
        { op: "wait", channels: [ch], as: "carol", timeoutMs: 500 },
        { op: "read", channel: ch, as: "bob" },
        { op: "tasks", channel: ch },
        { op: "roster", channel: ch },
      ];
      const found: string[] = [];
      try {
        for (const [id, r] of requests.entries()) hostile.send({ id, ...r });
        // While those are in hand, a client of the good channel is still served.
        const ping = await other.request({ id: "ping", op: "peek", channel: "ok", count: 1 });
        if (ping.ok !== true) found.push(`peek ok meanwhile: ${JSON.stringify(ping)}`);
        const answers = new Map<unknown, Record<string, unknown>>();
        const deadline = Date.now() + BUDGET_MS;
        while (answers.size < requests.length) {
          const line = await hostile.next(Math.max(1, deadline - Date.now()));
          if (!("event" in line)) answers.set(line.id, line);
        }
        for (const [id, a] of answers) {
          const op = requests[id as number]?.op;
          if (JSON.stringify(a).includes(SECRET)) found.push(`${op}: shows the secret`);
          if (ch === "ok" && a.ok !== true) found.push(`${op}: ${JSON.stringify(a.error)}`);
          if (a.ok !== true && typeof (a.error as { message?: unknown })?.message !== "string") {
            found.push(`${op}: no error message: ${JSON.stringify(a)}`);
          }
        }
        if (ch === "ok") {
          h.okPosted.push(marker);
          let got = "";
          while (!got.includes(marker)) got += JSON.stringify(await sub!.next(BUDGET_MS));
        }
      } catch (err) {
        await discard();
        found.push(`stopped answering: ${(err as Error).message}`);
      } finally {
        hostile.close();
        other.close();
      }
      if (found.some((f) => f.includes("secret"))) h.leaks.push(`daemon ${ch}`);
      expect(found).toEqual([]);
    });
  });

  describe("the MCP server", () => {
    let agent: Agent | undefined;
    afterAll(async () => {
      await agent?.close().catch(() => {});
    });

    it.each(ALL)("%s: every tool result comes back with the unread footer", async (ch) => {
      agent ??= await connectAgent(h.world.root, "bob");
      const a = agent;
      const marker = `ok-mcp-${Date.now()}`;
      const calls: Array<[string, Record<string, unknown>]> = [
        ["chat_read", { channel: ch, all: true, peek: true }],
        ["chat_post", { channel: ch, body: ch === "ok" ? marker : "probe" }],
        ["chat_wait", { channels: [ch], timeout_seconds: 1 }],
        ["chat_channels", {}],
        ["chat_read", { channel: "ok", peek: true }],
      ];
      const found: string[] = [];
      for (const [tool, args] of calls) {
        const what = `${tool} ${JSON.stringify(args)}`;
        try {
          const reply = await a.call(tool, args, AbortSignal.timeout(BUDGET_MS));
          if (`${reply.text}${reply.footer}`.includes(SECRET))
            found.push(`${what}: shows the secret`);
          if (!/^<agent-chat>.*<\/agent-chat>$/.test(reply.footer)) {
            found.push(`${what}: no unread footer: ${reply.footer.slice(0, 200)}`);
          }
          const mustWork = ch === "ok" || args.channel === "ok" || tool === "chat_channels";
          if (mustWork && reply.isError) found.push(`${what}: ${reply.text.slice(0, 200)}`);
          if (tool === "chat_post" && ch === "ok" && !reply.isError) h.okPosted.push(marker);
        } catch (err) {
          found.push(`${what}: no answer: ${(err as Error).message}`);
          // A server stuck on this channel would fail every later one: the next starts anew.
          agent = undefined;
          await a.close().catch(() => {});
          break;
        }
      }
      if (found.some((f) => f.includes("secret"))) h.leaks.push(`mcp ${ch}`);
      expect(found).toEqual([]);
    });
  });

  it("the viewer answers the channel list and every channel's messages, never 500 for `ok`", async () => {
    // Started by hand rather than with startView, so that a viewer stuck at start is ours to kill.
    const viewer = startCli(["--json", "view", "--http", "127.0.0.1:0"], {
      env: h.world.env,
      timeoutMs: 10 * BUDGET_MS,
    });
    try {
      const first = await untilStdout(viewer, (out) => out.includes("\n"), 3 * BUDGET_MS);
      const info = JSON.parse(first.split("\n")[0]!) as { url?: string; token?: string };
      if (!info.url) throw new Error(`the viewer did not start: ${first}`);
      const port = Number(new URL(info.url).port);
      const get = (path: string) =>
        Promise.race([
          rawRequest(port, path, { headers: { Authorization: `Bearer ${info.token}` } }),
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error(`viewer: GET ${path} hung`)), BUDGET_MS),
          ),
        ]);
      const state = await get("/api/state");
      expect(state.status).toBe(200);
      const names = (JSON.parse(state.body) as { channels: Array<{ name: string }> }).channels.map(
        (c) => c.name,
      );
      expect(names).toEqual(expect.arrayContaining(["ok"]));
      const pages = await Promise.all(ALL.map((ch) => get(`/api/channels/${ch}/messages`)));
      const text = [state, ...pages].map((r) => r.body).join("\n");
      if (text.includes(SECRET)) h.leaks.push("viewer");
      expect(text).not.toContain(SECRET);
      expect(pages[ALL.indexOf("ok")]?.status).toBe(200);
      const failed = pages.flatMap((p, i) => (p.status >= 500 ? [`${ALL[i]}: ${p.status}`] : []));
      expect(failed).toEqual([]);
    } finally {
      viewer.kill("SIGKILL");
    }
  });

  it("nothing outside the root changed", () => {
    expect(h.changedOutside()).toEqual([]);
  });

  it("no output ever showed a file outside the root", () => {
    expect(h.leaks).toEqual([]);
  });

  it("`ok` holds all its messages, numbered 1..N without gaps or duplicates", async () => {
    const files = readdirSync(join(h.world.root, "ok")).filter((f) => /^\d+-.*\.md$/.test(f));
    const seqs = files.map((f) => Number.parseInt(f, 10)).sort((a, b) => a - b);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const read = await h.cli(["--json", "read", "ok", "--as", "zed", "--all"]);
    expect(problems(read, [0])).toEqual([]);
    const messages = json<ReadJson>(read).messages;
    expect(messages.map((m) => m.seq)).toEqual(seqs);
    for (const marker of h.okPosted) {
      expect(messages.filter((m) => m.body === marker).length, marker).toBe(1);
    }
    expect(h.okPosted.length).toBeGreaterThan(0);
  });
});
