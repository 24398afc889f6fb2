import { describe, expect, it } from "vitest";
import { toolBinary } from "./sandbox.js";
import { qwenStandIn } from "./stand-in-config.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runnable,
  title,
  wakeFixture,
} from "./wake-session.js";

/*
 * The real interactive Qwen Code in a terminal, under `agent-chat run --as bob`, with the
 * stand-in for an OpenAI-compatible API on 127.0.0.1: idle after its first turn, it takes a new
 * turn when alice posts to bob, and that turn reads the message. Qwen Code starts a turn only on
 * input, so `run` types the notice; its Stop hook marks each turn's end.
 */

const session = wakeFixture({ name: "qwen-wake", standIn: qwenStandIn });

describe.runIf(runnable)("Qwen Code (real binary) woken from idle under agent-chat run", () => {
  it(title("an idle session takes a turn that reads the message posted to it"), async () => {
    const { sandbox, stub } = session;
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    const setup = await sandbox.agentChat(["setup", "qwen", "--as", "bob", "--write", "--wake"]);
    expect(setup.code, setup.stderr).toBe(0);
    expect(setup.stdout).toContain("run --as bob -- qwen");
    const term = session.run([toolBinary("qwen"), "-i", "Say hi."]);
    await idleAfterFirstTurn(term, /◆\S*\s+Done\./, stub);
    const latency = await expectWokenTurnReads(sandbox, stub, term);
    console.log(`Qwen Code under run: post -> the stand-in's new request in ${latency} ms`);
  }, 180_000);
});
