import { describe, expect, it } from "vitest";
import { toolBinary } from "./sandbox.js";
import { copilotStandIn } from "./stand-in-config.js";
import { stopCopilot } from "./wake-command.js";
import {
  expectWokenTurnReads,
  idleAfterFirstTurn,
  runnable,
  title,
  wakeFixture,
} from "./wake-session.js";

/*
 * The real interactive GitHub Copilot CLI in a terminal, under `agent-chat run --as bob`, with
 * the stand-in as its custom provider on 127.0.0.1: idle after its first turn, it takes a new
 * turn when alice posts to bob, and that turn reads the message. Copilot CLI offers no way in
 * from outside to start a turn in a session open in a terminal, so `run` types the notice; its
 * Stop hook marks each turn's end.
 */

const session = wakeFixture({ name: "copilot-wake", standIn: copilotStandIn, stop: stopCopilot });

describe.runIf(runnable)(
  "GitHub Copilot CLI (real binary) woken from idle under agent-chat run",
  () => {
    it(title("an idle session takes a turn that reads the message posted to it"), async () => {
      const { sandbox, stub } = session;
      await sandbox.agentChat(["init", "general", "--members", "alice,bob"]);
      const setup = await sandbox.agentChat([
        "setup",
        "copilot",
        "--as",
        "bob",
        "--write",
        "--wake",
      ]);
      expect(setup.code, setup.stderr).toBe(0);
      expect(setup.stdout).toContain("run --as bob -- copilot");
      const term = session.run([toolBinary("copilot"), "-i", "Say hi."]);
      await idleAfterFirstTurn(term, /● Done\./, stub);
      const latency = await expectWokenTurnReads(sandbox, stub, term);
      console.log(`Copilot CLI under run: post -> the stand-in's new request in ${latency} ms`);
    }, 180_000);
  },
);
