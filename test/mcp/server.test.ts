import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Agent, agentFixture, footerJson, initChannels } from "./client.js";

const fixture = agentFixture();
const agent = fixture.agent;

describe("agent-chat mcp", () => {
  it("refuses an argument a tool does not take, naming those it does, and does nothing (issue 44, item 4)", async () => {
    const bob = await agent("bob");
    const post = await bob.call("chat_post", {
      channel: "review",
      body: "for bob only",
      recipient: "alice",
      reply: 3,
    });
    expect(post.isError).toBe(true);
    expect(post.text).toContain(
      'chat_post takes no argument "recipient", "reply" ("recipient" is to here, "reply" is reply_to here); it takes: ',
    );
    expect(post.text).toMatch(/it takes: .*\bto\b/);
    const wait = await bob.call("chat_wait", { channel: "review", timeout: 1 });
    expect(wait.isError).toBe(true);
    expect(wait.text).toContain(
      'chat_wait takes no argument "channel", "timeout" ("channel" is channels here, "timeout" is timeout_seconds here)',
    );
    const alice = await agent("alice");
    expect((await alice.call("chat_read", { channel: "review" })).text).toBe("No new messages.");
  });

  it("initializes and lists at most 8 chat_ tools, each with a described input schema", async () => {
    const bob = await agent("bob");
    expect(bob.client.getServerVersion()?.name).toBe("agent-chat");
    expect(bob.client.getInstructions()).toContain('"bob"');
    const { tools } = await bob.client.listTools();
    expect(tools.length).toBeGreaterThanOrEqual(6);
    expect(tools.length).toBeLessThanOrEqual(8);
    for (const tool of tools) {
      expect(tool.name).toMatch(/^chat_[a-z_]+$/);
      expect(tool.description?.length ?? 0).toBeGreaterThan(20);
      expect(tool.inputSchema.type).toBe("object");
      for (const [key, prop] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect((prop as { description?: string }).description, `${tool.name}.${key}`).toBeTruthy();
      }
    }
    expect(tools.map((t) => t.name).sort()).toEqual([
      "chat_channels",
      "chat_create_channel",
      "chat_post",
      "chat_read",
      "chat_tasks",
      "chat_wait",
      "chat_workspace",
    ]);
    // SKILL.md teaches these tools by name: it must name every tool and no other.
    const skill = readFileSync(new URL("../../SKILL.md", import.meta.url), "utf8");
    expect(skill).toMatch(/^---\nname: agent-chat\ndescription: .{40,}\n---\n/);
    const named = new Set(skill.match(/\bchat_[a-z_]+/g));
    expect([...named].sort()).toEqual(tools.map((t) => t.name).sort());
  });

  it("delivers a post from one identity to another, with the unread footer following along", async () => {
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
    const posted = await alice.call("chat_post", {
      channel: "review",
      to: "bob",
      title: "Schema draft",
      body: "Please review the schema.\nIt is in PR 12.",
      status: "proposal",
    });
    expect(posted.isError).toBe(false);
    expect(posted.text).toBe("Posted #1 to review.");
    expect(footerJson(posted.footer)).toEqual({ chat: { msgs: 0, channels: {} } });

    const listed = await bob.call("chat_channels");
    expect(listed.text).toMatch(/^review · 1 unread · last #1 · members alice \(active\), bob /);
    // A proposal addressed to bob: he owes it an answer until he replies.
    expect(listed.text).toMatch(/ · you owe an answer to #1/);
    expect(footerJson(listed.footer)).toEqual({
      chat: { msgs: 1, channels: { review: 1 }, owes: 1 },
    });

    const read = await bob.call("chat_read", { channel: "review" });
    expect(read.text).toContain("review #1 · from alice · to bob · proposal");
    // The author's lines, each behind the frame that no header of ours starts with.
    expect(read.text).toContain("│ Schema draft\n│ Please review the schema.\n│ It is in PR 12.");
    expect(footerJson(read.footer).chat.msgs).toBe(0);
    expect((await bob.call("chat_read", { channel: "review" })).text).toBe("No new messages.");

    const reply = await bob.call("chat_post", {
      channel: "review",
      body: "Looks good",
      reply_to: 1,
      status: "ack",
    });
    expect(reply.text).toBe("Posted #2 to review.");
    const back = await alice.call("chat_read", {});
    expect(back.text).toContain("review #2 · from bob · to all · ack · re #1");
  });

  it("answers bad arguments with isError results carrying the footer, and stays up", async () => {
    const bob = await agent("bob");
    const missing = await bob.call("chat_read", { channel: "nope" });
    expect(missing.isError).toBe(true);
    expect(missing.text).toMatch(/^Error CHANNEL_NOT_FOUND: no channel nope/);
    expect(missing.text).toContain("chat_create_channel");
    expect(footerJson(missing.footer).chat.msgs).toBe(0);

    const schema = await bob.call("chat_post", { channel: "review" });
    expect(schema.isError).toBe(true);
    expect(schema.text).toMatch(/^Error INVALID_ARGUMENT: .*chat_post.* at body\nWhat to do: /);
    expect(schema.footer).toMatch(/^<agent-chat>/);

    const badName = await bob.call("chat_post", { channel: "../etc", body: "x" });
    expect(badName.isError).toBe(true);
    expect(badName.text).toMatch(/^Error INVALID_NAME: /);

    const noTitle = await bob.call("chat_tasks", { action: "add", channel: "review" });
    expect(noTitle.text).toMatch(/^Error INVALID_ARGUMENT: action add needs a title/);

    const unknown = await bob.call("SendMessage", { to: "alice" });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toMatch(/^Error UNKNOWN_TOOL: Tool SendMessage not found\nWhat to do: /);
    const tooLong = await bob.call("chat_wait", { timeout_seconds: 5000 });
    expect(tooLong.text).toMatch(/^Error INVALID_ARGUMENT: .*timeout_seconds/);
    expect(unknown.footer).toMatch(/^<agent-chat>/);

    const after = await bob.call("chat_channels");
    expect(after.isError).toBe(false);
    expect(after.text).toContain("review");
    expect(bob.stderr()).toBe("");
  });

  it("--footer b00t emits the b00t footer byte for byte", async () => {
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob", ["--footer", "b00t"])]);
    await alice.call("chat_post", { channel: "review", body: "one" });
    await alice.call("chat_post", { channel: "review", body: "two", to: "bob" });
    const listed = await bob.call("chat_channels");
    expect(Buffer.from(listed.footer)).toEqual(
      Buffer.from('<🥾>{ "chat": { "msgs": 2 } }</🥾>', "utf8"),
    );
    const failed = await bob.call("chat_read", { channel: "nope" });
    expect(failed.footer).toBe('<🥾>{ "chat": { "msgs": 2 } }</🥾>');
    await bob.call("chat_read", {});
    expect((await bob.call("chat_channels")).footer).toBe('<🥾>{ "chat": { "msgs": 0 } }</🥾>');
  });

  it("counts only relevant messages in channels the agent belongs to, and never moves a cursor", async () => {
    await initChannels(fixture.root(), { ops: ["alice", "carol"], lobby: [] });
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
    await alice.call("chat_post", { channel: "review", body: "for bob", to: "bob" });
    await alice.call("chat_post", { channel: "review", body: "for carol only", to: "carol" });
    await alice.call("chat_post", { channel: "ops", body: "bob is not a member here" });
    await alice.call("chat_post", { channel: "lobby", body: "open channel, broadcast" });
    await bob.call("chat_post", { channel: "lobby", body: "bob's own message" });

    for (let i = 0; i < 3; i++) {
      const r = await bob.call("chat_channels");
      expect(footerJson(r.footer)).toEqual({
        chat: { msgs: 2, channels: { lobby: 1, review: 1 } },
      });
      await bob.call("chat_read", { channel: "nope" });
    }
    expect(existsSync(join(fixture.root(), "review", ".cursors", "bob.txt"))).toBe(false);
    expect(existsSync(join(fixture.root(), "lobby", ".cursors", "bob.txt"))).toBe(false);
    const read = await bob.call("chat_read", { peek: true });
    expect(read.text).toContain("for bob");
    expect(read.text).toContain("open channel, broadcast");
    expect(read.text).not.toContain("for carol only");
    expect(footerJson(read.footer).chat.msgs).toBe(2);
  });

  it("keeps the count right as messages arrive while the cursor stays put", async () => {
    const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
    const steps: Array<[Record<string, unknown>, Agent, number]> = [
      [{ body: "to bob", to: "bob" }, alice, 1],
      [{ body: "to carol", to: "carol" }, alice, 1],
      [{ body: "to everyone" }, alice, 2],
      [{ body: "bob's own" }, bob, 2],
      [{ body: "to bob and carol", to: "bob,carol" }, alice, 3],
    ];
    for (const [message, from, expected] of steps) {
      await from.call("chat_post", { channel: "review", ...message });
      const r = await bob.call("chat_channels");
      expect(footerJson(r.footer).chat, JSON.stringify(message)).toEqual({
        msgs: expected,
        channels: { review: expected },
      });
    }
    await bob.call("chat_read", { channel: "review" });
    await alice.call("chat_post", { channel: "review", body: "after the read" });
    expect(footerJson((await bob.call("chat_channels")).footer).chat.msgs).toBe(1);
  });
});
