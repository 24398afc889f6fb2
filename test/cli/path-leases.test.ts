import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let root: string;

beforeEach(async () => {
  tmp = tempDir();
  root = join(tmp.dir, "root");
  mkdirSync(root);
  expect((await cli(["init", "review"])).code).toBe(0);
});
afterEach(() => tmp.cleanup());

function cli(args: string[], env: Record<string, string | undefined> = {}, cwd?: string) {
  return runCli(args, { root, env: { AGENT_CHAT_DAEMON: "off", ...env }, ...(cwd ? { cwd } : {}) });
}

describe("lease add / leases / lease renew / lease release", () => {
  it("grants with a token, lists it, refuses an overlap (exit 3) naming holder and pattern", async () => {
    const add = await cli([
      "--json",
      "lease",
      "add",
      "review",
      "src/store/**",
      "--as",
      "bob",
      "--ttl",
      "2h",
      "--reason",
      "core",
    ]);
    expect(add.code).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({
      token: 1,
      pattern: "src/store/**",
      holder: "bob",
    });
    const clash = await cli(["lease", "add", "review", "src/store/fs.ts", "--as", "carol"]);
    expect(clash.code).toBe(3);
    expect(clash.stderr).toContain("bob holds src/store/** (exclusive, token 1");
    // Two live exclusive records of one path would break chat.py's `unlock <path>`: refused.
    const exclusive = ["lease", "add", "review", "src/store/fs.ts", "--as", "carol", "--force"];
    expect((await cli(exclusive)).code).toBe(3);
    const forced = await cli([...exclusive, "--shared"]);
    expect(forced.code).toBe(0);
    expect(forced.stderr).toContain("forced over: bob holds src/store/**");
    const listed = JSON.parse((await cli(["--json", "leases", "review"])).stdout);
    expect(listed).toMatchObject({ channel: "review", leases: [{ pattern: "src/store/**" }, {}] });
    const list = await cli(["leases", "review"]);
    expect(list.stdout).toMatch(/src\/store\/\*\* {2}bob {2}exclusive, token 1, (2h|1h 59m)/);
    expect((await cli(["lease", "release", "review", "1", "--as", "carol"])).code).toBe(3);
    expect(
      (await cli(["lease", "renew", "review", "src/store/**", "--as", "bob", "--token", "1"])).code,
    ).toBe(0);
    const released = await cli(["lease", "release", "review", "src/store/**", "--as", "bob"]);
    expect(released.stdout).toBe("released src/store/** in review (token 1)\n");
  });

  it.each(["0", "-5m", "soon", "8d"])(
    "--ttl %s is a usage error, exit 64, and leases nothing",
    async (ttl) => {
      const r = await cli(["lease", "add", "review", "src/**", "--as", "bob", `--ttl=${ttl}`]);
      expect(r.code).toBe(64);
      expect(JSON.parse((await cli(["--json", "leases", "review"])).stdout)).toEqual({
        channel: "review",
        leases: [],
      });
    },
  );

  it("a pattern that escapes the repository is refused", async () => {
    for (const pattern of ["../x", "/etc/passwd"]) {
      const r = await cli(["lease", "add", "review", pattern, "--as", "bob"]);
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/absolute|segment/);
    }
  });
});

describe("agent-chat guard and setup git-hook", () => {
  let repo: string;
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      cwd: repo,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });

  beforeEach(() => {
    repo = join(tmp.dir, "repo");
    mkdirSync(join(repo, "src", "store"), { recursive: true });
    git("init", "-q");
    writeFileSync(join(repo, "src", "store", "fs.ts"), "x\n");
    writeFileSync(join(repo, "README.md"), "x\n");
  });

  /** A commit through the installed hook, as `name`: whether it went in, and what git said. */
  function commit(name: string): { ok: boolean; out: string } {
    git("add", "-A");
    try {
      const out = execFileSync(
        "git",
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"],
        {
          cwd: repo,
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
          env: {
            ...process.env,
            AGENT_CHAT_NAME: name,
            AGENT_CHAT_DAEMON: "off",
            PATH: `${join(tmp.dir, "bin")}:${process.env.PATH}`,
          },
        },
      );
      return { ok: true, out };
    } catch (err) {
      const e = err as { stderr: string; stdout: string };
      return { ok: false, out: `${e.stdout}${e.stderr}` };
    }
  }

  async function install(): Promise<void> {
    // The hook calls `agent-chat`: this test's build, on the PATH.
    mkdirSync(join(tmp.dir, "bin"));
    const bin = join(tmp.dir, "bin", "agent-chat");
    writeFileSync(bin, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(bin, 0o755);
    const r = await cli(["setup", "git-hook", "review", "--dir", repo]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("created");
  }

  it("refuses another agent's commit under a live exclusive lease; the holder's passes", async () => {
    await install();
    await cli(["lease", "add", "review", "src/store/**", "--as", "bob", "--ttl", "1h"]);
    const refused = commit("carol");
    expect(refused.ok).toBe(false);
    expect(refused.out).toContain(
      "src/store/fs.ts: leased by bob (src/store/**, token 1) until 20",
    );
    expect(git("rev-list", "--all").trim()).toBe("");
    const mine = commit("bob");
    expect(mine.ok).toBe(true);
    // Moving a leased file out of the lease touches it too (its old path is staged as deleted).
    git("mv", "src/store/fs.ts", "moved.ts");
    const moved = commit("carol");
    expect(moved.ok).toBe(false);
    expect(moved.out).toContain("src/store/fs.ts: leased by bob");
    expect(mine.out + git("log", "--format=%s")).toContain("m");
  });

  it("never blocks by accident: no leases, no channel, an unreachable root each let the commit through, saying why", async () => {
    writeFileSync(join(repo, "a.txt"), "a\n");
    git("add", "-A");
    const none = await cli(["guard", "review", "--dir", repo], { AGENT_CHAT_NAME: "carol" });
    expect(none).toMatchObject({ code: 0 });
    expect(none.stderr).toBe(`agent-chat guard: no path leases in ${root}; commit let through\n`);
    const nochannel = await cli(["guard", "nope", "--dir", repo]);
    expect(nochannel.code).toBe(0);
    expect(nochannel.stderr).toContain("commit let through");
    const gone = await runCli(["guard", "--dir", repo], {
      root: join(tmp.dir, "missing"),
      env: { AGENT_CHAT_DAEMON: "off" },
    });
    expect(gone.code).toBe(0);
    expect(gone.stderr).toMatch(/^agent-chat guard: root .* does not exist; commit let through\n$/);
    const nats = await runCli(["guard", "--dir", repo], {
      root: "nats://127.0.0.1:1/ns",
    });
    expect(nats.code).toBe(0);
    expect(nats.stderr).toContain("cannot read the leases");
  });

  it("a lease pattern that backtracks wedges neither the guard nor the channel (issue 40, finding 7)", async () => {
    const extglob = "**/+(*?)+(*?)+(*?)+(*?)Q";
    const refused = await cli(["lease", "add", "review", extglob, "--as", "mallory"]);
    expect(refused.code).toBe(64);
    expect(refused.stderr).toContain("extglob");
    const stars = "**/*a*a*a*a*a*a*a*a*a*aQ";
    expect((await cli(["lease", "add", "review", stars, "--as", "mallory"])).code).toBe(0);
    // The refused one planted in the lease document, as anyone who can write the root can.
    const doc = join(root, "review", ".leases.json");
    const planted = JSON.parse(readFileSync(doc, "utf8"));
    planted.leases.push({ ...planted.leases[0], token: 2, pattern: extglob });
    planted.token = 2;
    writeFileSync(doc, JSON.stringify(planted));
    const long = "a".repeat(80);
    writeFileSync(join(repo, long), "x\n");
    git("add", "-A");
    // Each of these spun in picomatch's RegExp for minutes, the last two holding the channel
    // lock; the runner's timeout catches a hang.
    const guard = await cli(["guard", "review", "--dir", repo, "--as", "carol"]);
    expect(guard.code).toBe(0);
    expect(guard.stderr).toContain("none under another agent's lease");
    // Refused, rightly: a path under the folder aaa… may end in aQ.
    const add = await cli(["lease", "add", "review", long, "--as", "carol"]);
    expect(add.code).toBe(3);
    expect(add.stderr).toContain(`mallory holds ${stars}`);
    expect((await cli(["post", "review", "--from", "carol", "--body", "still here"])).code).toBe(0);
  });

  it("setup git-hook is idempotent and keeps an existing shell hook", async () => {
    const hook = join(repo, ".git", "hooks", "pre-commit");
    mkdirSync(join(repo, ".git", "hooks"), { recursive: true });
    writeFileSync(hook, "#!/bin/sh\necho mine\n");
    const first = await cli(["--json", "setup", "git-hook", "review", "--dir", repo]);
    expect(JSON.parse(first.stdout)).toMatchObject({ action: "added", hook });
    const text = readFileSync(hook, "utf8");
    expect(text).toContain("echo mine");
    expect(text.indexOf("guard review")).toBeLessThan(text.indexOf("echo mine"));
    const again = await cli(["setup", "git-hook", "review", "--dir", repo]);
    expect(again.stdout).toContain("already");
    expect(readFileSync(hook, "utf8")).toBe(text);
    expect(statSync(hook).mode & 0o111).not.toBe(0);
    rmSync(hook);
    writeFileSync(hook, "#!/usr/bin/env python3\nprint(1)\n");
    const python = await cli(["setup", "git-hook", "review", "--dir", repo]);
    expect(python.code).toBe(64);
    expect(readFileSync(hook, "utf8")).toBe("#!/usr/bin/env python3\nprint(1)\n");
  });
});

describe("the channel's default lease: govern --task-ttl, init --task-ttl", () => {
  it("govern sets it; claims and path leases without --ttl get it", async () => {
    const set = await cli(["govern", "review", "--task-ttl", "45m"]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain("default lease of review: 45m");
    expect(JSON.parse((await cli(["--json", "roster", "review"])).stdout).task_ttl).toBe(2700);
    await cli(["task", "add", "review", "--title", "t", "--as", "alice"]);
    const claim = JSON.parse((await cli(["--json", "claim", "review", "1", "--as", "bob"])).stdout);
    const lease = JSON.parse(
      (await cli(["--json", "lease", "add", "review", "src/**", "--as", "bob"])).stdout,
    );
    for (const end of [claim.expiresAt, lease.expiresAt]) {
      const left = Date.parse(end) - Date.now();
      expect(left).toBeGreaterThan(44 * 60_000);
      expect(left).toBeLessThanOrEqual(45 * 60_000);
    }
  });

  it.each(["0", "-1m", "soon", "8d"])(
    "--task-ttl %s is a usage error, exit 64, and changes nothing",
    async (ttl) => {
      expect((await cli(["govern", "review", `--task-ttl=${ttl}`])).code).toBe(64);
      expect((await cli(["init", "other", `--task-ttl=${ttl}`])).code).toBe(64);
      expect(
        JSON.parse((await cli(["--json", "roster", "review"])).stdout).task_ttl,
      ).toBeUndefined();
    },
  );

  it("init takes it; once a maintainer is set, only they change it", async () => {
    expect((await cli(["init", "other", "--task-ttl", "2h", "--maintainer", "alice"])).code).toBe(
      0,
    );
    expect(JSON.parse((await cli(["--json", "roster", "other"])).stdout).task_ttl).toBe(7200);
    const bob = await cli(["govern", "other", "--task-ttl", "1h", "--as", "bob"]);
    expect(bob.code).not.toBe(0);
    expect(bob.stderr).toContain("maintainer (alice)");
    expect((await cli(["govern", "other", "--task-ttl", "1h", "--as", "alice"])).code).toBe(0);
    expect(JSON.parse((await cli(["--json", "roster", "other"])).stdout).task_ttl).toBe(3600);
  });
});
