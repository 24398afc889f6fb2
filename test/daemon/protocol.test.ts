import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nestsDeeperThan } from "../../src/daemon/protocol.js";
import { type Daemon, envelope, makeWorld, RawClient, startDaemon, type World } from "./harness.js";

let world: World;
let daemon: Daemon;

beforeAll(async () => {
  world = makeWorld();
  daemon = await startDaemon(world);
});

afterAll(async () => {
  const result = await daemon.stop();
  world.cleanup();
  expect(result.code).toBe(0);
});

/** The daemon still answers a normal request on a fresh connection. */
async function stillServing(): Promise<void> {
  const c = await RawClient.connect(daemon.socket);
  expect(await c.request({ id: "alive", op: "channels" })).toMatchObject({ id: "alive", ok: true });
  c.close();
}

function files(channel: string): string[] {
  const dir = join(world.root, channel);
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^\d+-.*\.md$/.test(f)) : [];
}

describe("requests over a raw socket", () => {
  it("answers init, post, read, peek, channels and claim with the request's id", async () => {
    const c = await RawClient.connect(daemon.socket);
    expect(await c.request({ id: 1, op: "init", channel: "raw", members: [] })).toMatchObject({
      id: 1,
      ok: true,
      result: { channel: "raw", members: [] },
    });
    expect(
      await c.request({ id: "p", op: "post", channel: "raw", from: "alice", body: "hello bob" }),
    ).toMatchObject({ id: "p", ok: true, result: { seq: 1, channel: "raw" } });
    const read = await c.request({ id: 3, op: "read", channel: "raw", as: "bob" });
    expect(read).toMatchObject({ id: 3, ok: true, result: { cursor: 1 } });
    expect((read.result as { messages: Array<{ body: string }> }).messages[0]?.body).toBe(
      "hello bob",
    );
    expect(await c.request({ id: 4, op: "peek", channel: "raw", count: 1 })).toMatchObject({
      ok: true,
      result: [{ seq: 1, from: "alice" }],
    });
    const list = await c.request({ id: 5, op: "channels" });
    expect((list.result as Array<{ name: string }>).map((ch) => ch.name)).toContain("raw");
    await c.request({ id: 6, op: "add_task", channel: "raw", from: "alice", title: "do it" });
    expect(
      await c.request({ id: 7, op: "claim", channel: "raw", task: "1", as: "bob" }),
    ).toMatchObject({ id: 7, ok: true, result: { state: "claimed", holder: "bob" } });
    expect(
      await c.request({ id: 8, op: "claim", channel: "raw", task: "1", as: "carol" }),
    ).toMatchObject({ id: 8, ok: false, error: { code: "CLAIM_LOST" } });
    c.close();
  });

  it("a wait parks on the daemon, wakes on another connection's post, and times out", async () => {
    const waiter = await RawClient.connect(daemon.socket);
    const poster = await RawClient.connect(daemon.socket);
    await poster.request({ id: 1, op: "init", channel: "parked" });
    // The folder's poll is off (every 600 s): only the post can wake the wait before its timeout.
    waiter.send({
      id: "w",
      op: "wait",
      channels: ["parked"],
      as: "bob",
      timeoutMs: 10_000,
      intervalMs: 600_000,
    });
    // The same connection keeps serving while its wait is parked.
    expect(await waiter.request({ id: "c", op: "cursor", channel: "parked", as: "bob" })).toEqual({
      id: "c",
      ok: true,
      result: 0,
    });
    await poster.request({ id: 2, op: "post", channel: "parked", from: "alice", body: "wake up" });
    const woke = await waiter.next();
    expect(woke).toMatchObject({ id: "w", ok: true, result: { cursors: { parked: 1 } } });
    expect(
      await waiter.request({ id: "t", op: "wait", channels: ["parked"], as: "bob", timeoutMs: 50 }),
    ).toMatchObject({ id: "t", ok: false, error: { code: "TIMEOUT" } });
    waiter.send({ id: "x", op: "wait", channels: ["parked"], as: "bob" });
    expect(await waiter.request({ id: "k", op: "cancel", target: "x" })).toEqual({
      id: "k",
      ok: true,
      result: { cancelled: true },
    });
    expect(await waiter.next()).toMatchObject({ id: "x", ok: false, error: { code: "ABORTED" } });
    waiter.close();
    poster.close();
  });

  it("subscribe streams posts from other connections and files written straight to the folder", async () => {
    const sub = await RawClient.connect(daemon.socket);
    const poster = await RawClient.connect(daemon.socket);
    await poster.request({ id: 1, op: "init", channel: "fanout" });
    expect(await sub.request({ id: "s", op: "subscribe", channels: ["fanout"] })).toEqual({
      id: "s",
      ok: true,
      result: { channels: ["fanout"], after: { fanout: 0 } },
    });
    poster.send(envelope({ channel: "fanout", body: "via the daemon" }));
    expect(await sub.next()).toMatchObject({
      id: "s",
      event: "message",
      message: { seq: 1, body: "via the daemon" },
    });
    // What a chat.py or an editor would do: a message file appears in the folder.
    writeFileSync(
      join(world.root, "fanout", "0002-editor-by-hand.md"),
      "---\nseq: 2\nfrom: editor\nto: all\nchannel: fanout\nts: 2025-01-01T00:00:00+00:00\n" +
        "status: discussion\ntitle: by hand\n---\nwritten by hand\n",
    );
    expect(await sub.next()).toMatchObject({
      event: "message",
      message: { seq: 2, from: "editor", body: "written by hand" },
    });
    expect(await sub.request({ id: "c", op: "cancel", target: "s" })).toMatchObject({ ok: true });
    expect(await sub.next()).toEqual({ id: "s", event: "end" });
    sub.close();
    poster.close();
  });
});

describe("b00t envelopes", () => {
  it("an unmodified b00t-style client (python3, one JSON line) creates a message that agent-chat read shows", async () => {
    const script =
      "import json, socket, sys\n" +
      "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n" +
      "s.connect(sys.argv[1])\n" +
      "env = {'channel': 'mission.delta', 'sender': 'frontend.agent', 'body': 'handoff complete',\n" +
      "       'metadata': {'ticket': 'OPS-123', 'to': 'ops'}, 'timestamp': '2025-03-04T05:30:00.123456Z'}\n" +
      "s.sendall((json.dumps(env) + '\\n').encode())\n" +
      "s.close()\n";
    execFileSync("python3", ["-c", script, daemon.socket]);
    // The b00t client gets no answer, so a wait is what tells us the post has landed.
    const waited = await world.cli(["wait", "mission.delta", "--as", "ops", "--timeout", "10"]);
    expect(waited.code).toBe(0);
    const shown = await world.cli(["read", "mission.delta", "--as", "ops", "--all"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("from: frontend.agent");
    expect(shown.stdout).toContain("to: ops");
    expect(shown.stdout).toContain("title: handoff complete");
    expect(shown.stdout).toContain('metadata: {"ticket":"OPS-123"}');
    // It is an ordinary message file, readable without the daemon.
    const direct = await world.cli(["read", "mission.delta", "--as", "ops", "--all"], {
      AGENT_CHAT_DAEMON: "off",
    });
    expect(direct.stdout).toContain("handoff complete");
  });

  it("an envelope's unknown top-level fields are ignored (as documented), while a request's are refused", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.send(
      envelope({ channel: "extra.fields", body: "with a thread", thread: "t-1", priority: 2 }),
    );
    expect(await c.request({ id: 1, op: "peek", channel: "extra.fields" })).toMatchObject({
      id: 1,
      ok: true,
      result: [{ body: "with a thread" }],
    });
    expect(
      await c.request({ id: 2, op: "peek", channel: "extra.fields", thread: "t" }),
    ).toMatchObject({
      id: 2,
      ok: false,
      error: { code: "INVALID_ARGUMENT", message: 'peek: unknown field "thread"' },
    });
    c.close();
  });

  it("a client that sends its lines and shuts its side (nc -N) gets every answer, in line order", async () => {
    const script =
      "import socket, sys\n" +
      "s = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n" +
      "s.sendall(sys.stdin.buffer.read())\ns.shutdown(socket.SHUT_WR)\n" +
      "out = b''\nwhile True:\n    d = s.recv(65536)\n    if not d: break\n    out += d\n" +
      "sys.stdout.write(out.decode())\n";
    const input = [
      JSON.stringify({ id: 1, op: "init", channel: "halfclose" }),
      JSON.stringify(envelope({ channel: "halfclose", body: "first" })),
      JSON.stringify({ chanel: "x" }),
      "{oops",
      JSON.stringify({ id: 2, op: "peek", channel: "halfclose" }),
    ].join("\n");
    const out = execFileSync("python3", ["-c", script, daemon.socket], { input: `${input}\n` });
    const answers = out
      .toString()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(answers).toMatchObject([
      { id: 1, ok: true },
      { id: null, ok: false, error: { message: 'envelope is missing "channel"' } },
      { id: null, ok: false, error: { code: "PROTOCOL_ERROR" } },
      { id: 2, ok: true, result: [{ seq: 1, body: "first" }] },
    ]);
  });

  it("many lines on one connection land in order; no response for an accepted envelope", async () => {
    const c = await RawClient.connect(daemon.socket);
    const lines = Array.from(
      { length: 30 },
      (_, i) => `${JSON.stringify(envelope({ channel: "ordered", body: `n${i}` }))}\n`,
    );
    c.write(`${lines.join("")}\n\n`);
    expect(
      await c.request({ id: "after", op: "peek", channel: "ordered", count: 30 }),
    ).toMatchObject({ id: "after", ok: true });
    const peek = await c.request({ id: 2, op: "peek", channel: "ordered", count: 30 });
    const bodies = (peek.result as Array<{ seq: number; body: string }>).map((m) => [
      m.seq,
      m.body,
    ]);
    expect(bodies).toEqual(Array.from({ length: 30 }, (_, i) => [i + 1, `n${i}`]));
    c.close();
  });

  it("8 clients at once: every envelope written, numbers gapless, each client in its own order", async () => {
    const clients = await Promise.all(
      Array.from({ length: 8 }, () => RawClient.connect(daemon.socket)),
    );
    await Promise.all(
      clients.map(async (c, i) => {
        const batch = Array.from(
          { length: 12 },
          (_, j) =>
            `${JSON.stringify(envelope({ channel: "crowd", sender: `agent${i}`, body: `${i}/${j}` }))}\n`,
        );
        c.write(batch.join(""));
        // A request after the envelopes answers only once they are written (one queue per connection).
        expect(
          await c.request({ id: "sync", op: "cursor", channel: "crowd", as: "x" }),
        ).toMatchObject({
          ok: true,
        });
        c.close();
      }),
    );
    const names = files("crowd");
    expect(names.map((n) => Number(n.slice(0, 4))).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 96 }, (_, k) => k + 1),
    );
    // Each client's envelopes keep its own order.
    const byAgent = new Map<string, number[]>();
    for (const n of names.sort()) {
      const text = readFileSync(join(world.root, "crowd", n), "utf8");
      const body = text.trimEnd().split("\n").pop()!;
      const [agent, j] = body.split("/");
      byAgent.set(agent!, [...(byAgent.get(agent!) ?? []), Number(j)]);
    }
    for (const seen of byAgent.values())
      expect(seen).toEqual(Array.from({ length: 12 }, (_, k) => k));
  });
});

describe("bad input never takes the daemon down", () => {
  it("malformed JSON gets an error and the connection stays open", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.write('{"channel": "x", oops\n');
    expect(await c.next()).toMatchObject({
      id: null,
      ok: false,
      error: { code: "PROTOCOL_ERROR", message: expect.stringMatching(/malformed JSON/) },
    });
    c.write("[1,2,3]\n");
    expect(await c.next()).toMatchObject({ ok: false, error: { code: "PROTOCOL_ERROR" } });
    expect(await c.request({ id: 1, op: "channels" })).toMatchObject({ id: 1, ok: true });
    c.close();
  });

  it("a missing field or a wrong type is named, for envelopes and requests alike", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.send({ channel: "x", sender: "a", timestamp: "2025-03-04T05:30:00Z" });
    expect(await c.next()).toMatchObject({
      id: null,
      ok: false,
      error: { code: "INVALID_ARGUMENT", message: 'envelope is missing "body"' },
    });
    c.send(envelope({ body: 42 }));
    expect(await c.next()).toMatchObject({
      error: { code: "INVALID_ARGUMENT", message: 'envelope "body" must be a string' },
    });
    c.send(envelope({ timestamp: "yesterday" }));
    expect(await c.next()).toMatchObject({ error: { message: /RFC 3339/ } });
    expect(await c.request({ id: 9, op: "post", channel: "raw", from: "a" })).toMatchObject({
      id: 9,
      ok: false,
      error: { code: "INVALID_ARGUMENT", message: 'post: "body" is missing' },
    });
    expect(
      await c.request({ id: 10, op: "read", channel: "raw", as: "bob", all: "yes" }),
    ).toMatchObject({ id: 10, error: { code: "INVALID_ARGUMENT", message: /"all"/ } });
    expect(await c.request({ id: 12, op: "fence", channel: "raw", task: "1" })).toMatchObject({
      id: 12,
      error: { code: "INVALID_ARGUMENT", message: 'fence: "token" is missing' },
    });
    expect(
      await c.request({ id: 13, op: "done", channel: "raw", task: "1", as: "bob", token: "1" }),
    ).toMatchObject({ id: 13, error: { code: "INVALID_ARGUMENT", message: /"token"/ } });
    expect(
      await c.request({ id: 14, op: "claim", channel: "raw", task: "1", as: "bob", ttlMs: -5 }),
    ).toMatchObject({ id: 14, error: { code: "INVALID_ARGUMENT", message: /"ttlMs"/ } });
    expect(await c.request({ id: 11, op: "frobnicate" })).toMatchObject({
      id: 11,
      error: { message: /unknown op/ },
    });
    expect(await c.request({ op: "channels" })).toMatchObject({
      id: null,
      error: { message: /"id" is missing/ },
    });
    expect(await c.request({ id: 12, op: "channels" })).toMatchObject({ id: 12, ok: true });
    c.close();
  });

  it("a non-UTF-8 line is refused and the connection stays open", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.write(
      Buffer.concat([
        Buffer.from('{"channel":"x","body":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}\n'),
      ]),
    );
    expect(await c.next()).toMatchObject({
      id: null,
      ok: false,
      error: { code: "PROTOCOL_ERROR", message: "line is not valid UTF-8" },
    });
    expect(await c.request({ id: 1, op: "channels" })).toMatchObject({ ok: true });
    c.close();
  });

  it("a line over the limit gets TOO_LARGE and the connection is closed", async () => {
    const c = await RawClient.connect(daemon.socket);
    const huge = JSON.stringify(envelope({ channel: "big", body: "x".repeat(1024 * 1024 + 10) }));
    c.write(huge); // no newline: refused as soon as the limit is passed
    expect(await c.next()).toMatchObject({
      id: null,
      ok: false,
      error: { code: "TOO_LARGE", message: /longer than 1048576 bytes/ },
    });
    await c.closed;
    expect(files("big")).toEqual([]);
    await stillServing();
  });

  it("an envelope naming a channel that would escape the root writes nothing outside it", async () => {
    const c = await RawClient.connect(daemon.socket);
    // b00t's free-form names map to their slug, a plain name inside the root (docs/daemon.md).
    const mapped = {
      "../escape": "escape",
      "/tmp/abs": "tmp-abs",
      "a/b": "a-b",
      ".hidden": "hidden",
    };
    for (const [channel, inside] of Object.entries({ ...mapped, "x\u0000y": "x-y" })) {
      c.send(envelope({ channel }));
      expect(await c.request({ id: 1, op: "peek", channel: inside })).toMatchObject({
        ok: true,
        result: [{ channel: inside, extra: { b00t_channel: expect.any(String) } }],
      });
    }
    c.send(envelope({ channel: ".." }));
    expect(await c.next()).toMatchObject({ id: null, ok: false, error: { code: "INVALID_NAME" } });
    expect(existsSync(join(world.root, "..", "escape"))).toBe(false);
    expect(existsSync(join(world.root, "a"))).toBe(false);
    expect(existsSync(join(world.root, ".hidden"))).toBe(false);
    c.close();
  });

  it("a deeply nested JSON bomb is refused, not parsed", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.write(`${"[".repeat(500_000)}${"]".repeat(500_000)}\n`);
    expect(await c.next()).toMatchObject({
      error: { code: "PROTOCOL_ERROR", message: /nests deeper/ },
    });
    c.send(envelope({ metadata: JSON.parse(`${'{"a":'.repeat(40)}1${"}".repeat(40)}`) }));
    expect(await c.next()).toMatchObject({ error: { code: "PROTOCOL_ERROR" } });
    expect(await c.request({ id: 1, op: "channels" })).toMatchObject({ ok: true });
    c.close();
  });

  it("a client that disconnects mid-line posts nothing and harms no one", async () => {
    const c = await RawClient.connect(daemon.socket);
    c.write(JSON.stringify(envelope({ channel: "halfway" })).slice(0, 40));
    c.close();
    await c.closed;
    await stillServing();
    expect(existsSync(join(world.root, "halfway"))).toBe(false);
  });

  it("an idle client that never sends does not hold up anyone else", async () => {
    const idle = await RawClient.connect(daemon.socket);
    await stillServing();
    const c = await RawClient.connect(daemon.socket);
    const info = await c.request({ id: 1, op: "info" });
    expect((info.result as { connections: number }).connections).toBeGreaterThanOrEqual(2);
    c.close();
    idle.close();
  });
});

describe("the CLI uses the daemon when one runs", () => {
  it("wait wakes through the daemon (its connection is the daemon's), with the folder's poll off", async () => {
    const c = await RawClient.connect(daemon.socket);
    await c.request({ id: 1, op: "init", channel: "cliwait" });
    const { startCli, collect } = await import("../helpers/cli.js");
    const child = startCli(
      ["wait", "cliwait", "--as", "bob", "--timeout", "20", "--interval", "600"],
      {
        env: world.env,
      },
    );
    const done = collect(child);
    // Until the CLI's wait is parked on the daemon, the daemon sees only our connection.
    let asked = 0;
    await expect
      .poll(
        async () => {
          const info = await c.request({ id: `i${++asked}`, op: "info" });
          return (info.result as { connections: number }).connections;
        },
        { timeout: 10_000, interval: 20 },
      )
      .toBeGreaterThanOrEqual(2);
    await c.request({ id: 2, op: "post", channel: "cliwait", from: "alice", body: "ping bob" });
    const result = await done;
    // Exit 0 (not the timeout's) with the folder's poll at 600 s: the daemon woke it.
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("ping bob");
    c.close();
  });

  it("info shows the live daemon and its socket", async () => {
    const r = await world.cli(["--json", "info"]);
    const info = JSON.parse(r.stdout);
    expect(info).toMatchObject({
      socket: daemon.socket,
      live: true,
      daemon: { pid: daemon.child.pid },
    });
    expect(info.transports.map((t: { name: string }) => t.name)).toEqual(["local", "nats"]);
  });

  it("send posts an envelope through the daemon, with b00t's defaults", async () => {
    const r = await world.cli([
      "--json",
      "send",
      "--message",
      "artifact staged",
      "--metadata",
      '{"env":"prod"}',
    ]);
    expect(r.code).toBe(0);
    const sent = JSON.parse(r.stdout);
    const user = (await import("node:os")).userInfo().username;
    expect(sent).toMatchObject({ transport: "local", channel: `account.${user}`, seq: 1 });
    const text = readFileSync(join(world.root, sent.channel, sent.file), "utf8");
    expect(text).toContain(`from: ${user}`);
    expect(text).toContain('metadata: {"env":"prod"}');
    const bad = await world.cli(["send", "--message", "x", "--metadata", "{nope"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toBe("agent-chat: metadata must be valid JSON\n");
  });
});

describe("the nesting check before parsing", () => {
  it("counts brackets outside strings only, escaped quotes included", () => {
    expect(nestsDeeperThan('{"a":[[1]]}', 3)).toBe(false);
    expect(nestsDeeperThan('{"a":[[[1]]]}', 3)).toBe(true);
    expect(nestsDeeperThan('{"a":"[[[[[[{{{{"}', 1)).toBe(false);
    expect(nestsDeeperThan('{"a":"\\"[[[[","b":1}', 1)).toBe(false);
    expect(nestsDeeperThan('{"a":"\\\\","b":[[[1]]]}', 3)).toBe(true);
    // An unclosed string hides what follows it: JSON.parse refuses the line anyway.
    expect(nestsDeeperThan('{"a":"[[[[[[', 1)).toBe(false);
  });
});
