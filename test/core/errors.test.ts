import { describe, expect, it } from "vitest";
import {
  AgentChatError,
  isAgentChatError,
  referenceError,
  referenceMessage,
} from "../../src/core/errors.js";

describe("chat.py 0.7's code on an error", () => {
  it("is data on the error, and leads its message as chat.py's text does", () => {
    const cause = new Error("underneath");
    const err = referenceError("CLAIM_LOST", "LEASE_CONFLICT", "task T1 is leased by bob", {
      cause,
    });
    expect(isAgentChatError(err, "CLAIM_LOST")).toBe(true);
    expect(err.reference).toBe("LEASE_CONFLICT");
    expect(err.message).toBe("LEASE_CONFLICT: task T1 is leased by bob");
    expect(err.cause).toBe(cause);
    expect(referenceMessage("PATH_LOCK_CONFLICT", "x")).toBe("PATH_LOCK_CONFLICT: x");
  });

  it("is absent from an error of ours alone, whatever its text looks like", () => {
    const err = new AgentChatError("CLAIM_LOST", "LEASE_CONFLICT: looks like chat.py's");
    expect(err.reference).toBeUndefined();
    expect("reference" in err).toBe(false);
    expect("cause" in err).toBe(false);
  });

  it("is carried by the constructor's options", () => {
    const err = new AgentChatError("TASK_INCONSISTENT", "STATE_X: y", { reference: "STATE_X" });
    expect(err.reference).toBe("STATE_X");
    expect(err.message).toBe("STATE_X: y");
  });
});
