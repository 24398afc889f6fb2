import { spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { Command, type Option } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerCoreCommands } from "../../src/cli/commands/core.js";
import { CliContext } from "../../src/cli/context.js";
import { exitCodeFor } from "../../src/cli/exit-codes.js";
import { HOT_COMMANDS, parseHotLine } from "../../src/cli/hot-line.js";
import { openStore } from "../../src/client/open.js";
import { DaemonServer } from "../../src/daemon/server.js";
import type { Store } from "../../src/store/types.js";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

const DIST = dirname(CLI);

/**
 * A preload that logs every module the process loads: CommonJS `require`s (built-ins included)
 * through Module._load, ES modules through a resolve hook.
 */
const RECORDER = `
const Module = require("node:module");
const { appendFileSync } = require("node:fs");
const log = process.env.LOAD_LOG;
const load = Module._load;
Module._load = function (request, parent, isMain) {
  const loaded = load.apply(this, arguments);
  let at = request;
  try { at = Module._resolveFilename(request, parent, isMain); } catch {}
  appendFileSync(log, at + "\\n");
  return loaded;
};
Module.register("data:text/javascript," + encodeURIComponent(
  'import { appendFileSync } from "node:fs";' +
  'export async function resolve(s, c, next) { const r = await next(s, c);' +
  ' appendFileSync(' + JSON.stringify(log) + ', r.url + "\\\\n"); return r; }'));
`;

let tmp: ReturnType<typeof tempDir>;
let recorder: string;

beforeAll(async () => {
  tmp = tempDir();
  recorder = join(tmp.dir, "recorder.cjs");
  writeFileSync(recorder, RECORDER);
  const root = join(tmp.dir, "root");
  expect((await runCli(["init", "review"], { root })).code).toBe(0);
  const post = ["post", "review", "--from", "alice", "--to", "bob", "--body", "hi"];
  expect((await runCli(post, { root })).code).toBe(0);
  expect(
    (await runCli(["post", "review", "--from", "alice", "--body", "all"], { root })).code,
  ).toBe(0);
  expect(
    (await runCli(["task", "add", "review", "--title", "t", "--as", "alice"], { root })).code,
  ).toBe(0);
  // The user holds a key (carol's): commands that neither sign nor verify must not pay for it.
  const config = { XDG_CONFIG_HOME: join(tmp.dir, "config") };
  expect((await runCli(["id", "new", "--as", "carol"], { root, env: config })).code).toBe(0);
  expect((await runCli(["init", "signed"], { root })).code).toBe(0);
});

afterAll(() => tmp.cleanup());

/** Runs the built CLI and returns what it loaded, one module per line. */
function loadedBy(args: string[], input = "", more: NodeJS.ProcessEnv = {}, cli = CLI): string[] {
  const log = join(tmp.dir, `load-${Math.random().toString(36).slice(2)}.log`);
  writeFileSync(log, "");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENT_CHAT_ROOT: join(tmp.dir, "root"),
    AGENT_CHAT_NAME: "bob",
    // A socket that does not exist: the command looks for a daemon and finds none.
    AGENT_CHAT_SOCKET: join(tmp.dir, "no-daemon.sock"),
    XDG_CONFIG_HOME: join(tmp.dir, "config"),
    XDG_CACHE_HOME: join(tmp.dir, "cache"),
    LOAD_LOG: log,
    ...more,
  };
  delete env.NODE_OPTIONS;
  // The input as a file, as a pipe its writer closed is read: at once, without Node's streams
  // (a socket, which spawn would give, is read through process.stdin: test/cli/stdin.test.ts).
  const inputFile = `${log}.in`;
  writeFileSync(inputFile, input);
  const stdin = openSync(inputFile, "r");
  const r = spawnSync(process.execPath, ["--require", recorder, cli, ...args], {
    env,
    stdio: [stdin, "pipe", "pipe"],
    encoding: "utf8",
  });
  closeSync(stdin);
  expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return readFileSync(log, "utf8").split("\n").filter(Boolean);
}

/** What a hot command must never load: the heavy dependencies and the full CLI. */
const HEAVY = [
  /@modelcontextprotocol/,
  /@nats-io/,
  /[\\/]zod[\\/]/,
  /playwright/,
  /node-pty/,
  /[\\/]commander[\\/]/,
  // The full CLI: its entry and its chunks bundle commander and zod.
  /dist[\\/]main\.js$/,
  /dist[\\/]chunks[\\/]/,
  // Built-ins a folder command does not need without a daemon; node:crypto alone costs several
  // ms of each start (temporary names and socket names are made without it).
  /^node:(net|child_process|http|https|worker_threads|crypto)$/,
];

describe("start-up: what the commands agents run all the time load", () => {
  const lines: Array<[string, string[], string?]> = [
    ["post", ["post", "review", "--from", "alice", "--to", "bob", "--body", "again"]],
    ["read", ["read", "review", "--as", "bob", "--peek"]],
    ["read --json", ["--json", "read", "review"]],
    ["peek", ["peek", "review", "-n", "1"]],
    ["channels", ["channels"]],
    ["tasks", ["tasks", "review"]],
    ["wait (a message is there)", ["wait", "review", "--as", "dave", "--timeout", "5"]],
    ["hook prompt", ["hook", "prompt"], JSON.stringify({ hook_event_name: "UserPromptSubmit" })],
    ["--version", ["--version"]],
    ["--help", ["--help"]],
  ];
  it.each(lines)(
    "%s loads neither the MCP SDK, NATS, zod, playwright, commander, node:net nor node:crypto",
    (_, args, input) => {
      const loaded = loadedBy(args, input);
      expect(loaded.length).toBeGreaterThan(0);
      const heavy = loaded.filter((m) => HEAVY.some((h) => h.test(m)));
      expect(heavy).toEqual([]);
      // One file of ours besides the executable, at most.
      const ours = new Set(loaded.filter((m) => m.startsWith(DIST) && m !== CLI));
      expect(ours.size, [...ours].join(", ")).toBeLessThanOrEqual(1);
    },
  );

  it("a post by the key's holder loads node:crypto, lazily, and the signing file besides", () => {
    const loaded = loadedBy(["post", "signed", "--from", "carol", "--body", "signed"]);
    expect(loaded).toContain("node:crypto");
    const ours = new Set(loaded.filter((m) => m.startsWith(DIST) && m !== CLI));
    expect([...ours].map((m) => m.slice(DIST.length + 1)).sort()).toEqual([
      "hot.cjs",
      "lazy/features-trust-ed25519.cjs",
    ]);
  });

  it("the full CLI's lines still load it (the recorder sees what it must)", () => {
    const loaded = loadedBy(["roster", "review"]);
    expect(loaded.some((m) => /dist[\\/]main\.js$/.test(m))).toBe(true);
  });

  it("a full-CLI command leaves the pseudo-terminal module to `run`", () => {
    const pty = (loaded: string[]) => loaded.filter((m) => /node-pty/.test(m));
    expect(pty(loadedBy(["run", "--as", "bob", "--", "true"])).length).toBeGreaterThan(0);
    for (const args of [
      ["roster", "review"],
      ["who", "review"],
      ["setup", "codex", "--as", "bob"],
    ]) {
      const loaded = loadedBy(args);
      expect(
        loaded.some((m) => /dist[\\/]main\.js$/.test(m)),
        args.join(" "),
      ).toBe(true);
      expect(pty(loaded), args.join(" ")).toEqual([]);
    }
  });
});

/** A command's options as commander declares them, in the lean parser's terms. */
function declaredOptions(options: Option[]) {
  const values: Record<string, string> = {};
  const flags: Record<string, string> = {};
  const defaults: Record<string, string> = {};
  for (const opt of options) {
    const into = opt.required ? values : flags;
    for (const f of [opt.long, opt.short]) if (f) into[f] = opt.attributeName();
    if (opt.defaultValue !== undefined) defaults[opt.attributeName()] = opt.defaultValue;
  }
  return { values, flags, defaults };
}

describe("the lean entry's command lines", () => {
  it("declares each hot command's arguments, options and defaults as commander does", () => {
    const program = new Command();
    registerCoreCommands(program, new CliContext(() => ({})));
    for (const [name, spec] of Object.entries(HOT_COMMANDS)) {
      const cmd = program.commands.find((c) => c.name() === name)!;
      expect(cmd.registeredArguments.map((a) => a.required)).toEqual(
        Array(spec.operands).fill(true),
      );
      expect(declaredOptions(cmd.options as Option[]), name).toEqual({
        values: spec.values,
        flags: spec.flags,
        defaults: spec.defaults,
      });
    }
  });

  it("leaves to the full CLI every line it does not fully understand", () => {
    const not = [
      ["post", "review", "--body", "--json"],
      ["post", "review", "--bogus"],
      ["read"],
      ["read", "a", "b"],
      ["read", "review", "--all=yes"],
      ["read", "review", "--as", "a", "--as", "b"],
      ["read", "review", "--help"],
      ["--as", "bob", "read", "review"],
      ["read", "review", "--", "x"],
      ["peek", "review", "-n5"],
      ["help", "read"],
      ["roster", "review"],
    ];
    for (const argv of not) expect(parseHotLine(argv), argv.join(" ")).toBeUndefined();
    expect(parseHotLine(["read", "review"], "nats://localhost:4222/x")).toBeUndefined();
    expect(parseHotLine(["read", "review", "--root=tls://h/x"])).toBeUndefined();
    expect(parseHotLine(["read", "review", "--root", "/r", "--json", "--peek"])).toEqual({
      command: "read",
      operands: ["review"],
      options: { peek: true },
      globals: { root: "/r", json: true },
      oneOff: true,
    });
    expect(parseHotLine(["wait", "review", "--as", "bob"])?.oneOff).toBe(false);
  });

  it("prints, exits and reports errors exactly as the full CLI does", async () => {
    const root = join(tmp.dir, "root");
    const full = join(DIST, "main.js");
    const lines = [
      ["read", "review", "--as", "bob", "--peek"],
      ["--json", "read", "review", "--as", "bob", "--peek"],
      ["peek", "review", "--count=1"],
      ["--json", "channels"],
      ["tasks", "review"],
      ["--json", "claim", "review", "99", "--as", "bob"],
      ["read", "nowhere", "--as", "bob"],
      ["--json", "peek", "review", "-n", "0"],
      ["post", "review", "--body", "x"],
      ["--json", "wait", "review", "--as", "bob", "--timeout", "soon"],
      ["--max-body", "1", "post", "review", "--from", "a", "--body", "too long"],
      ["--version"],
      ["-V"],
      ["--help"],
      ["-h"],
    ];
    for (const line of lines) {
      const env = { AGENT_CHAT_SOCKET: join(tmp.dir, "no-daemon.sock") };
      const lean = await runCli(line, { root, env });
      const wholeEnv: NodeJS.ProcessEnv = { ...process.env, AGENT_CHAT_ROOT: root, ...env };
      delete wholeEnv.AGENT_CHAT_NAME;
      const whole = spawnSync(process.execPath, [full, ...line], {
        env: wholeEnv,
        encoding: "utf8",
      });
      expect(lean, line.join(" ")).toEqual({
        code: whole.status,
        signal: null,
        stdout: whole.stdout,
        stderr: whole.stderr,
      });
    }
  });
});

/**
 * Code that no hot command runs, each part by a name it declares. esbuild keeps names in the
 * lean files (only whitespace and syntax are minified: `class A {` may become `A=class{`), so
 * a declaration found in a file is that code bundled into it.
 */
const COLD: Array<[string, string, string]> = [
  ["search", "class Searcher", "features-search-search.cjs"],
  ["search's query parser", "function parseQuery", "features-search-search.cjs"],
  ["threads", "function findThread", "store-shared-thread.cjs"],
  ["archive and prune", "function archiveChannel", "store-fs-archive.cjs"],
  ["receipts, explain, who", "class DeliveryQueries", "features-delivery-delivery-queries.cjs"],
  ["receipt states", "function receiptFor", "features-delivery-delivery-queries.cjs"],
  ["the daemon's socket client", "class DaemonClient", "daemon-client.cjs"],
  ["the slash parser (a --json body starting with /)", "function slashOfBody", "core-slash.cjs"],
  ["hook wait", "function runHookWait", "cli-hook-wait.cjs"],
  ["chat.py 0.7's task board", "class Board", "store-fs-reference07-index.cjs"],
  ["path lease globs", "function compileGlob", "store-records-glob.cjs"],
];

function declares(text: string, declaration: string): boolean {
  const [kind, name] = declaration.split(" ");
  const minified = kind === "class" ? `|\\b${name}=class\\b` : "";
  return new RegExp(`\\b${kind} ${name}\\b${minified}`).test(text);
}

/**
 * Which of our files Node compiled from its compile cache in one run of a line, and what the run
 * printed: Node says so itself under `NODE_DEBUG_NATIVE=COMPILE_CACHE` (on stderr, after ours).
 */
function cacheUse(args: string[], more: NodeJS.ProcessEnv, input = "") {
  const r = runWith(args, { NODE_DEBUG_NATIVE: "COMPILE_CACHE", ...more }, input);
  const accepted = [...r.stderr.matchAll(/cache for (?:CommonJS |ESM )?(\S+) was accepted/g)];
  const ours = accepted.map((m) => m[1]!).filter((f) => f.startsWith(DIST));
  return { cached: ours.map((f) => f.slice(DIST.length + 1)).sort(), stdout: r.stdout };
}

describe("start-up: Node's compile cache, in the user's own cache folder", () => {
  const peek = ["peek", "review", "-n", "1"];
  const hook = JSON.stringify({ hook_event_name: "UserPromptSubmit" });
  const cacheOf = (base: string) => join(base, "agent-chat", "node");

  it("compiles a lean file once, then from the cache, kept where only the user may write", () => {
    const base = join(tmp.dir, "cache-once");
    const install = readdirSync(DIST, { recursive: true }).sort();
    const first = cacheUse(peek, { XDG_CACHE_HOME: base });
    expect(first.cached).toEqual([]);
    expect(cacheUse(peek, { XDG_CACHE_HOME: base })).toEqual({
      cached: ["hot.cjs"],
      stdout: first.stdout,
    });
    expect(cacheUse(["hook", "prompt"], { XDG_CACHE_HOME: base }, hook).cached).toEqual([]);
    expect(cacheUse(["hook", "prompt"], { XDG_CACHE_HOME: base }, hook).cached).toEqual([
      "hook.cjs",
    ]);
    expect(statSync(cacheOf(base)).mode & 0o777).toBe(0o700);
    expect(readdirSync(DIST, { recursive: true }).sort()).toEqual(install);
  });

  it("a lazy file a lean file loads (the signing code of a signed post) is cached too", () => {
    const base = join(tmp.dir, "cache-lazy");
    const post = (body: string) => [...["post", "signed", "--from", "carol"], "--body", body];
    expect(cacheUse(post("one"), { XDG_CACHE_HOME: base }).cached).toEqual([]);
    expect(cacheUse(post("two"), { XDG_CACHE_HOME: base }).cached).toEqual([
      "hot.cjs",
      "lazy/features-trust-ed25519.cjs",
    ]);
  });

  it("never uses a folder others may write, nor a link, and prints the same without one", () => {
    const plain = runWith(peek, { NODE_DISABLE_COMPILE_CACHE: "1" });
    expect(plain.status).toBe(0);
    const shared = join(tmp.dir, "cache-shared");
    mkdirSync(cacheOf(shared), { recursive: true });
    chmodSync(cacheOf(shared), 0o777);
    const linked = join(tmp.dir, "cache-linked");
    mkdirSync(join(linked, "agent-chat"), { recursive: true });
    symlinkSync(cacheOf(shared), cacheOf(linked));
    for (const base of [shared, linked]) {
      for (let run = 0; run < 2; run++) {
        expect(cacheUse(peek, { XDG_CACHE_HOME: base })).toEqual({
          cached: [],
          stdout: plain.stdout,
        });
      }
    }
    // Someone else's code could have been put there: nothing of ours was read or written in it.
    expect(readdirSync(cacheOf(shared))).toEqual([]);
  });

  it("runs as without a cache when its folder cannot be made, or when Node's is turned off", () => {
    const plain = runWith(peek, { NODE_DISABLE_COMPILE_CACHE: "1" });
    const notDir = join(tmp.dir, "cache-is-a-file");
    writeFileSync(notDir, "");
    expect(runWith(peek, { XDG_CACHE_HOME: notDir })).toEqual(plain);
    const off = join(tmp.dir, "cache-off");
    for (let run = 0; run < 2; run++) {
      const use = cacheUse(peek, { XDG_CACHE_HOME: off, NODE_DISABLE_COMPILE_CACHE: "1" });
      expect(use).toEqual({ cached: [], stdout: plain.stdout });
    }
    expect(existsSync(cacheOf(off)) ? readdirSync(cacheOf(off)) : []).toEqual([]);
  });
});

/** The CLI's status and output for a line, in the root of these tests. */
function runWith(args: string[], more: NodeJS.ProcessEnv, input = "") {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENT_CHAT_ROOT: join(tmp.dir, "root"),
    AGENT_CHAT_SOCKET: join(tmp.dir, "no-daemon.sock"),
    XDG_CONFIG_HOME: join(tmp.dir, "config"),
    XDG_CACHE_HOME: join(tmp.dir, "cache"),
    ...more,
  };
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, [CLI, ...args], { env, input, encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("start-up: what stays out of the lean files", () => {
  const lean = ["hot.cjs", "hook.cjs"].map((f) => [f, readFileSync(join(DIST, f), "utf8")]);

  it.each(COLD)("%s is in a file of its own, loaded on first use", (_, declaration, file) => {
    for (const [name, text] of lean) expect(declares(text!, declaration), name).toBe(false);
    expect(declares(readFileSync(join(DIST, "lazy", file), "utf8"), declaration)).toBe(true);
  });

  it.each(["hot.cjs", "hook.cjs", "lazy/daemon-client.cjs"])(
    "%s bundles no zod: the daemon alone builds the operation table's schemas",
    (file) => {
      // zod bundled into a lean file would be read at each start; its module path never loads.
      expect(readFileSync(join(DIST, file), "utf8")).not.toMatch(/\bZodError\b|\$ZodType/);
    },
  );
});

describe("start-up: a hot command served by a daemon", () => {
  let root: string;
  let store: Store;
  let daemon: DaemonServer;
  let socket: string;

  beforeAll(async () => {
    root = join(tmp.dir, "daemon-root");
    store = await openStore(root);
    await store.init("review");
    daemon = new DaemonServer({ store, root: store.location, version: "test" });
    socket = join(tmp.dir, "run", "d.sock");
    await daemon.listen(socket);
  });

  afterAll(async () => {
    await daemon.close();
    await store.close();
  });

  it("posts through the socket client in its own file, whose errors exit as the full CLI's do", async () => {
    const env = { AGENT_CHAT_SOCKET: socket };
    const posted = await runCli(["post", "review", "--from", "alice", "--body", "via"], {
      root,
      env,
    });
    expect(posted.code, posted.stderr).toBe(0);
    expect((await store.peek("review", 1))[0]?.body).toBe("via");
    // CHANNEL_NOT_FOUND, raised by the client's copy of AgentChatError, mapped by hot.cjs's.
    const line = ["read", "nowhere", "--as", "bob"];
    const lean = await runCli(line, { root, env });
    const whole = spawnSync(process.execPath, [join(DIST, "main.js"), ...line], {
      env: { ...process.env, AGENT_CHAT_ROOT: root, AGENT_CHAT_SOCKET: socket },
      encoding: "utf8",
    });
    expect(whole.status).toBe(exitCodeFor("CHANNEL_NOT_FOUND"));
    expect(lean).toEqual({
      code: whole.status,
      signal: null,
      stdout: whole.stdout,
      stderr: whole.stderr,
    });
  });
});
