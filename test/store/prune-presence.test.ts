import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { runCli } from "../helpers/cli.js";
import { agePresence, tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: FsStore;
const presence = (agent: string) => join(tmp.dir, ".presence", `${agent}.json`);
const DAY = 86_400_000;

beforeEach(async () => {
  tmp = tempDir();
  store = new FsStore(tmp.dir);
  await store.init("ch", { members: ["old", "new"] });
  await store.post("ch", { from: "old", body: "long ago" });
  await store.post("ch", { from: "new", body: "just now" });
  agePresence(tmp.dir, "old", 40 * DAY);
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

/** Prune removes what is kept of agents not seen for long: cursors and presence (issue 17). */
describe("prune: presence records", () => {
  it("lists, then removes, the presence of agents not seen for longer than asked", async () => {
    const dry = await store.prune({ olderThanMs: 30 * DAY, dryRun: true });
    expect(dry.presence).toMatchObject([{ agent: "old", file: ".presence/old.json" }]);
    expect(existsSync(presence("old"))).toBe(true);
    const done = await store.prune({ olderThanMs: 30 * DAY });
    expect(done.presence.map((p) => p.agent)).toEqual(["old"]);
    expect(existsSync(presence("old"))).toBe(false);
    expect(existsSync(presence("new"))).toBe(true);
    const who = await store.who("ch");
    expect(who.find((p) => p.agent === "old")?.state).toBe("never-seen");
  });

  it("the CLI lists them first with --dry-run, then removes them", async () => {
    const env = { AGENT_CHAT_DAEMON: "off" };
    const dry = await runCli(["prune", "--older-than", "30d", "--dry-run"], { root: tmp.dir, env });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^would remove presence of old \(last seen \S+\)\n$/);
    expect(existsSync(presence("old"))).toBe(true);
    const done = await runCli(["prune", "--older-than", "30d"], { root: tmp.dir, env });
    expect(done.stdout).toMatch(/^removed presence of old /);
    expect(existsSync(presence("old"))).toBe(false);
  });

  it("never follows a link among the records", async () => {
    const victim = join(tmp.dir, "victim.json");
    writeFileSync(victim, "keep");
    mkdirSync(join(tmp.dir, ".presence"), { recursive: true });
    symlinkSync(victim, presence("evil"));
    const result = await store.prune({ olderThanMs: 0, dryRun: false });
    expect(result.presence.map((p) => p.agent)).not.toContain("evil");
    expect(readFileSync(victim, "utf8")).toBe("keep");
  });
});
