import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeWorld, type World } from "./harness.js";

/*
 * A one-off post, read or peek works on the folder root itself even while a daemon serves it: it
 * gains nothing from the daemon and would pay for the connection. Seen from the socket: a
 * listener there (standing in for the daemon) is never connected to by them, and is by a wait.
 */

let world: World;
let server: Server;
let socket: string;
let connections: number;

beforeEach(async () => {
  world = makeWorld();
  const dir = join(world.dir, "sock");
  mkdirSync(dir, { mode: 0o700 });
  socket = join(dir, "daemon.sock");
  connections = 0;
  server = createServer((conn) => {
    connections += 1;
    conn.destroy();
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  expect((await world.cli(["init", "review"])).code).toBe(0);
});
afterEach(async () => {
  await new Promise((resolve) => server.close(resolve));
  world.cleanup();
});

describe("one-off calls with a daemon socket in place", () => {
  it("post, read --peek, read and peek never connect to it, and answer from the folder", async () => {
    const env = { AGENT_CHAT_SOCKET: socket, AGENT_CHAT_DAEMON: "" };
    const posted = await world.cli(["post", "review", "--from", "alice", "--body", "hi"], env);
    expect(posted.code).toBe(0);
    const peekRead = await world.cli(["read", "review", "--as", "bob", "--peek"], env);
    expect(peekRead).toMatchObject({ code: 0 });
    expect(peekRead.stdout).toContain("hi");
    const peek = await world.cli(["peek", "review"], env);
    expect(peek.stdout).toContain("hi");
    const read = await world.cli(["read", "review", "--as", "bob"], env);
    expect(read.stdout).toContain("hi");
    expect(connections).toBe(0);
    // The socket is there and live: a command that goes through a daemon does connect.
    await world.cli(["channels"], env);
    expect(connections).toBeGreaterThan(0);
  });
});
