import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// chat.py 0.7 reads every `event.*` message as an adapter event with a strict JSON body: one it
// rejects breaks its `event read` for the whole channel, so ours refuses to post one.
const skip = referenceSkipReason("0.7");

const status = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    schema_version: 1,
    event: "status",
    agent: "bob",
    harness: "cli",
    ts: "2026-12-01T10:00:00+00:00",
    status: "busy",
    ...extra,
  });

describe.skipIf(skip !== undefined)(`events with chat.py 0.7${skip ? ` (${skip})` : ""}`, () => {
  let root: ReturnType<typeof tempDir>;
  const post = (statusField: string, body: string) =>
    runCli(["post", "dev", "--from", "bob", "--status", statusField, "--body", body], {
      root: root.dir,
    });

  beforeEach(async () => {
    root = tempDir();
    expect((await runCli(["init", "dev"], { root: root.dir })).code).toBe(0);
  });
  afterEach(() => root.cleanup());

  it("refuses, with exit 64 and chat.py's error code, an event body chat.py would reject", async () => {
    const cases: Array<[string, string, string]> = [
      ["event.capability", "not json", "EVENT_MALFORMED_BODY"],
      ["event.status", status({ status: "napping" }), "EVENT_INVALID_STATUS"],
      ["event.status", status({ extra: 1 }), "EVENT_UNKNOWN_FIELD"],
      ["event.status", status({ ts: "yesterday" }), "EVENT_INVALID_TIMESTAMP"],
      ["event.capability", status(), "EVENT_INVALID_TYPE"],
      ["event.other", status(), "EVENT_INVALID_TYPE"],
      [
        "event.capability",
        status({ event: "capability", status: undefined, primitives: ["teleport"] }),
        "EVENT_UNKNOWN_PRIMITIVE",
      ],
    ];
    for (const [statusField, body, code] of cases) {
      const r = await post(statusField, body);
      expect(r.code, `${statusField} ${body}`).toBe(64);
      expect(r.stderr).toContain(code);
    }
    const events = runReference("0.7", root.dir, ["event", "read", "dev"]);
    expect(events.status, events.stderr).toBe(0);
    expect(events.stdout).toBe("");
  });

  it("posts a valid event chat.py reads, and reads chat.py's events as messages", async () => {
    expect((await post("event.status", status())).code).toBe(0);
    const capability = status({ event: "capability", status: undefined, primitives: ["tasks"] });
    expect((await post("event.capability", capability)).code).toBe(0);
    expect((await post("", "an ordinary message")).code).toBe(0);
    const theirs = runReference("0.7", root.dir, [
      "event",
      "post",
      "dev",
      "--type",
      "status",
      "--from",
      "alice",
      "--harness",
      "codex",
      "--status",
      "idle",
    ]);
    expect(theirs.status, theirs.stderr).toBe(0);

    const events = runReference("0.7", root.dir, ["event", "read", "dev"]);
    expect(events.status, events.stderr).toBe(0);
    const read = events.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(read.map((e) => [e.agent, e.event])).toEqual([
      ["bob", "status"],
      ["bob", "capability"],
      ["alice", "status"],
    ]);

    const ours = await runCli(["--json", "read", "dev", "--as", "carol"], { root: root.dir });
    const got = JSON.parse(ours.stdout) as { messages: Array<{ status: string; body: string }> };
    const last = got.messages.at(-1) as { status: string; body: string };
    expect(last.status).toBe("event.status");
    expect(JSON.parse(last.body)).toMatchObject({ agent: "alice", status: "idle" });
  });

  it("event post and event read speak chat.py's grammar: each reads the other's, line for line", async () => {
    const cli = (...args: string[]) => runCli(args, { root: root.dir });
    const ours = await cli(
      "event",
      "post",
      "dev",
      "--type",
      "status",
      "--harness",
      "cli",
      "--status",
      "busy",
      "--detail",
      "on T1",
      "--from",
      "bob",
    );
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.stdout).toBe("posted event status -> dev (#1)\n");
    const caps = await cli(
      "event",
      "post",
      "dev",
      "--type",
      "capability",
      "--harness",
      "codex",
      "--primitives",
      "tasks,leases",
      "--as",
      "bob",
    );
    expect(caps.code, caps.stderr).toBe(0);
    const theirs = runReference("0.7", root.dir, [
      "event",
      "post",
      "dev",
      "--from",
      "alice",
      "--type",
      "status",
      "--harness",
      "claude-code",
      "--status",
      "idle",
    ]);
    expect(theirs.status, theirs.stderr).toBe(0);

    const referenceRead = runReference("0.7", root.dir, ["event", "read", "dev"]);
    expect(referenceRead.status, referenceRead.stderr).toBe(0);
    const ourRead = await cli("event", "read", "dev");
    expect(ourRead.stdout).toBe(referenceRead.stdout);
    expect(ourRead.stdout.split("\n")).toHaveLength(4);
    expect((await cli("event", "read", "dev", "--type", "capability")).stdout).toBe(
      runReference("0.7", root.dir, ["event", "read", "dev", "--type", "capability"]).stdout,
    );
    // A status event needs its status, as chat.py's does, refused with chat.py's exit (2).
    const noStatus = ["event", "post", "dev", "--type", "status", "--harness", "cli"];
    expect(runReference("0.7", root.dir, [...noStatus, "--from", "bob"]).status).toBe(2);
    expect((await cli(...noStatus, "--as", "bob")).code).toBe(2);
  });
});
