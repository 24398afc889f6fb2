import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentFixture } from "./client.js";

const fixture = agentFixture();
const agent = fixture.agent;

/** The `status: path.…` audit messages of a channel of the folder root: status, sender, lock. */
function audits(channel: string): string[][] {
  const dir = join(fixture.root(), channel);
  return readdirSync(dir)
    .filter((f) => /^\d+-/.test(f))
    .sort()
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .filter((text) => /\nstatus: path\./.test(text))
    .map((text) => [
      /\nstatus: (.*)\n/.exec(text)?.[1] ?? "",
      /\nfrom: (.*)\n/.exec(text)?.[1] ?? "",
      /"lock_id": "([^"]*)"/.exec(text)?.[1] ?? "",
    ]);
}

describe("chat_tasks: renew and path leases", () => {
  it("tools/list stays within 8 tools and 2,500 tokens", async () => {
    const bob = await agent("bob");
    const list = await bob.client.listTools();
    const tokens = Math.ceil(JSON.stringify(list).length / 4);
    console.log(`tools/list: ${list.tools.length} tools, ${tokens} tokens`);
    expect(list.tools.length).toBeLessThanOrEqual(8);
    expect(tokens).toBeLessThanOrEqual(2_500);
  });

  it("claim, renew with the token, lease paths, list them, release them", async () => {
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
    await alice.call("chat_tasks", { action: "add", channel: "review", title: "ship" });
    const claimed = await bob.call("chat_tasks", { action: "claim", channel: "review", task: "1" });
    expect(claimed.text).toContain("token 1");
    const renewed = await bob.call("chat_tasks", { action: "renew", channel: "review", task: "1" });
    expect(renewed.isError).toBe(false);
    expect(renewed.text).toMatch(/^Renewed task 1 in review \(token 1, 30m left\)/);
    const late = await alice.call("chat_tasks", { action: "renew", channel: "review", task: "1" });
    expect(late.text).toMatch(/^Error NOT_HOLDER: /);

    const leased = await bob.call("chat_tasks", {
      action: "lease",
      channel: "review",
      paths: "src/store/**",
      body: "backend core",
    });
    expect(leased.text).toMatch(
      /^Leased src\/store\/\*\* in review \(exclusive, token 1, 30m left\)/,
    );
    // Its chat.py lock record is announced as chat.py announces one, once, by the store.
    expect(audits("review")).toEqual([["path.locked", "bob", "agent-chat-1"]]);
    const clash = await alice.call("chat_tasks", {
      action: "lease",
      channel: "review",
      paths: "src/**",
    });
    expect(clash.text).toMatch(
      /^Error CLAIM_LOST: cannot lease src\/\*\*: bob holds src\/store\/\*\*/,
    );
    const listed = await alice.call("chat_tasks", { action: "leases", channel: "review" });
    expect(listed.text).toContain(
      "src/store/** · bob · exclusive, token 1, 30m left · backend core",
    );
    const notMine = await alice.call("chat_tasks", {
      action: "unlease",
      channel: "review",
      paths: "src/store/**",
    });
    expect(notMine.text).toMatch(/^Error NOT_HOLDER: /);
    const released = await bob.call("chat_tasks", {
      action: "unlease",
      channel: "review",
      paths: "1",
    });
    expect(released.text).toBe("Released src/store/** in review (token 1).");
    expect(audits("review")).toEqual([
      ["path.locked", "bob", "agent-chat-1"],
      ["path.lock.unlocked", "bob", "agent-chat-1"],
    ]);
    const none = await alice.call("chat_tasks", { action: "leases", channel: "review" });
    expect(none.text).toBe("No path leases in review.");
  });
});
