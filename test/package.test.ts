import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watching } from "./helpers/cli.js";

/**
 * What a user gets from the published package: `npm pack` (of the build `npm test` made; with
 * --ignore-scripts, so packing does not rebuild dist under the other tests), then a global
 * install of the tarball into an empty prefix, as `npm install -g agent-chat` would do. The
 * dependencies come from npm's cache, which `npm ci` filled, else from the registry.
 */
const work = mkdtempSync(join(tmpdir(), "agent-chat-package-"));
const prefix = join(work, "prefix");
const installed = join(prefix, "lib", "node_modules", "agent-chat");
const bin = join(prefix, "bin", "agent-chat");
/** The installed executable's `#!/usr/bin/env node` finds the Node running the tests. */
const PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;
let installStderr = "";

function npm(args: string[], cwd: string): { stdout: string; stderr: string } {
  const r = spawnSync("npm", args, { cwd, encoding: "utf8", env: { ...process.env, PATH } });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`npm ${args.join(" ")} exited ${r.status}:\n${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  const packed = npm(["pack", "--ignore-scripts", "--json", "--pack-destination", work], ".");
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  const quiet = ["--no-audit", "--no-fund", "--prefer-offline"];
  installStderr = npm(
    ["install", "-g", "--prefix", prefix, join(work, filename), ...quiet],
    work,
  ).stderr;
}, 180_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

const root = join(work, "root");
const env = {
  ...process.env,
  PATH,
  AGENT_CHAT_ROOT: root,
  AGENT_CHAT_NAME: undefined,
  XDG_STATE_HOME: join(work, "state"),
};

function start(args: string[], extra: Record<string, string> = {}): ChildProcess {
  return spawn(bin, args, { env: { ...env, ...extra }, stdio: ["ignore", "pipe", "pipe"] });
}

/** Resolves once the child has written `text` to stdout or stderr. */
function said(child: ChildProcess, text: string): Promise<void> {
  let seen = "";
  return new Promise((resolve, reject) => {
    const look = (d: Buffer) => {
      seen += d.toString("utf8");
      if (seen.includes(text)) resolve();
    };
    child.stdout?.on("data", look);
    child.stderr?.on("data", look);
    child.on("close", (code) => reject(new Error(`exited ${code} before saying ${text}: ${seen}`)));
  });
}

function finish(child: ChildProcess): Promise<{ code: number | null; out: string }> {
  let out = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, out })));
}

const agentChat = (...args: string[]) => finish(start(args));

describe("the packed package, installed into an empty prefix", () => {
  it("installs with no warning", () => {
    expect(installStderr).not.toMatch(/warn/i);
  });

  it("carries no script that needs files it does not ship, and names its repository", () => {
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    for (const script of ["preinstall", "install", "postinstall", "prepare"]) {
      expect(pkg.scripts?.[script], script).toBeUndefined();
    }
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\//);
    expect(pkg.homepage).toMatch(/^https:\/\//);
    expect(pkg.bugs?.url).toMatch(/^https:\/\//);
  });

  it("ships every doc its help and README point to", async () => {
    const help = await agentChat("--help");
    const readme = readFileSync(join(installed, "README.md"), "utf8");
    const pointed = new Set(
      [...`${help.out}\n${readme}`.matchAll(/\bdocs\/[\w./-]+\.(?:md|png)/g)].map((m) => m[0]),
    );
    expect(pointed.size).toBeGreaterThan(0);
    expect([...pointed].filter((doc) => !existsSync(join(installed, doc)))).toEqual([]);
  });

  it("runs the README's 60-second tour", async () => {
    expect((await agentChat("init", "review", "--members", "alice,bob")).code).toBe(0);
    const first = ["--from", "alice", "--to", "bob", "--title", "Draft ready", "--body", "PR 12?"];
    expect((await agentChat("post", "review", ...first)).code).toBe(0);
    const read = await agentChat("read", "review", "--as", "bob");
    expect(read).toMatchObject({ code: 0, out: expect.stringContaining("PR 12?") });

    const waiter = start(["wait", "review", "--as", "bob", "--timeout", "30"]);
    const waited = finish(waiter);
    await watching(waiter);
    const second = ["--from", "alice", "--to", "bob", "--reply", "1", "--title", "Also: rename"];
    expect((await agentChat("post", "review", ...second, "--body", "created_at?")).code).toBe(0);
    expect(await waited).toMatchObject({ code: 0, out: expect.stringContaining("created_at?") });

    const add = ["--id", "12", "--title", "Review PR 12", "--as", "alice"];
    expect((await agentChat("task", "add", "review", ...add)).code).toBe(0);
    const claim = await agentChat("claim", "review", "task-12.md", "--as", "bob");
    expect(claim).toMatchObject({ code: 0, out: expect.stringContaining("claimed task-12") });
    expect((await agentChat("claim", "review", "12", "--as", "alice")).code).toBe(3);
  });

  it("runs the governance flow with a daemon up, as the README suggests running one", async () => {
    const runtime = join(work, "run");
    mkdirSync(runtime, { mode: 0o700 });
    const viaDaemon = { XDG_RUNTIME_DIR: runtime };
    const run = (...args: string[]) => finish(start(args, viaDaemon));
    expect((await run("init", "gov")).code).toBe(0);
    const daemon = start(["--json", "serve"], viaDaemon);
    try {
      await said(daemon, '"sockets"');
      // The commands below find it, as every command for the root then does (docs/daemon.md).
      expect((await run("info")).out).toMatch(/^daemon: +live /m);
      const band = ["--maintainer", "alice", "--band", "merge=approval"];
      expect(await run("govern", "gov", "--as", "alice", ...band)).toMatchObject({ code: 0 });
      const asking = ["--action", "merge", "--title", "Ship it"];
      const request = start(["request", "gov", "--as", "bob", ...asking], viaDaemon);
      const requested = finish(request);
      await said(request, "posted #1");
      expect(await run("pending", "gov")).toMatchObject({
        code: 0,
        out: "#1\tmerge\tapproval\tbob\tShip it\n",
      });
      const approved = await run("approve", "gov", "1", "--as", "alice");
      expect(approved).toMatchObject({ code: 0, out: "approved #1 (merge: Ship it); posted #2\n" });
      expect((await requested).code).toBe(0);
    } finally {
      daemon.kill("SIGTERM");
    }
  });
});
