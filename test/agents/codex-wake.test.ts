import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ModelStub, startModelStub } from "./model-stub.js";
import { makeSandbox, runTool, type Sandbox, toolBinary } from "./sandbox.js";
import { codexStandIn } from "./stand-in-config.js";
import { startTerminal, type Terminal } from "./terminal.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runCommand,
  runnable,
  stopCodexDaemon,
  title,
  WAKE_SCRIPT,
} from "./wake-session.js";

/*
 * The real interactive Codex (no `exec`) in a terminal, under `agent-chat run --as bob`, with
 * the stand-in for the Responses API on 127.0.0.1: idle after its first turn, it takes a new
 * turn when alice posts to bob, and that turn reads the message.
 */

let sandbox: Sandbox;
let stub: ModelStub;
let terminal: Terminal | undefined;
let env: Record<string, string>;

beforeEach(async () => {
  sandbox = makeSandbox("agent-chat-codex-wake-");
  stub = await startModelStub(WAKE_SCRIPT);
  // The folder and the hooks are trusted at Codex's own questions, as a user answers them.
  env = codexStandIn(sandbox, stub.url, { trusted: false });
});
afterEach(async () => {
  await terminal?.close();
  terminal = undefined;
  await stopCodexDaemon(sandbox, env);
  await stub.close();
  sandbox.cleanup();
});

describe.runIf(runnable)("Codex (real binary) woken from idle under agent-chat run", () => {
  it(title("an idle session takes a turn that reads the message posted to it"), async () => {
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    const setup = await runTool(
      sandbox,
      "agent-chat",
      ["--root", sandbox.root, "setup", "codex", "--as", "bob", "--write", "--wake"],
      { env },
    );
    expect(setup.code, setup.stderr).toBe(0);
    const term = startTerminal(sandbox, runCommand(sandbox, [toolBinary("codex")]), env);
    terminal = term;
    await term.waitFor(/Ask Codex to do anything/);
    // Codex asks its questions once the first prompt is sent (docs/first-run.md).
    await term.type("Say hi.", /›\s+Say hi\./);
    const hooksReview = /Hooks need review[\s\S]*2\. Trust all and continue/;
    // Outside a git repository Codex asks about the hooks only, not the folder.
    const asked = await term.press(
      "Enter",
      new RegExp(`Trust this folder\\?[\\s\\S]*1\\. Trust and continue|${hooksReview.source}`),
    );
    if (/Trust this folder\?/.test(asked)) await term.press("Enter", hooksReview);
    await term.press("2", /› 2\. Trust all and continue/);
    await term.press("Enter", /^(?![\s\S]*Hooks need review)[\s\S]*›\s+Say hi\./);
    await term.press("Enter", /•\s+Done\./);
    await idleAfterFirstTurn(term, /•\s+Done\./, stub);
    const latency = await expectWokenTurnReads(sandbox, stub, term);
    await term.waitFor(/Called agent-chat\.chat_read/);
    console.log(`Codex under run: post -> the stand-in's new request in ${latency} ms`);
  }, 180_000);
});
