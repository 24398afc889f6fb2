import { describe, expect, it } from "vitest";
import { runTool, toolBinary } from "./sandbox.js";
import { codexStandIn } from "./stand-in-config.js";
import { stopCodexDaemon } from "./wake-command.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runnable,
  title,
  wakeFixture,
} from "./wake-session.js";

/*
 * The real interactive Codex (no `exec`) in a terminal, under `agent-chat run --as bob`, with
 * the stand-in for the Responses API on 127.0.0.1: idle after its first turn, it takes a new
 * turn when alice posts to bob, and that turn reads the message.
 */

// The folder and the hooks are trusted at Codex's own questions, as a user answers them.
const session = wakeFixture({
  name: "codex-wake",
  standIn: (sandbox, url) => codexStandIn(sandbox, url, { trusted: false }),
  stop: stopCodexDaemon,
});

describe.runIf(runnable)("Codex (real binary) woken from idle under agent-chat run", () => {
  it(title("an idle session takes a turn that reads the message posted to it"), async () => {
    const { sandbox, stub, env } = session;
    await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
    const setup = await runTool(
      sandbox,
      "agent-chat",
      ["--root", sandbox.root, "setup", "codex", "--as", "bob", "--write", "--wake"],
      { env },
    );
    expect(setup.code, setup.stderr).toBe(0);
    const term = session.run([toolBinary("codex")]);
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
