import { describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import {
  assertDistinctAgents,
  collidingName,
  identity,
  parseTaskId,
  sameAgent,
  slug,
  validateName,
} from "../../src/core/names.js";

describe("slug (the reference's rule)", () => {
  it.each([
    ["Converge schema v0.2", "converge-schema-v0-2"],
    ["  --Hello,   World!--  ", "hello-world"],
    ["Re: schema", "re-schema"],
    ["ÄÖÜ über", "ber"],
    ["", "msg"],
    ["!!!", "msg"],
    ["a".repeat(50), "a".repeat(40)],
    [`${"a".repeat(39)} b`, "a".repeat(39)],
    ["Bob", "bob"],
    ["frontend.agent", "frontend-agent"],
  ])("slug(%j) = %j", (input, expected) => {
    expect(slug(input)).toBe(expected);
  });
});

describe("identity", () => {
  it("is one key for cursors and relevance: case and punctuation fold as the reference's slug", () => {
    expect(identity("Bob")).toBe("bob");
    expect(identity(" bob ")).toBe("bob");
    expect(identity("Front.End_Agent")).toBe("front-end-agent");
  });

  it("says who someone is by case only: Bob is bob, but alice. is not alice", () => {
    expect(sameAgent("Bob", "bob")).toBe(true);
    expect(sameAgent(" bob ", "BOB")).toBe(true);
    expect(sameAgent("alice.", "alice")).toBe(false);
    expect(sameAgent("bob_x", "bob-x")).toBe(false);
    expect(identity("alice.")).toBe(identity("alice"));
  });

  it("finds a different agent that shares a name's cursor key", () => {
    expect(collidingName("bob.x", ["alice", "bob_x"])).toBe("bob_x");
    expect(collidingName("alice.", ["alice"])).toBe("alice");
    expect(collidingName("BOB_X", ["bob_x"])).toBeUndefined();
    expect(collidingName("bob", ["bob_x"])).toBeUndefined();
  });

  it("refuses a member list in which two names share a key, naming both", () => {
    expect(() => assertDistinctAgents(["alice", "Bob", "bob"], "members")).not.toThrow();
    expect(() => assertDistinctAgents(["bob_x", "alice", "bob-x"], "members")).toThrow(
      'members "bob_x" and "bob-x" would be one identity (both use the cursor file .cursors/bob-x.txt)',
    );
  });
});

describe("validateName", () => {
  it.each(["review", "a", "mission.delta", "account.root", "a_b-c.9", "A1"])(
    "accepts %j",
    (name) => {
      expect(validateName("channel", name)).toBe(name);
    },
  );

  it.each([
    ["..", /use ASCII letters/],
    [".", /use ASCII letters/],
    ["a/b", /use ASCII letters/],
    ["a\\b", /use ASCII letters/],
    ["/abs", /use ASCII letters/],
    ["C:x", /use ASCII letters/],
    ["a\0b", /use ASCII letters/],
    ["a\nb", /use ASCII letters/],
    ["tab\there", /use ASCII letters/],
    [".hidden", /use ASCII letters/],
    ["_private", /use ASCII letters/],
    ["-dash", /use ASCII letters/],
    ["rеview", /use ASCII letters/], // Cyrillic е: a look-alike
    ["x".repeat(65), /too long \(65 characters; at most 64\)/],
    ["x".repeat(10_000), /too long/],
    ["", /required/],
    ["CON", /reserved device name/],
    ["nul.txt", /reserved device name/],
    ["com1", /reserved device name/],
  ])("refuses %j with a message that says what is allowed", (name, message) => {
    let error: unknown;
    try {
      validateName("channel", name);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AgentChatError);
    expect((error as AgentChatError).code).toBe("INVALID_NAME");
    expect((error as AgentChatError).message).toMatch(message);
  });

  it("limits task ids to the reference's pattern (no dots)", () => {
    expect(validateName("task", "build-7_x")).toBe("build-7_x");
    expect(() => validateName("task", "a.b")).toThrow(/letters, digits, '_' and '-'/);
  });
});

describe("parseTaskId", () => {
  it.each([
    ["task-12.md", "12"],
    ["task-12", "12"],
    ["12", "12"],
    ["task-build-x.md", "build-x"],
    ["task-3.CLAIMED-bob.md", "3"],
  ])("%j → %j", (input, id) => {
    expect(parseTaskId(input)).toBe(id);
  });

  it.each(["../x", "task-../x.md", "", "a/b"])("refuses %j", (input) => {
    expect(() => parseTaskId(input)).toThrow(AgentChatError);
  });
});
