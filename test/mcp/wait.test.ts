import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { waitNotParked, waitParked } from "../helpers/parked.js";
import { agentFixture, footerJson } from "./client.js";

const fixture = agentFixture();
const agent = fixture.agent;

/** Runs `fn` on a store of the fixture's root, as another process would look at it. */
async function onRoot(fn: (store: FsStore) => Promise<void>): Promise<void> {
  const store = new FsStore(fixture.root());
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

describe("agent-chat mcp: wait, claim, cancel, lifecycle", () => {
  it("wait returns as soon as the other identity posts", async () => {
    // bob's sleep-poll far beyond the wait's 5 s: only the file watch can wake him in time.
    const [alice, bob] = await Promise.all([
      agent("alice"),
      agent("bob", [], { AGENT_CHAT_WAIT_POLL_MS: "60000" }),
    ]);
    const waiting = bob.call("chat_wait", { channels: ["review"], timeout_seconds: 5 });
    // Once the wait is parked in bob's server, so that the post must wake it.
    await onRoot((store) => waitParked(store, "review", "bob"));
    await alice.call("chat_post", { channel: "review", body: "ping from alice" });
    const woke = await waiting;
    expect(woke.isError).toBe(false);
    expect(woke.text).toContain("ping from alice");
    expect(footerJson(woke.footer).chat.msgs).toBe(0);
  });

  it("a wait that times out says so without being an error", async () => {
    const bob = await agent("bob");
    const reply = await bob.call("chat_wait", { timeout_seconds: 1 });
    expect(reply.isError).toBe(false);
    expect(reply.text).toMatch(/^TIMEOUT: no message for you in review within 1 s/);
  });

  it("exactly one of two servers wins a claim race", async () => {
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
    const added = await alice.call("chat_tasks", {
      action: "add",
      channel: "review",
      title: "Review the schema",
    });
    expect(added.text).toBe("Added task 1 in review: Review the schema");
    const replies = await Promise.all([
      alice.call("chat_tasks", { action: "claim", channel: "review", task: "1" }),
      bob.call("chat_tasks", { action: "claim", channel: "review", task: "task-1" }),
    ]);
    const winners = replies.filter((r) => !r.isError);
    const losers = replies.filter((r) => r.isError);
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    expect(losers[0]!.text).toMatch(/^Error CLAIM_LOST: /);
    expect(losers[0]!.text).toContain("What to do:");
    expect(losers[0]!.footer).toMatch(/^<agent-chat>/);
    const winner = replies[0]!.isError ? "bob" : "alice";
    expect(
      readdirSync(join(fixture.root(), "review")).filter((f) => f.startsWith("task-")),
    ).toEqual([`task-1.CLAIMED-${winner}.md`]);
    const listed = await bob.call("chat_tasks", { action: "list", channel: "review" });
    expect(listed.text).toBe(`task 1 · claimed by ${winner} · Review the schema`);
    expect(winners[0]!.text).toMatch(/^Claimed task 1 in review \(token 1\)/);

    // Only the winner finishes it; the other is told why and what to do.
    const [winnerAgent, loserAgent] = winner === "alice" ? [alice, bob] : [bob, alice];
    const refused = await loserAgent.call("chat_tasks", {
      action: "done",
      channel: "review",
      task: "1",
    });
    expect(refused.text).toMatch(/^Error NOT_HOLDER: .*claimed by/);
    const done = await winnerAgent.call("chat_tasks", {
      action: "done",
      channel: "review",
      task: "1",
      body: "schema reviewed",
    });
    expect(done.text).toBe("Done: task 1 in review.");
    const after = await bob.call("chat_tasks", { action: "list", channel: "review" });
    expect(after.text).toBe(`task 1 · done by ${winner} · Review the schema`);
  });

  it("cancelling a pending wait leaves the server usable and consumes nothing", async () => {
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
    const abort = new AbortController();
    const waiting = bob.call(
      "chat_wait",
      { channels: ["review"], timeout_seconds: 30 },
      abort.signal,
    );
    // The cancel comes while the wait is parked in the server.
    await onRoot((store) => waitParked(store, "review", "bob"));
    abort.abort("user pressed Esc");
    await expect(waiting).rejects.toThrow();
    // The server ends the wait: a wait still running would read the post below and move bob's
    // cursor.
    await onRoot((store) => waitNotParked(store, "review", "bob"));

    const listed = await bob.call("chat_channels");
    expect(listed.isError).toBe(false);
    await alice.call("chat_post", { channel: "review", body: "after the cancel" });
    expect(existsSync(join(fixture.root(), "review", ".cursors", "bob.txt"))).toBe(false);
    const read = await bob.call("chat_read", { channel: "review" });
    expect(read.text).toContain("after the cancel");
    const again = await bob.call("chat_wait", { channels: ["review"], timeout_seconds: 1 });
    expect(again.text).toMatch(/^TIMEOUT/);
    expect(bob.stderr()).toBe("");
  });

  it("exits when its client closes stdin, also without an identity, and refuses a bad footer", async () => {
    // startCli closes the child's stdin at once, as a client that goes away does.
    const result = await collect(
      startCli(["mcp", "--as", "bob"], { root: fixture.root(), timeoutMs: 10_000 }),
    );
    expect(result).toMatchObject({ code: 0, stdout: "" });

    // It starts (its tools say how to set the identity: first-try.test.ts) and ends with stdin.
    const nameless = await runCli(["mcp"], { root: fixture.root() });
    expect(nameless).toMatchObject({ code: 0, stdout: "", stderr: "" });
    const badFooter = await runCli(["mcp", "--as", "bob", "--footer", "xml"], {
      root: fixture.root(),
    });
    expect(badFooter.code).toBe(64);
  });
});
