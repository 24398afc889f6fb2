import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub } from "./model-stub.js";
import { makeSandbox, type Sandbox, toolBinary } from "./sandbox.js";
import { geminiStandIn } from "./stand-in-config.js";
import { startTerminal, type Terminal } from "./terminal.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runCommand,
  runnable,
  title,
  WAKE_SCRIPT,
} from "./wake-session.js";

/*
 * The real interactive Gemini CLI in a terminal, under `agent-chat run --as bob`, with the
 * stand-in for the Gemini API on 127.0.0.1: idle after its first turn, it takes a new turn when
 * alice posts to bob, and that turn reads the message.
 */

let sandbox: Sandbox;
let stub: ModelStub;
let terminal: Terminal | undefined;
let env: Record<string, string>;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-gemini-wake-");
  stub = await startModelStub(WAKE_SCRIPT);
  env = geminiStandIn(sandbox, stub.url);
});
afterEach(async () => {
  await terminal?.close();
  terminal = undefined;
  await stub.close();
  sandbox.cleanup();
});

describe.runIf(runnable)("Gemini CLI (real binary) woken from idle under agent-chat run", () => {
  it(title("an idle session takes a turn that reads the message posted to it"), async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    const setup = await sandbox.agentChat(["setup", "gemini", "--as", "bob", "--write", "--trust"]);
    expect(setup.code, setup.stderr).toBe(0);
    const gemini = [toolBinary("gemini"), "-i", "Say hi."];
    const term = startTerminal(sandbox, runCommand(sandbox, gemini), env);
    terminal = term;
    await idleAfterFirstTurn(term, /✦\s+Done\./, stub);
    const latency = await expectWokenTurnReads(sandbox, stub, term);
    console.log(`Gemini CLI under run: post -> the stand-in's new request in ${latency} ms`);
  }, 180_000);
});
