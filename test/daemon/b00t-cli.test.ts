import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
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
  it("send fails within a second with a clear message; the CLI falls back to the folder", async () => {
    const w = world();
    const t0 = Date.now();
    const r = await w.cli(["send", "--channel", "ops", "--message", "hello"]);
    expect(Date.now() - t0).toBeLessThan(1000 + 1500); // one second of patience plus process start
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
