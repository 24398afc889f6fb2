import { spawnSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import Module from "node:module";
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
 * through Module._load, the lean files compiled with V8's code cache through vm.Script (each
 * also as `vm <file> <how>`: "cached" when V8 took the cache given, "compiled" otherwise), ES
 * modules through a resolve hook.
 */
const RECORDER = `
const Module = require("node:module");
const vm = require("node:vm");
const { appendFileSync } = require("node:fs");
const log = process.env.LOAD_LOG;
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    const how = options.cachedData && !this.cachedDataRejected ? "cached" : "compiled";
    appendFileSync(log, options.filename + "\\n" + "vm " + options.filename + " " + how + "\\n");
  }
};
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
  const r = spawnSync(process.execPath, ["--require", recorder, cli, ...args], {
    env,
    input,
    encoding: "utf8",
  });
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
  // Node's ES-module loader comes with it; only Node's own compile cache (22.1+) needs it.
  ...(Number(process.versions.node.split(".")[0]) < 22 ? [/^node:module$/] : []),
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
    "%s loads neither the MCP SDK, NATS, zod, playwright, commander, node:net, node:crypto nor (before Node 22) node:module",
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
    });
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
];

function declares(text: string, declaration: string): boolean {
  const [kind, name] = declaration.split(" ");
  const minified = kind === "class" ? `|\\b${name}=class\\b` : "";
  return new RegExp(`\\b${kind} ${name}\\b${minified}`).test(text);
}

/** How each lean file was compiled in that run: "cached", "compiled", or absent (a plain require). */
function compiledBy(loaded: string[], dist = DIST): Record<string, string> {
  const lines = loaded.filter((m) => m.startsWith("vm ")).map((m) => m.split(" "));
  return Object.fromEntries(lines.map(([, file, how]) => [file!.slice(dist.length + 1), how!]));
}

const nodeCompileCache = "enableCompileCache" in Module;

describe.skipIf(nodeCompileCache)(
  `start-up: V8's code cache where Node has no compile cache${nodeCompileCache ? " (skipped: this Node has module.enableCompileCache)" : ""}`,
  () => {
    const peek = ["peek", "review", "-n", "1"];
    const hook = JSON.stringify({ hook_event_name: "UserPromptSubmit" });
    const cacheOf = (base: string) => join(base, "agent-chat", "v8");

    it("compiles a lean file once, then from the cache in the user's cache folder", () => {
      const base = join(tmp.dir, "cache-once");
      const install = readdirSync(DIST, { recursive: true }).sort();
      // The lean files alone: an unread signed message has the hook load the signing code too.
      const lean = (loaded: string[]) =>
        Object.fromEntries(
          Object.entries(compiledBy(loaded)).filter(([file]) => !file.startsWith("lazy/")),
        );
      expect(lean(loadedBy(peek, "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "compiled",
      });
      expect(lean(loadedBy(peek, "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "cached",
      });
      expect(lean(loadedBy(["hook", "prompt"], hook, { XDG_CACHE_HOME: base }))).toEqual({
        "hook.cjs": "compiled",
      });
      expect(lean(loadedBy(["hook", "prompt"], hook, { XDG_CACHE_HOME: base }))).toEqual({
        "hook.cjs": "cached",
      });
      // Only the user may read or replace it; nothing is written beside the install.
      expect(statSync(cacheOf(base)).mode & 0o777).toBe(0o700);
      const files = readdirSync(cacheOf(base));
      const cached = files.map((f) => f.replace(/(-[0-9a-f]{16}){2}\.v8$/, ""));
      expect(cached.filter((f) => !existsSync(join(DIST, "lazy", f))).sort()).toEqual([
        "hook.cjs",
        "hot.cjs",
      ]);
      for (const f of files) expect(statSync(join(cacheOf(base), f)).mode & 0o777).toBe(0o600);
      expect(readdirSync(DIST, { recursive: true }).sort()).toEqual(install);
    });

    it("a lazy file a lean file loads (the signing code of a signed post) is cached too", () => {
      const base = join(tmp.dir, "cache-lazy");
      const post = (body: string) => [...["post", "signed", "--from", "carol"], "--body", body];
      expect(compiledBy(loadedBy(post("one"), "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "compiled",
        "lazy/features-trust-ed25519.cjs": "compiled",
      });
      expect(compiledBy(loadedBy(post("two"), "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "cached",
        "lazy/features-trust-ed25519.cjs": "cached",
      });
    });

    it("two installs side by side each keep their cache (neither removes the other's)", () => {
      const base = join(tmp.dir, "cache-two");
      const other = join(tmp.dir, "other-install");
      cpSync(DIST, join(other, "dist"), { recursive: true });
      const otherCli = join(other, "dist", "cli.cjs");
      const how = (cli: string) =>
        compiledBy(loadedBy(peek, "", { XDG_CACHE_HOME: base }, cli), dirname(cli));
      expect(how(CLI)).toEqual({ "hot.cjs": "compiled" });
      expect(how(otherCli)).toEqual({ "hot.cjs": "compiled" });
      for (let turn = 0; turn < 2; turn++) {
        expect(how(CLI)).toEqual({ "hot.cjs": "cached" });
        expect(how(otherCli)).toEqual({ "hot.cjs": "cached" });
      }
    });

    it("ignores a cache it cannot trust and runs as without one", () => {
      const base = join(tmp.dir, "cache-bad");
      const plain = runWith(peek, { AGENT_CHAT_CODE_CACHE: "off" });
      expect(plain.status).toBe(0);
      loadedBy(peek, "", { XDG_CACHE_HOME: base });
      const [file] = readdirSync(cacheOf(base));
      const cache = join(cacheOf(base), file!);
      // Corrupt: V8 rejects it, and it is written anew.
      writeFileSync(cache, Buffer.alloc(4096, 7));
      expect(compiledBy(loadedBy(peek, "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "compiled",
      });
      expect(compiledBy(loadedBy(peek, "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "cached",
      });
      // Writable by others: someone else may have put code there; not read.
      chmodSync(cache, 0o666);
      expect(compiledBy(loadedBy(peek, "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "compiled",
      });
      // A link planted in its place is not followed.
      const planted = join(tmp.dir, "planted.v8");
      renameSync(cache, planted);
      chmodSync(planted, 0o600);
      symlinkSync(planted, cache);
      expect(compiledBy(loadedBy(peek, "", { XDG_CACHE_HOME: base }))).toEqual({
        "hot.cjs": "compiled",
      });
      expect(runWith(peek, { XDG_CACHE_HOME: base })).toEqual(plain);
    });

    it("runs as without a cache when its folder cannot be made, or when turned off", () => {
      const notDir = join(tmp.dir, "cache-is-a-file");
      writeFileSync(notDir, "");
      const plain = runWith(peek, { AGENT_CHAT_CODE_CACHE: "off" });
      expect(runWith(peek, { XDG_CACHE_HOME: notDir })).toEqual(plain);
      expect(compiledBy(loadedBy(peek, "", { XDG_CACHE_HOME: notDir }))).toEqual({
        "hot.cjs": "compiled",
      });
      const off = join(tmp.dir, "cache-off");
      const loaded = loadedBy(peek, "", { XDG_CACHE_HOME: off, AGENT_CHAT_CODE_CACHE: "off" });
      expect(compiledBy(loaded)).toEqual({});
      expect(loaded.some((m) => m === join(DIST, "hot.cjs"))).toBe(true);
      expect(existsSync(off)).toBe(false);
    });
  },
);

/** The CLI's status and output for a line, in the root of these tests. */
function runWith(args: string[], more: NodeJS.ProcessEnv) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENT_CHAT_ROOT: join(tmp.dir, "root"),
    AGENT_CHAT_SOCKET: join(tmp.dir, "no-daemon.sock"),
    XDG_CACHE_HOME: join(tmp.dir, "cache"),
    ...more,
  };
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: "utf8" });
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
