// The daemon never drops an envelope silently: b00t's free-form names are mapped by one
// documented rule, every refused line is logged with its reason and counted in `info`, and each
// envelope posted is logged (channel, sender, body size) at a level the user can turn off.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { collect, startCli, untilStdout } from "../helpers/cli.js";
import { daemonFixture, envelope, RawClient, type World } from "./harness.js";

const { world, serve } = daemonFixture();

/** serve's stderr, one JSON object a line (the harness runs `serve --json`). */
function logLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function infoJson(w: World): Promise<{ daemon: { envelopes: unknown } }> {
  const r = await w.cli(["--json", "info"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe("b00t names", () => {
  it('maps "Mission Delta" to a channel and keeps the names as sent', async () => {
    const w = world();
    const d = await serve(w);
    const c = await RawClient.connect(d.socket);
    c.send(envelope({ channel: "Mission Delta", sender: "Frontend Agent" }));
    const peek = await c.request({ id: 1, op: "peek", channel: "mission-delta" });
    expect(peek).toMatchObject({
      ok: true,
      result: [{ seq: 1, from: "frontend-agent", body: "handoff complete" }],
    });
    c.close();
    const file = (peek.result as Array<{ file: string }>)[0]!.file;
    const text = readFileSync(join(w.root, "mission-delta", file), "utf8");
    expect(text).toContain("\ndisplay_name: Frontend Agent\n");
    expect(text).toContain("\nb00t_channel: Mission Delta\n");
    // A valid name is used as it is: dots and capitals included.
    const c2 = await RawClient.connect(d.socket);
    c2.send(envelope({ channel: "Mission.Delta" }));
    expect(await c2.request({ id: 2, op: "peek", channel: "Mission.Delta" })).toMatchObject({
      result: [{ seq: 1 }],
    });
    c2.close();
    const { stderr } = await d.stop();
    expect(logLines(stderr)).toMatchObject([
      {
        event: "envelope",
        seq: 1,
        channel: "mission-delta",
        sentChannel: "Mission Delta",
        from: "frontend-agent",
        sender: "Frontend Agent",
        bytes: 16,
      },
      { event: "envelope", seq: 1, channel: "Mission.Delta", from: "frontend.agent" },
    ]);
  });
});

describe("refused lines", () => {
  it("are each logged with the reason and counted in info", async () => {
    const w = world();
    const d = await serve(w, ["--no-auto-create"]);
    const c = await RawClient.connect(d.socket);
    c.send(envelope({ channel: "!!!" }));
    c.send({ channel: "ops", sender: "ci", body: "no timestamp" });
    c.send(envelope({ channel: "nowhere" }));
    c.write("{oops\n");
    const answers = [await c.next(), await c.next(), await c.next(), await c.next()];
    expect(answers.map((a) => (a.error as { code: string }).code)).toEqual([
      "INVALID_NAME",
      "INVALID_ARGUMENT",
      "CHANNEL_NOT_FOUND",
      "PROTOCOL_ERROR",
    ]);
    c.close();
    const info = await infoJson(w);
    expect(info.daemon.envelopes).toMatchObject({
      posted: 0,
      refused: 4,
      lastRefusal: { code: "PROTOCOL_ERROR", message: expect.stringContaining("malformed JSON") },
    });
    const text = await w.cli(["info"]);
    expect(text.stdout).toMatch(/\nenvelopes: {2}0 posted, 4 refused \(last at .*PROTOCOL_ERROR/);
    const { stderr } = await d.stop();
    expect(logLines(stderr)).toMatchObject([
      { event: "refused", code: "INVALID_NAME", channel: "!!!", sender: "frontend.agent" },
      { event: "refused", code: "INVALID_ARGUMENT", message: 'envelope is missing "timestamp"' },
      { event: "refused", code: "CHANNEL_NOT_FOUND", channel: "nowhere" },
      { event: "refused", code: "PROTOCOL_ERROR" },
    ]);
  });
});

describe("the envelope log", () => {
  it("says each envelope in words, and --log warn (or AGENT_CHAT_LOG_LEVEL) keeps only refusals", async () => {
    const w = world();
    const runs = [
      { args: [], env: {}, logsPosts: true },
      { args: ["--log", "warn"], env: {}, logsPosts: false },
      { args: [], env: { AGENT_CHAT_LOG_LEVEL: "warn" }, logsPosts: false },
    ];
    for (const run of runs) {
      const child = startCli(["serve", ...run.args], { env: { ...w.env, ...run.env } });
      await untilStdout(child, (out) => out.includes("listening on"));
      const info = JSON.parse((await w.cli(["--json", "info"])).stdout) as { socket: string };
      const c = await RawClient.connect(info.socket);
      c.send(envelope({ channel: "Mission Delta", sender: "Frontend Agent" }));
      c.send(envelope({ timestamp: "yesterday" }));
      expect(await c.next()).toMatchObject({ ok: false, error: { code: "INVALID_ARGUMENT" } });
      c.close();
      child.kill("SIGTERM");
      const { stderr } = await collect(child);
      const posted = stderr.match(
        /^agent-chat: \S+ envelope #\d+ to mission-delta \(sent as "Mission Delta"\) from frontend-agent \(Frontend Agent\), 16 bytes$/m,
      );
      expect(posted !== null, stderr).toBe(run.logsPosts);
      expect(stderr).toMatch(
        /^agent-chat: \S+ refused a line \(channel "mission.delta", sender "frontend.agent"\): INVALID_ARGUMENT: envelope "timestamp" must be RFC 3339$/m,
      );
    }
    const bad = await w.cli(["serve", "--log", "chatty"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("--log must be one of info, warn");
  });
});
