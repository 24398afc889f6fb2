import { existsSync, mkdirSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { daemonFixture, envelope, RawClient } from "./harness.js";

const { world, serve } = daemonFixture();

describe("--b00t", () => {
  it("also listens at ~/.b00t/chat.channel.socket and never steals it from a live listener", async () => {
    const w = world();
    const d = await serve(w, ["--b00t"]);
    const b00t = join(w.env.HOME, ".b00t", "chat.channel.socket");
    expect(d.sockets).toEqual([d.socket, b00t]);
    expect(statSync(b00t).mode & 0o777).toBe(0o600);
    const c = await RawClient.connect(b00t);
    c.send(envelope({ channel: "via.b00t" }));
    expect(await c.request({ id: 1, op: "peek", channel: "via.b00t" })).toMatchObject({
      result: [{ from: "frontend.agent", body: "handoff complete" }],
    });
    c.close();
    // Another root's daemon wanting the same b00t socket is refused, and the socket stays ours.
    const other = await w.cli(["--root", join(w.dir, "other-root"), "serve", "--b00t"]);
    expect(other.code).toBe(5);
    expect(other.stderr).toContain(b00t);
    const c2 = await RawClient.connect(b00t);
    expect(await c2.request({ id: 1, op: "info" })).toMatchObject({ result: { pid: d.child.pid } });
    c2.close();
    const stopped = await d.stop();
    expect(stopped.code).toBe(0);
    expect(existsSync(b00t)).toBe(false);
  });
});

describe("send and info without a daemon", () => {
  it("send fails after a second's patience with a clear message; the CLI falls back to the folder", async () => {
    const w = world();
    const t0 = Date.now();
    const r = await w.cli(["send", "--channel", "ops", "--message", "hello"]);
    // One second of patience plus the process's start: 10 s is so generous that only a send
    // that hangs or retries on a missing daemon fails it, not a loaded machine.
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /no agent-chat daemon is listening on .*; start one with: agent-chat serve/,
    );
    const info = await w.cli(["info"]);
    expect(info.stdout).toContain("no daemon (start one with: agent-chat serve)");
    // Other commands work on the folder directly.
    expect((await w.cli(["init", "ops"])).code).toBe(0);
    expect((await w.cli(["post", "ops", "--from", "a", "--body", "direct"])).stdout).toMatch(
      /posted #1/,
    );
  });
});

/** A stand-in for b00t's own listener: records every byte each connection sends. */
async function foreignListener(path: string, behaviour: "silent" | "closes") {
  mkdirSync(dirname(path), { recursive: true });
  const received: string[] = [];
  const server = createServer((socket) => {
    const i = received.push("") - 1;
    socket.setEncoding("utf8");
    socket.on("error", () => {});
    socket.on("data", (d: string) => {
      received[i] += d;
      if (behaviour === "closes" && received[i]!.includes("\n")) socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("send to a socket that is not an agent-chat daemon", () => {
  it.each(["silent", "closes"] as const)(
    "writes exactly one bare b00t envelope line to a listener that %s",
    async (behaviour) => {
      const w = world();
      const path = join(w.env.HOME, ".b00t", "chat.channel.socket");
      const listener = await foreignListener(path, behaviour);
      try {
        const r = await w.cli([
          "--json",
          "send",
          "--socket",
          path,
          "--channel",
          "mission.delta",
          "--sender",
          "ci",
          "--message",
          "artifact staged",
          "--metadata",
          '{"ticket":"OPS-123"}',
        ]);
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ socket: path, acknowledged: false });
        await expect
          .poll(() => listener.received.join(""), { timeout: 5_000, interval: 20 })
          .toContain("\n");
        expect(listener.received).toHaveLength(1);
        const lines = listener.received[0]!.split("\n");
        expect(lines).toHaveLength(2);
        expect(lines[1]).toBe("");
        const sent = JSON.parse(lines[0]!) as Record<string, unknown>;
        expect(Object.keys(sent)).toEqual(["channel", "sender", "body", "metadata", "timestamp"]);
        expect(sent).toMatchObject({
          channel: "mission.delta",
          sender: "ci",
          body: "artifact staged",
          metadata: { ticket: "OPS-123" },
        });
      } finally {
        await listener.close();
      }
    },
  );

  it("goes through the daemon's request path (with an acknowledgement) on a socket that is ours", async () => {
    const w = world();
    const d = await serve(w, ["--b00t"]);
    for (const socket of d.sockets) {
      const r = await w.cli(["send", "--socket", socket, "--channel", "ops", "--message", "hi"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^sent #\d+ to ops \(/);
    }
  });
});
