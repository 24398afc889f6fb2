import { describe, expect, it } from "vitest";
import { toolBinary } from "./sandbox.js";
import { geminiStandIn } from "./stand-in-config.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runnable,
  title,
  wakeFixture,
} from "./wake-session.js";

/*
 * The real interactive Gemini CLI in a terminal, under `agent-chat run --as bob`, with the
 * stand-in for the Gemini API on 127.0.0.1: idle after its first turn, it takes a new turn when
 * alice posts to bob, and that turn reads the message.
 */

const session = wakeFixture({ name: "gemini-wake", standIn: geminiStandIn });

describe.runIf(runnable)("Gemini CLI (real binary) woken from idle under agent-chat run", () => {
  it(title("an idle session takes a turn that reads the message posted to it"), async () => {
    const { sandbox, stub } = session;
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    const setup = await sandbox.agentChat(["setup", "gemini", "--as", "bob", "--write", "--trust"]);
    expect(setup.code, setup.stderr).toBe(0);
    const gemini = [toolBinary("gemini"), "-i", "Say hi."];
    const term = session.run(gemini);
    await idleAfterFirstTurn(term, /✦\s+Done\./, stub);
    const latency = await expectWokenTurnReads(sandbox, stub, term);
    console.log(`Gemini CLI under run: post -> the stand-in's new request in ${latency} ms`);
  }, 180_000);
});
