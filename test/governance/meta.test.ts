import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { govern } from "../../src/features/governance/governance.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { HAS_PYTHON, pythonSkipReason, requirePresent, skipName } from "../helpers/tools.js";

const REFERENCE_KEYS = ["channel", "members", "topic", "created"];

/** Reads `_meta.json` the way the reference chat.py does: Python's json module, its own keys. */
function pythonReadsMeta(path: string): { keys: string[]; members: string[]; topic: string } {
  const script =
    "import json,sys\n" +
    "m=json.load(open(sys.argv[1],encoding='utf-8'))\n" +
    "print(json.dumps({'keys':list(m),'members':m['members'],'topic':m.get('topic','')}))";
  return JSON.parse(execFileSync("python3", ["-c", script, path], { encoding: "utf8" }));
}

describe("the profile in _meta.json (init, govern)", () => {
  let root: string;
  let cleanup: () => void;
  const cli = (args: string[]) => runCli(args, { root });
  const metaPath = () => join(root, "review", "_meta.json");

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("agent-chat-gov-meta-"));
  });
  afterEach(() => cleanup());

  it("init --maintainer --band writes our keys after the reference's, in order", async () => {
    const init = await cli(
      ["init", "review", "--members", "alice,bob", "--topic", "release", "--maintainer", "alice"]
        .concat(["--band", "merge=approval", "--band", "deploy=approval,refactor=notify"])
        .concat(["--band", "*=auto", "--veto-window", "120"]),
    );
    expect(init.code).toBe(0);
    const meta = JSON.parse(readFileSync(metaPath(), "utf8"));
    expect(Object.keys(meta)).toEqual([
      ...REFERENCE_KEYS,
      "channel_id",
      "maintainer",
      "bands",
      "veto_window_seconds",
    ]);
    expect(meta).toMatchObject({
      members: ["alice", "bob"],
      topic: "release",
      channel_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      maintainer: "alice",
      bands: { deploy: "approval", merge: "approval", refactor: "notify", "*": "auto" },
      veto_window_seconds: 120,
    });
    // The reference's commands still read the channel.
    const roster = await cli(["roster", "review"]);
    expect(roster.stdout).toContain("members : alice, bob");
  });

  it.skipIf(pythonSkipReason !== undefined)(
    skipName("Python's json (as chat.py reads it) sees the reference keys first", pythonSkipReason),
    async () => {
      requirePresent("python3", HAS_PYTHON);
      await cli(["init", "review", "--members", "alice,bob", "--topic", "t"]);
      await cli(["govern", "review", "--maintainer", "alice", "--band", "merge=approval"]);
      const seen = pythonReadsMeta(metaPath());
      expect(seen.keys.slice(0, 4)).toEqual(REFERENCE_KEYS);
      expect(seen.members).toEqual(["alice", "bob"]);
      expect(seen.topic).toBe("t");
    },
  );

  it("govern changes an existing channel and keeps the reference's keys as they were", async () => {
    await cli(["init", "review", "--members", "alice", "--topic", "t"]);
    const before = JSON.parse(readFileSync(metaPath(), "utf8"));
    const shown = await cli(["govern", "review"]);
    expect(shown.stdout).toContain("channel review has no governance profile");

    const changed = await cli(
      ["govern", "review", "--maintainer", "alice", "--band", "merge=approval"].concat([
        "--band",
        "*=auto",
        "--veto-window",
        "60",
      ]),
    );
    expect(changed.code).toBe(0);
    expect(changed.stdout).toBe(
      "channel: review\nmaintainer: alice\nveto window: 60 s\nbands:\n" +
        "  merge   approval\n  *       auto\n",
    );
    const after = JSON.parse(readFileSync(metaPath(), "utf8"));
    for (const key of REFERENCE_KEYS) expect(after[key]).toEqual(before[key]);

    const json = JSON.parse(
      (await cli(["--json", "govern", "review", "--as", "alice", "--remove-band", "merge"])).stdout,
    );
    expect(json).toEqual({
      channel: "review",
      governed: true,
      maintainer: "alice",
      bands: { "*": "auto" },
      veto_window_seconds: 60,
    });
  });

  it("once a maintainer is set, only the maintainer changes the profile", async () => {
    await cli(["init", "review", "--members", "alice,bob", "--maintainer", "alice"]);
    const before = readFileSync(metaPath(), "utf8");
    const takeover = await cli([
      "--json",
      "govern",
      "review",
      "--as",
      "bob",
      "--maintainer",
      "bob",
    ]);
    expect(takeover.code).toBe(1);
    expect(JSON.parse(takeover.stdout).error.code).toBe("NOT_MAINTAINER");
    expect(takeover.stderr).toContain(
      "bob is not the maintainer of review (alice is); only alice changes its governance profile",
    );
    // Bands too: making merge auto would bypass the maintainer as surely as replacing them.
    const bypass = await cli(["govern", "review", "--as", "bob", "--band", "merge=auto"]);
    expect(bypass.code).toBe(1);
    // A name that only shares alice's cursor key is not alice; no name at all is nobody.
    const lookalike = await cli(["govern", "review", "--as", "alice.", "--maintainer", "bob"]);
    expect(lookalike.stderr).toContain("alice. is not the maintainer of review (alice is)");
    const anonymous = await cli(["govern", "review", "--maintainer", "bob"]);
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toContain("review has a maintainer (alice); give --as alice");
    expect(readFileSync(metaPath(), "utf8")).toBe(before);

    const handover = await cli(["govern", "review", "--as", "Alice", "--maintainer", "bob"]);
    expect(handover.code).toBe(0);
    expect(handover.stdout).toContain("maintainer: bob");
  });

  it("a maintainer or members that would share one identity are refused", async () => {
    const twins = await cli(["--json", "init", "review", "--members", "bob_x,alice,bob-x"]);
    expect(twins.code).toBe(64);
    expect(JSON.parse(twins.stdout).error.code).toBe("INVALID_ARGUMENT");
    expect(twins.stderr).toContain(
      'members "bob_x" and "bob-x" would be one identity (both use the cursor file .cursors/bob-x.txt)',
    );
    expect(existsSync(metaPath())).toBe(false);
    const lookalike = await cli(["init", "review", "--members", "alice", "--maintainer", "alice."]);
    expect(lookalike.code).toBe(64);
    expect(existsSync(metaPath())).toBe(false);

    await cli(["init", "review", "--members", "alice,bob"]);
    const govern = await cli(["govern", "review", "--maintainer", "alice."]);
    expect(govern.code).toBe(64);
    expect(govern.stderr).toContain('"alice" and "alice." would be one identity');
  });

  it("bad band names, bad actions and unknown actions give clear errors", async () => {
    await cli(["init", "review", "--maintainer", "alice", "--band", "merge=approval"]);
    const badBand = await cli(["--json", "govern", "review", "--band", "deploy=aproval"]);
    expect(badBand.code).toBe(64);
    expect(badBand.stderr).toBe(
      'agent-chat: invalid band "aproval" for action deploy: use auto, notify, approval\n',
    );
    expect(JSON.parse(badBand.stdout).error.code).toBe("INVALID_ARGUMENT");

    const badAction = await cli(["govern", "review", "--band", "de ploy=auto"]);
    expect(badAction.stderr).toContain('invalid action name "de ploy"');
    const noEq = await cli(["init", "other", "--band", "merge"]);
    expect(noEq.stderr).toContain("--band wants ACTION=BAND (e.g. merge=approval)");
    const noMaintainer = await cli(["init", "other", "--band", "merge=approval"]);
    expect(noMaintainer.stderr).toContain("merge=approval need a maintainer");

    const unknown = await cli([
      "--json",
      "request",
      "review",
      "--as",
      "bob",
      "--action",
      "deploy",
      "--title",
      "x",
    ]);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout).error.code).toBe("UNKNOWN_ACTION");
    expect(unknown.stderr).toContain(
      "action deploy has no band in channel review (known: merge); add one with: agent-chat govern review --band deploy=approval",
    );

    await cli(["init", "plain"]);
    const ungoverned = await cli([
      "--json",
      "request",
      "plain",
      "--as",
      "bob",
      "--action",
      "merge",
      "--title",
      "x",
    ]);
    expect(JSON.parse(ungoverned.stdout).error.code).toBe("NOT_GOVERNED");
    // Nothing was written by the failed commands.
    expect(existsSync(join(root, "other"))).toBe(false);
    expect(JSON.parse(readFileSync(metaPath(), "utf8")).bands).toEqual({ merge: "approval" });
  });

  it("govern's meta update is atomic and excluded from concurrent posts", async () => {
    const a = new FsStore(root);
    const b = new FsStore(root);
    try {
      await a.init("review", { members: ["alice", "bob"] });
      const posts = Array.from({ length: 20 }, (_, i) =>
        b.post("review", { from: "bob", body: `m${i}` }),
      );
      const changes = ["merge", "deploy", "ship", "tag"].map((action) =>
        govern(a, "review", { maintainer: "alice", bands: { [action]: "approval" } }, "alice"),
      );
      const seqs = (await Promise.all(posts)).map((p) => p.seq).sort((x, y) => x - y);
      await Promise.all(changes);
      expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      const meta = JSON.parse(readFileSync(metaPath(), "utf8"));
      // Each change read the previous one under the lock: no band was lost.
      expect(Object.keys(meta.bands).sort()).toEqual(["deploy", "merge", "ship", "tag"]);
      expect(meta.members).toEqual(["alice", "bob"]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
