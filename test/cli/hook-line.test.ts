import { describe, expect, it } from "vitest";
import { parseHookLine } from "../../src/cli/hook-line.js";

describe("the hook fast path recognises only the line host tools run", () => {
  it("takes the line setup writes, with its flags in either form", () => {
    expect(
      parseHookLine(["--root", "/r", "hook", "prompt", "--as", "bob", "--format", "claude"]),
    ).toEqual({ root: "/r", event: "prompt", as: "bob", format: "claude" });
    expect(parseHookLine(["hook", "stop", "--as=bob", "--block"])).toEqual({
      event: "stop",
      as: "bob",
      block: true,
    });
    expect(parseHookLine(["--root=/r", "hook", "session-start"])).toEqual({
      root: "/r",
      event: "session-start",
    });
    // The wake hook `setup claude-code --wake` writes, and its --timeout.
    expect(parseHookLine(["--root", "/r", "hook", "wait", "--as", "bob"])).toEqual({
      root: "/r",
      event: "wait",
      as: "bob",
    });
    expect(parseHookLine(["hook", "wait", "--as", "bob", "--timeout=60"])).toEqual({
      event: "wait",
      as: "bob",
      timeout: "60",
    });
  });

  it("leaves everything else to the full CLI, which checks and explains", () => {
    for (const argv of [
      [],
      ["read", "ch", "--as", "bob"],
      ["hook"],
      ["hook", "--help"],
      ["hook", "prompt", "-h"],
      ["hook", "prompt", "--bogus"],
      ["hook", "prompt", "extra"],
      ["hook", "prompt", "--as"],
      ["hook", "prompt", "--as", "--block"],
      ["hook", "prompt", "--as", "a", "--as", "b"],
      ["--as", "bob", "hook", "prompt"],
      ["hook", "prompt", "--root", "/r"],
      ["--block", "hook", "prompt"],
      ["--json", "hook", "prompt"],
      ["--timeout", "5", "hook", "wait"],
      ["hook", "wait", "--timeout"],
    ]) {
      expect(parseHookLine(argv), argv.join(" ")).toBeUndefined();
    }
  });

  it("sends a NATS root to the full CLI, from the flag or the environment", () => {
    expect(parseHookLine(["--root", "nats://h:4222/ns", "hook", "prompt"])).toBeUndefined();
    expect(parseHookLine(["hook", "prompt"], "nats://h:4222/ns")).toBeUndefined();
    expect(parseHookLine(["hook", "prompt"], "/folder")).toEqual({ event: "prompt" });
  });
});
