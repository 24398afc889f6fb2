import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { LineSplitter } from "../../src/core/ndjson.js";
import { DaemonClient } from "../../src/daemon/client.js";
import { type DaemonInfo, DEFAULT_MAX_LINE_BYTES } from "../../src/daemon/protocol.js";
import { parseRequest } from "../../src/daemon/requests.js";
import { tempDir } from "../helpers/tmp.js";

const KiB = 1024;
const MiB = 1024 * KiB;

/** What the fake daemon sends for `info`. */
const INFO: DaemonInfo = {
  root: "/nowhere",
  pid: 1,
  version: "0.0.0",
  sockets: [],
  maxLineBytes: DEFAULT_MAX_LINE_BYTES,
  maxBufferedBytes: 64 * MiB,
  bufferedBytes: 0,
  autoCreate: false,
  startedAt: "2026-01-01T00:00:00Z",
  connections: 1,
  subscriptions: 0,
};

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A Unix socket served by `onConnection`, removed after the test. */
async function fakeDaemon(onConnection: (socket: Socket) => void): Promise<string> {
  const tmp = tempDir("agent-chat-client-");
  const path = join(tmp.dir, "fake.sock");
  const server: Server = createServer(onConnection);
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  cleanups.push(tmp.cleanup, () => {
    // A test that failed midway may leave its client connected: close() would wait for it.
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return path;
}

/**
 * Writes `x` without a newline as fast as the reader takes it, up to `cap` bytes (then hangs
 * up); resolves, once the connection is closed, with the bytes written.
 */
function flood(socket: Socket, cap: number): Promise<number> {
  const chunk = Buffer.alloc(64 * KiB, "x");
  let written = 0;
  return new Promise((resolve) => {
    socket.on("error", () => {});
    socket.on("close", () => resolve(written));
    const pump = () => {
      while (written < cap && !socket.destroyed) {
        written += chunk.length;
        if (!socket.write(chunk)) return void socket.once("drain", pump);
      }
      socket.end();
    };
    pump();
  });
}

/** Calls `onLine` with each line the client sends, parsed. */
function onRequests(socket: Socket, onLine: (request: Record<string, unknown>) => void): void {
  const lines = new LineSplitter({
    maxLineBytes: MiB,
    onLine: (line) => onLine(JSON.parse(line.toString()) as Record<string, unknown>),
    onTooLong: () => socket.destroy(),
  });
  socket.on("data", (d: Buffer) => lines.push(d));
}

/** Answers `info` like a daemon, then floods the connection as the answer to the next request. */
function answerInfoThenFlood(socket: Socket, cap: number): Promise<number> {
  return new Promise((resolve) => {
    onRequests(socket, ({ id, op }) => {
      if (op === "info") socket.write(`${JSON.stringify({ id, ok: true, result: INFO })}\n`);
      else resolve(flood(socket, cap));
    });
  });
}

describe("DaemonClient against a peer that never ends its line", () => {
  it("a socket that floods before answering info is dropped after the hello limit, with TOO_LARGE", async () => {
    let written!: Promise<number>;
    const path = await fakeDaemon((socket) => {
      written = flood(socket, 64 * MiB);
    });
    const err = await DaemonClient.connect(path, { timeoutMs: 5000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentChatError);
    expect(err).toMatchObject({
      code: "TOO_LARGE",
      message: expect.stringMatching(
        new RegExp(
          `^the socket at .*fake\\.sock sent a line longer than ${DEFAULT_MAX_LINE_BYTES} bytes before answering info`,
        ),
      ),
    });
    // The client hung up once it had read the limit: what it took is the limit plus what was
    // in flight (socket buffers and one read), far from the 64 MiB on offer.
    const took = await written;
    expect(took, `the client took ${took} bytes`).toBeLessThan(DEFAULT_MAX_LINE_BYTES + 4 * MiB);
  });

  it("a daemon whose answer passes maxResponseBytes fails that request and every later one", async () => {
    let written!: Promise<number>;
    const path = await fakeDaemon((socket) => {
      written = answerInfoThenFlood(socket, 64 * MiB);
    });
    const limit = 256 * KiB;
    const client = await DaemonClient.connect(path, { timeoutMs: 5000, maxResponseBytes: limit });
    cleanups.push(() => client.close());
    const err = await client.channels().catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "TOO_LARGE",
      message: expect.stringContaining(
        `sent a line longer than ${limit} bytes (the client's maxResponseBytes)`,
      ),
    });
    expect(await client.tasks("c").catch((e: unknown) => e)).toBe(err);
    const took = await written;
    expect(took, `the client took ${took} bytes`).toBeLessThan(limit + 4 * MiB);
  });

  it("an answer longer than the daemon's request line limit is still read (a read holds many messages)", async () => {
    const big = "y".repeat(3 * MiB);
    const path = await fakeDaemon((socket) =>
      onRequests(socket, ({ id, op }) => {
        const result = op === "info" ? INFO : [{ name: big }];
        socket.write(`${JSON.stringify({ id, ok: true, result })}\r\n`);
      }),
    );
    const client = await DaemonClient.connect(path, { timeoutMs: 5000 });
    cleanups.push(() => client.close());
    const channels = await client.channels();
    expect(channels[0]!.name).toHaveLength(big.length);
  });
});

describe("DaemonClient requests", () => {
  it("are typed from the daemon's zod schema: what does not compile is what the daemon refuses", async () => {
    // The fake daemon judges each request with the real daemon's parser.
    const path = await fakeDaemon((socket) =>
      onRequests(socket, (obj) => {
        let answer: Record<string, unknown>;
        try {
          const request = parseRequest(obj);
          answer = { ok: true, result: request.op === "info" ? INFO : null };
        } catch (err) {
          const { code, message } = err as AgentChatError;
          answer = { ok: false, error: { code, message } };
        }
        socket.write(`${JSON.stringify({ id: obj.id, ...answer })}\n`);
      }),
    );
    const client = await DaemonClient.connect(path, { timeoutMs: 5000 });
    cleanups.push(() => client.close());
    // Private; bracket access is TypeScript's way in, with the method's own signature.
    // biome-ignore lint/complexity/useLiteralKeys: `client.call` would not compile (private)
    const call = client["call"].bind(client);
    const refused = { code: "INVALID_ARGUMENT" };
    // `npm run typecheck` (tsconfig.check.json includes test/) fails if one of these compiles.
    // @ts-expect-error: there is no op "pots"
    await expect(call("pots", {})).rejects.toMatchObject(refused);
    // @ts-expect-error: post has no field "chanel"
    await expect(call("post", { chanel: "c", from: "a", body: "b" })).rejects.toMatchObject(
      refused,
    );
    // @ts-expect-error: a post's body is a string
    await expect(call("post", { channel: "c", from: "a", body: 1 })).rejects.toMatchObject(refused);
    // @ts-expect-error: a read needs "as"
    await expect(call("read", { channel: "c" })).rejects.toMatchObject(refused);
    await expect(call("read", { channel: "c", as: "a", all: true })).resolves.toBeNull();
  });
});

describe("DaemonClient store operations", () => {
  /** A fake daemon that answers `info`, and every other request with `answer(request)`. */
  async function recordingDaemon(answer: (request: Record<string, unknown>) => unknown) {
    const seen: Array<Record<string, unknown>> = [];
    const path = await fakeDaemon((socket) =>
      onRequests(socket, (request) => {
        seen.push(request);
        const result = request.op === "info" ? INFO : answer(request);
        socket.write(`${JSON.stringify({ id: request.id, ok: true, result })}\n`);
      }),
    );
    const client = await DaemonClient.connect(path, { timeoutMs: 5000 });
    cleanups.push(() => client.close());
    return { client, seen };
  }

  it("send each method's arguments as its row's fields, and return the answer", async () => {
    const { client, seen } = await recordingDaemon((r) => ({ echo: r.op }));
    await expect(
      client.renewPathLease("dev", "src/**", "alice", { token: 3, ttlMs: 1000 }),
    ).resolves.toEqual({ echo: "lease_renew" });
    await client.addTask("dev", { id: "7", title: "t", from: "bob" });
    await client.peek("dev", 5, { archived: true });
    const { id: _a, ...renew } = seen.find((r) => r.op === "lease_renew")!;
    expect(renew).toEqual({
      op: "lease_renew",
      channel: "dev",
      lease: "src/**",
      as: "alice",
      token: 3,
      ttlMs: 1000,
    });
    // The task's id travels as `taskId`: `id` names the request.
    expect(seen.find((r) => r.op === "add_task")).toMatchObject({ taskId: "7", title: "t" });
    expect(seen.find((r) => r.op === "peek")).toMatchObject({ count: 5, archived: true });
    // What the daemon answers for an operation that returns nothing is not passed on.
    await expect(client.notify("dev", "alice", 4)).resolves.toBeUndefined();
  });

  it("refuse a signed post instead of sending it without its signature", async () => {
    const { client, seen } = await recordingDaemon(() => ({ seq: 1 }));
    const signer = { key: "k", sign: () => "s" };
    await expect(client.post("dev", { from: "alice", body: "hi", signer })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: /signed post/,
    });
    await client.channels();
    expect(seen.map((r) => r.op)).toEqual(["info", "channels"]);
  });
});
