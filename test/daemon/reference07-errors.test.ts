import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Daemon, makeWorld, RawClient, startDaemon, type World } from "./harness.js";

// chat.py 0.7's code for a refusal is data on the error (`reference`), which the daemon's wire
// carries: a command of chat.py's grammar exits through the daemon as it does on the folder.
describe("chat.py 0.7's refusals through the daemon", () => {
  let world: World;
  let daemon: Daemon | undefined;
  const direct = (...args: string[]) => world.cli(args, { AGENT_CHAT_DAEMON: "off" });
  const served = (...args: string[]) => world.cli(args);

  beforeEach(async () => {
    world = makeWorld();
    for (const args of [
      ["init", "dev", "--members", "alice,bob"],
      ["task", "create", "dev", "T1", "--title", "t", "--as", "alice"],
      ["task", "claim", "dev", "T1", "--as", "alice"],
      ["lock", "dev", "src", "--as", "alice"],
    ]) {
      expect((await direct(...args)).code, args.join(" ")).toBe(0);
    }
  });
  afterEach(async () => {
    await daemon?.stop();
    daemon = undefined;
    world.cleanup();
  });

  it("the wire's error carries chat.py's code as `reference`, and only then", async () => {
    daemon = await startDaemon(world);
    const c = await RawClient.connect(daemon.socket);
    const again = {
      op: "task_create",
      channel: "dev",
      task: { id: "T1", title: "t", from: "bob" },
    };
    expect(await c.request({ id: 1, ...again })).toEqual({
      id: 1,
      ok: false,
      error: {
        code: "TASK_EXISTS",
        message: "TASK_ALREADY_EXISTS: task T1 already exists in dev",
        reference: "TASK_ALREADY_EXISTS",
      },
    });
    const plain = await c.request({ id: 2, op: "read", channel: "nowhere", as: "bob" });
    expect(plain).toMatchObject({ id: 2, ok: false, error: { code: "CHANNEL_NOT_FOUND" } });
    expect(Object.keys(plain.error as object).sort()).toEqual(["code", "message"]);
    c.close();
  });

  it("a task, lease, path-lock or state refusal exits as on the folder", async () => {
    const cases = [
      ["task", "claim", "dev", "T1", "--as", "bob"], // LEASE_CONFLICT: 2
      ["task", "block", "dev", "T1", "--as", "bob"], // LEASE_MUTATION_REQUIRED: 2
      ["task", "create", "dev", "T1", "--title", "t", "--as", "bob"], // TASK_ALREADY_EXISTS: 2
      ["lock", "dev", "src/a", "--as", "bob"], // PATH_LOCK_CONFLICT: 1
      ["unlock", "dev", "nolock", "--as", "bob"], // PATH_LOCK_NOT_FOUND: 1
      ["state", "dev", "--saved"], // STATE_RECORD_NOT_FOUND: 1 (read from the folder, daemon or not)
    ];
    const alone = [];
    for (const args of cases) alone.push(await direct(...args));
    daemon = await startDaemon(world);
    expect((await served("info")).stdout).toMatch(/daemon:\s+live/);
    for (const [i, args] of cases.entries()) {
      const through = await served(...args);
      const want = alone[i]!;
      expect(want.code, args.join(" ")).not.toBe(0);
      expect([through.code, through.stderr], args.join(" ")).toEqual([want.code, want.stderr]);
    }
    expect(alone.map((r) => r.code)).toEqual([2, 2, 2, 1, 1, 1]);
    expect(alone.map((r) => /agent-chat: ([A-Z_]+):/.exec(r.stderr)?.[1])).toEqual([
      "LEASE_CONFLICT",
      "LEASE_MUTATION_REQUIRED",
      "TASK_ALREADY_EXISTS",
      "PATH_LOCK_CONFLICT",
      "PATH_LOCK_NOT_FOUND",
      "STATE_RECORD_NOT_FOUND",
    ]);
  });
});
