import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadSeen, saveSeen } from "../../src/cli/hook-state.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const seen = (n: number) => ({ root: "/r", context: { ch: n }, stop: {} });

describe("the hooks' per-session memory", () => {
  it("keeps two long session ids that share a prefix apart", async () => {
    const prefix = "s".repeat(400);
    await saveSeen(tmp.dir, "bob", `${prefix}-1`, seen(1));
    await saveSeen(tmp.dir, "bob", `${prefix}-2`, seen(2));
    expect((await loadSeen(tmp.dir, "bob", `${prefix}-1`, "/r")).context).toEqual({ ch: 1 });
    expect((await loadSeen(tmp.dir, "bob", `${prefix}-2`, "/r")).context).toEqual({ ch: 2 });
  });

  it("keys the marks by the canonical root: a NATS URL's credentials are not kept", async () => {
    const first = await loadSeen(tmp.dir, "bob", "s1", "nats://agent:s3cret@h.lan/team-a");
    await saveSeen(tmp.dir, "bob", "s1", { ...first, context: { ch: 4 } });
    expect(
      readdirSync(tmp.dir)
        .map((f) => readFileSync(join(tmp.dir, f), "utf8"))
        .join(),
    ).not.toContain("s3cret");
    const same = await loadSeen(tmp.dir, "bob", "s1", "nats://h.lan:4222/team-a");
    expect(same.context).toEqual({ ch: 4 });
    expect((await loadSeen(tmp.dir, "bob", "s1", "nats://h.lan/team-b")).context).toEqual({});
  });

  it("a folder among the oldest entries never makes saving fail", async () => {
    const old = Date.now() / 1000 - 3600;
    mkdirSync(join(tmp.dir, "planted"));
    writeFileSync(join(tmp.dir, "planted", "x"), "x");
    utimesSync(join(tmp.dir, "planted"), old, old);
    for (let i = 0; i < 205; i++) writeFileSync(join(tmp.dir, `f${i}`), "{}");
    await saveSeen(tmp.dir, "bob", "s1", seen(3));
    expect((await loadSeen(tmp.dir, "bob", "s1", "/r")).context).toEqual({ ch: 3 });
    expect(readdirSync(tmp.dir).length).toBeLessThanOrEqual(201);
  });
});
