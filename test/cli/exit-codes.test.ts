import { describe, expect, it } from "vitest";
import type { CliContext } from "../../src/cli/context.js";
import { reportError } from "../../src/cli/run.js";
import { AgentChatError, referenceError } from "../../src/core/errors.js";

/** A command of chat.py 0.7's grammar (`task`, `lock`, ...) reporting `err`: its exit and stderr. */
function asReference07Command(err: unknown): { exit: number; stderr: string } {
  let stderr = "";
  const ctx = {
    speaksReference07: true,
    json: false,
    err: (text: string) => {
      stderr += text;
    },
    printJson: () => {},
  } as unknown as CliContext;
  return { exit: reportError(err, ctx, []), stderr };
}

describe("the exit of a chat.py 0.7 command comes from the error's reference", () => {
  it("a task or lease refusal chat.py names exits 2, a path-lock or state one 1", () => {
    expect(
      asReference07Command(referenceError("CLAIM_LOST", "LEASE_CONFLICT", "task T1 is leased")),
    ).toEqual({ exit: 2, stderr: "agent-chat: LEASE_CONFLICT: task T1 is leased\n" });
    expect(
      asReference07Command(referenceError("INVALID_ARGUMENT", "PATH_LOCK_INVALID_REASON", "no")),
    ).toEqual({ exit: 1, stderr: "agent-chat: PATH_LOCK_INVALID_REASON: no\n" });
    expect(
      asReference07Command(referenceError("NOT_FOUND", "STATE_RECORD_NOT_FOUND", "none")).exit,
    ).toBe(1);
  });

  it("text that only looks like chat.py's code is not its refusal", () => {
    // Ours: CLAIM_LOST (3), which chat.py's grammar knows as 1; not a TaskError's 2.
    expect(
      asReference07Command(new AgentChatError("CLAIM_LOST", "LEASE_CONFLICT: a body of ours")),
    ).toEqual({ exit: 1, stderr: "agent-chat: LEASE_CONFLICT: a body of ours\n" });
    // Ours: a usage error, which chat.py's argparse answers with 2; not a path-lock error's 1.
    expect(
      asReference07Command(new AgentChatError("INVALID_ARGUMENT", "PATH_LOCK_CONFLICT: a name"))
        .exit,
    ).toBe(2);
  });

  it("our own task code is chat.py's family too, and then leads the message", () => {
    expect(asReference07Command(new AgentChatError("TASK_NOT_FOUND", "no task T9"))).toEqual({
      exit: 2,
      stderr: "agent-chat: TASK_NOT_FOUND: no task T9\n",
    });
  });
});
