import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { TaskInfo } from "../../src/store/types.js";
import { type Daemon, makeWorld, startDaemon, type World } from "../daemon/harness.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";

/**
 * The holder of a task is SIGKILLed mid-task (its parked `wait` was renewing the lease); once
 * the lease and the skew grace have passed another agent claims it with token + 1; the dead
 * holder, restarted, calls `done` with its old token: refused (exit 3), the task stays with the
 * new holder. On the folder store, through the daemon, and on NATS. The channel's default lease
 * is 2 s, so a parked wait renews every second and the whole row takes seconds.
 */
let world: World;
let server: NatsServer | undefined;
const daemons: Daemon[] = [];

beforeAll(async () => {
  world = makeWorld();
  if (!natsSkipReason) server = await NatsServer.start();
});
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop("SIGKILL");
});
afterAll(async () => {
  await server?.dispose();
  world.cleanup();
});

type Env = Record<string, string>;

async function cli(env: Env, args: string[]) {
  return runCli(args, { env: { ...world.env, ...env }, timeoutMs: 30_000 });
}

async function task(env: Env, channel: string): Promise<TaskInfo> {
  const r = await cli(env, ["--json", "tasks", channel]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { tasks: TaskInfo[] }).tasks[0]!;
}

async function crashAndLateHolder(env: Env, channel: string): Promise<void> {
  expect((await cli(env, ["init", channel, "--task-ttl", "2s"])).code).toBe(0);
  await cli(env, ["task", "add", channel, "--id", "1", "--title", "ship", "--as", "lead"]);
  const claim = await cli(env, ["--json", "claim", channel, "1", "--as", "bob"]);
  expect(claim.code, claim.stderr).toBe(0);
  const granted = JSON.parse(claim.stdout) as TaskInfo;
  expect(granted.token).toBe(1);

  // Mid-task: bob's parked wait keeps renewing his lease; seen renewed, it is killed.
  const holder = startCli(["wait", channel, "--as", "bob", "--timeout", "600"], {
    env: { ...world.env, ...env },
    timeoutMs: 60_000,
  });
  const exited = collect(holder);
  await vi.waitFor(
    async () => {
      const t = await task(env, channel);
      if (Date.parse(t.expiresAt!) <= Date.parse(granted.expiresAt!))
        throw new Error("not renewed");
    },
    { timeout: 20_000, interval: 200 },
  );
  holder.kill("SIGKILL");
  expect((await exited).signal).toBe("SIGKILL");

  // After the lease and the skew grace, carol claims: token 2.
  await vi.waitFor(
    async () => {
      if ((await task(env, channel)).state !== "expired") throw new Error("not expired yet");
    },
    { timeout: 20_000, interval: 250 },
  );
  const taken = await cli(env, ["--json", "claim", channel, "1", "--as", "carol", "--ttl", "1h"]);
  expect(taken.code, taken.stderr).toBe(0);
  expect(JSON.parse(taken.stdout)).toMatchObject({ holder: "carol", token: 2 });

  // bob's process, restarted, finishes with its old token: refused, and changes nothing.
  const late = await cli(env, ["done", channel, "1", "--as", "bob", "--token", "1"]);
  expect(late.code).toBe(3);
  expect(late.stderr).toContain("carol");
  expect(await task(env, channel)).toMatchObject({ state: "claimed", holder: "carol", token: 2 });
}

describe("leases: holder SIGKILLed mid-task, late holder fenced out", () => {
  it("folder store", async () => {
    await crashAndLateHolder({ AGENT_CHAT_DAEMON: "off" }, "fs");
  }, 60_000);

  it("through the daemon", async () => {
    daemons.push(await startDaemon(world));
    await crashAndLateHolder({}, "daemon");
  }, 60_000);

  it.skipIf(natsSkipReason !== undefined)(
    `NATS${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
    async () => {
      await crashAndLateHolder({ AGENT_CHAT_ROOT: server!.url(`leases${process.pid}`) }, "nats");
    },
    60_000,
  );
});
