import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub } from "./model-stub.js";
import { makeSandbox, type Sandbox, toolBinary } from "./sandbox.js";
import { hasTmux, startTerminal, type Terminal } from "./terminal.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runCommand,
  WAKE_SCRIPT,
} from "./wake-session.js";

/*
 * The real interactive Gemini CLI in a terminal, under `agent-chat run --as bob`, with the
 * stand-in for the Gemini API on 127.0.0.1: idle after its first turn, it takes a new turn when
 * alice posts to bob, and that turn reads the message.
 */

// In CI a missing tmux fails this test (startTerminal throws); elsewhere it skips, saying so.
const runnable = hasTmux() || process.env.CI === "true";
const title = (name: string) => (runnable ? name : `${name} (skipped: tmux is not installed)`);

let sandbox: Sandbox;
let stub: ModelStub;
let terminal: Terminal | undefined;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-gemini-wake-");
  stub = await startModelStub(WAKE_SCRIPT);
  // The user's own settings: an API key (the stand-in is its base URL).
  mkdirSync(join(sandbox.home, ".gemini"), { recursive: true });
  writeFileSync(
    join(sandbox.home, ".gemini", "settings.json"),
    JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }),
  );
});
afterEach(async () => {
  await terminal?.close();
  terminal = undefined;
  await stub.close();
  sandbox.cleanup();
});

const env = () => ({
  GOOGLE_GEMINI_BASE_URL: stub.url,
  GEMINI_API_KEY: "stand-in",
  // One process: the relaunch with a larger heap only costs time here.
  GEMINI_CLI_NO_RELAUNCH: "true",
});

describe.runIf(runnable)("Gemini CLI (real binary) woken from idle under agent-chat run", () => {
  it(title("an idle session takes a turn that reads the message posted to it"), async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    const setup = await sandbox.agentChat(["setup", "gemini", "--as", "bob", "--write", "--trust"]);
    expect(setup.code, setup.stderr).toBe(0);
    const gemini = [toolBinary("gemini"), "-i", "Say hi."];
    const term = startTerminal(sandbox, runCommand(sandbox, gemini), env());
    terminal = term;
    await idleAfterFirstTurn(term, /✦\s+Done\./, stub);
    const latency = await expectWokenTurnReads(sandbox, stub, term);
    console.log(`Gemini CLI under run: post -> the stand-in's new request in ${latency} ms`);
  }, 180_000);
});
