import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  HAS_PYTHON,
  IS_ROOT,
  otherUserSkipReason,
  requirePresent,
  skipName,
} from "../helpers/tools.js";
import { daemonFixture, envelope, RawClient } from "./harness.js";

const { world, serve } = daemonFixture();

describe("the socket", () => {
  it("lives under $XDG_RUNTIME_DIR/agent-chat, mode 0600 in a 0700 folder, under 108 bytes", async () => {
    const w = world();
    // A folder of ours left too open is closed again before the socket goes in.
    mkdirSync(join(w.env.XDG_RUNTIME_DIR, "agent-chat"), { mode: 0o755 });
    chmodSync(join(w.env.XDG_RUNTIME_DIR, "agent-chat"), 0o755);
    const d = await serve(w);
    expect(d.socket.startsWith(join(w.env.XDG_RUNTIME_DIR, "agent-chat"))).toBe(true);
    expect(Buffer.byteLength(d.socket)).toBeLessThan(108);
    const st = statSync(d.socket);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(statSync(dirname(d.socket)).mode & 0o777).toBe(0o700);
    const info = await w.cli(["info"]);
    expect(info.stdout).toContain(`socket:     ${d.socket}`);
    expect(info.stdout).toMatch(/daemon: +live \(pid \d+/);
  });

  it.skipIf(otherUserSkipReason !== undefined)(
    skipName(
      "another user's process cannot connect (needs root to act as user nobody)",
      otherUserSkipReason,
    ),
    async () => {
      requirePresent("root", IS_ROOT);
      requirePresent("python3", HAS_PYTHON);
      const w = world();
      chmodSync(w.dir, 0o755);
      chmodSync(w.env.XDG_RUNTIME_DIR, 0o755);
      const d = await serve(w);
      const script =
        "import socket, sys\ns = socket.socket(socket.AF_UNIX)\n" +
        "try:\n    s.connect(sys.argv[1]); print('connected')\n" +
        "except PermissionError: print('denied')\n";
      const out = execFileSync("python3", ["-c", script, d.socket], { uid: 65534, gid: 65534 });
      expect(out.toString().trim()).toBe("denied");
    },
  );
});

describe("start and stop", () => {
  it("a second serve on the same root refuses with exit 5 and leaves the first one serving", async () => {
    const w = world();
    const d = await serve(w);
    const second = await w.cli(["serve"]);
    expect(second.code).toBe(5);
    expect(second.stderr).toContain(`a daemon is already listening on ${d.socket}`);
    const c = await RawClient.connect(d.socket);
    expect(await c.request({ id: 1, op: "channels" })).toMatchObject({ ok: true });
    c.close();
  });

  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s stops accepting, finishes what it received, removes the socket and exits 0",
    async (signal) => {
      const w = world();
      const d = await serve(w);
      const c = await RawClient.connect(d.socket);
      await c.request({ id: 0, op: "init", channel: "ch" });
      const sub = await RawClient.connect(d.socket);
      await sub.request({ id: "s", op: "subscribe", channels: ["ch"] });
      const lines = Array.from({ length: 100 }, (_, i) =>
        JSON.stringify({ id: i + 1, op: "post", channel: "ch", from: "a", body: `m${i}` }),
      );
      c.write(`${lines.join("\n")}\n`);
      await c.next(); // the daemon is busy with the batch
      const result = await d.stop(signal);
      expect(result.code).toBe(0);
      expect(existsSync(d.socket)).toBe(false);
      const acked = [1];
      for (;;) {
        const line = await c.next(2000).catch(() => undefined);
        if (!line) break;
        expect(line.ok).toBe(true);
        acked.push(line.id as number);
      }
      // Every request it answered is on disk, and nothing half-written is left behind.
      const onDisk = readdirSync(join(w.root, "ch")).filter((f) => /^\d+-/.test(f));
      expect(onDisk.length).toBeGreaterThanOrEqual(acked.length);
      expect(readdirSync(join(w.root, "ch")).filter((f) => f.startsWith(".tmp-"))).toEqual([]);
      await sub.closed;
    },
  );

  it("after kill -9 the next serve removes the dead socket, starts cleanly and nothing written is lost", async () => {
    const w = world();
    const d = await serve(w);
    const c = await RawClient.connect(d.socket);
    await c.request({ id: 0, op: "init", channel: "ch" });
    for (let i = 1; i <= 20; i++) {
      expect(
        await c.request({ id: i, op: "post", channel: "ch", from: "a", body: `m${i}` }),
      ).toMatchObject({ ok: true, result: { seq: i } });
    }
    await d.stop("SIGKILL");
    expect(statSync(d.socket).isSocket()).toBe(true); // left behind by the killed daemon
    const info = await w.cli(["info"]);
    expect(info.stdout).toContain("stale socket file");
    const again = await serve(w);
    expect(again.socket).toBe(d.socket);
    const c2 = await RawClient.connect(again.socket);
    const peek = await c2.request({ id: 1, op: "peek", channel: "ch", count: 100 });
    expect((peek.result as Array<{ body: string }>).map((m) => m.body)).toEqual(
      Array.from({ length: 20 }, (_, i) => `m${i + 1}`),
    );
    expect(
      await c2.request({ id: 2, op: "post", channel: "ch", from: "a", body: "next" }),
    ).toMatchObject({ result: { seq: 21 } });
    c2.close();
  });

  it("--no-auto-create refuses envelopes for unknown channels", async () => {
    const w = world();
    const d = await serve(w, ["--no-auto-create"]);
    const c = await RawClient.connect(d.socket);
    c.send(envelope({ channel: "unknown" }));
    expect(await c.next()).toMatchObject({
      id: null,
      ok: false,
      error: { code: "CHANNEL_NOT_FOUND" },
    });
    expect(existsSync(join(w.root, "unknown"))).toBe(false);
    c.close();
  });

  it("--max-line sets the line limit", async () => {
    const w = world();
    const d = await serve(w, ["--max-line", "200"]);
    const c = await RawClient.connect(d.socket);
    c.send(envelope({ body: "y".repeat(300) }));
    expect(await c.next()).toMatchObject({ error: { code: "TOO_LARGE", message: /200 bytes/ } });
    await c.closed;
  });
});

describe("a frozen daemon", () => {
  it("info calls a stopped daemon's socket not responding, and serve agrees it is taken (exit 5)", async () => {
    const w = world();
    const d = await serve(w);
    const pid = d.child.pid!;
    process.kill(pid, "SIGSTOP");
    try {
      const human = await w.cli(["info"]);
      expect(human.stdout).toMatch(/daemon: +not responding \(.*kill -CONT/);
      expect(human.stdout).not.toContain("stale");
      const json = JSON.parse((await w.cli(["--json", "info"])).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({ live: false, state: "not-responding", daemon: null });
      const second = await w.cli(["serve"]);
      expect(second.code).toBe(5);
    } finally {
      // The fixture SIGKILLs it after the test; resuming first lets it die like any process.
      process.kill(pid, "SIGCONT");
    }
    expect(existsSync(d.socket)).toBe(true);
  });
});
