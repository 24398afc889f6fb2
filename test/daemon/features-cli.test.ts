import { describe, expect, it } from "vitest";
import { stderrContains } from "../governance/helpers.js";
import { collect, startCli } from "../helpers/cli.js";
import { daemonFixture } from "./harness.js";

const { world, serve } = daemonFixture();

// With `serve` up every command goes through the daemon (docs/daemon.md): governance and
// `event read` read whole channels there, and `govern` changes one (issue 44, item 1).
describe("governance and events with a daemon running", () => {
  it("govern, request, pending, approve and event read work through the daemon", async () => {
    const w = world();
    expect((await w.cli(["init", "review"])).code).toBe(0);
    await serve(w);
    const governed = await w.cli([
      "govern",
      "review",
      "--as",
      "alice",
      "--maintainer",
      "alice",
      "--band",
      "merge=approval",
    ]);
    expect(governed.stderr).toBe("");
    expect(governed.code).toBe(0);

    const request = startCli(
      ["request", "review", "--as", "bob", "--action", "merge", "--title", "Ship it"],
      { env: w.env, timeoutMs: 60_000 },
    );
    const done = collect(request);
    await stderrContains(request, "agent-chat: posted #1");
    const pending = await w.cli(["pending", "review"]);
    expect(pending.stderr).toBe("");
    expect(pending.stdout).toMatch(/^#1\tmerge\tapproval\tbob\tShip it\n$/);

    const approved = await w.cli(["approve", "review", "1", "--as", "alice"]);
    expect(approved.stderr).toBe("");
    expect(approved.stdout).toBe("approved #1 (merge: Ship it); posted #2\n");
    expect((await done).code).toBe(0);

    const event = ["event", "post", "review", "--type", "status", "--harness", "cli"];
    expect((await w.cli([...event, "--status", "busy", "--as", "bob"])).code).toBe(0);
    const events = await w.cli(["event", "read", "review"]);
    expect(events.stderr).toBe("");
    expect(events.stdout).toContain('"status": "busy"');
  }, 60_000);
});
