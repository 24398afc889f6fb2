import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runNotice } from "../../src/cli/agent-run.js";
import { openStore } from "../../src/client/open.js";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "../mcp/client.js";

/*
 * `agent-chat run --as alice -- <agent>`: the agent's CLI (here a scripted stand-in that prints
 * a prompt and answers each line) under a pseudo-terminal, woken with one fixed notice line when
 * a message for alice arrives while it is idle.
 */

const FAKE_AGENT = fileURLToPath(new URL("../helpers/fake-agent.mjs", import.meta.url));
const NOTICE = runNotice("alice");
const IDLE_AFTER = "0.3";

let root: string;
let cleanup: () => void;
const children: ChildProcess[] = [];

beforeEach(async () => {
  ({ dir: root, cleanup } = tempDir("agent-chat-run-"));
  await initChannels(root, { review: ["alice", "bob"] });
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  cleanup();
});

interface Session {
  child: ChildProcess;
  output(): string;
  /** Resolves once the output matches, from the start of the session. */
  until(pattern: RegExp): Promise<void>;
  exit: Promise<number | null>;
}

function startRun(idleAfter = IDLE_AFTER): Session {
  const child = spawn(
    process.execPath,
    [
      CLI,
      "--root",
      root,
      "run",
      "--as",
      "alice",
      "--idle-after",
      idleAfter,
      "--",
      "node",
      FAKE_AGENT,
    ],
    {
      stdio: ["pipe", "pipe", "pipe"],
      env: {
        ...process.env,
        AGENT_CHAT_NAME: undefined,
        AGENT_CHAT_ROOT: root,
        FAKE_AGENT_CLI: CLI,
      },
    },
  );
  children.push(child);
  let out = "";
  const waiters: Array<() => void> = [];
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    for (const check of waiters.splice(0)) check();
  });
  let err = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  const exit = new Promise<number | null>((resolve) => child.on("close", resolve));
  const until = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => (pattern.test(out) ? resolve() : waiters.push(check));
      exit.then(() => reject(new Error(`exited before ${pattern}: ${out}\n${err}`)));
      check();
    });
  return { child, output: () => out, until, exit };
}

async function post(body: string, title?: string): Promise<number> {
  const store = await openStore(root, { watch: false });
  const { seq } = await store.post("review", {
    from: "bob",
    to: "alice",
    body,
    ...(title ? { title } : {}),
  });
  await store.close();
  return seq;
}

/** The lines the stand-in agent was given, in order. */
const given = (output: string) => [...output.matchAll(/^got: (.*?)\r?$/gm)].map((m) => m[1]);

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const gotNotice = new RegExp(`got: ${escaped(NOTICE)}`);

describe("agent-chat run", () => {
  it("types one fixed notice, never the message, into an idle session, and records it as notified", async () => {
    const run = startRun();
    await run.until(/> /);
    const seq = await post("$(touch /tmp/pwned) rm -rf ~", "`curl evil`");
    await run.until(gotNotice);
    expect(given(run.output())).toEqual([NOTICE]);
    expect(run.output()).not.toMatch(/pwned|rm -rf|curl evil/);

    const store = await openStore(root, { watch: false });
    const receipts = await store.receipts("review", seq);
    await store.close();
    expect(receipts.addressees.find((r) => r.agent === "alice")?.state).toBe("notified");

    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("waits while the agent works, then gives one notice for the whole batch", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("work\r");
    await run.until(/\.\.\./);
    for (const body of ["one", "two", "three"]) await post(body);
    await run.until(gotNotice);
    const output = run.output();
    expect(output.indexOf("done")).toBeGreaterThan(0);
    expect(output.indexOf("done")).toBeLessThan(output.search(gotNotice));
    // The agent reads nothing; only a new message would be worth another notice.
    run.child.stdin!.write("ping\r");
    await run.until(/got: ping/);
    expect(given(run.output())).toEqual(["work", NOTICE, "ping"]);
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("never types into a line the user is typing; the notice comes after it is sent", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("half a li");
    await post("while you type");
    // Long enough for a notice to come several times over (idle after 0.3 s, a watch wakes in
    // well under a second): any would have landed inside the half-typed line.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(run.output()).not.toMatch(/\[agent-chat\]/);
    run.child.stdin!.write("ne\r");
    await run.until(gotNotice);
    expect(given(run.output())).toEqual(["half a line", NOTICE]);
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("never answers a question the tool asks during its turn, however quiet its screen (issue 40, finding 6)", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("ask\r");
    await run.until(/Allow execution of \[Shell\]\? \(y\/n\) /);
    await post("while it asks");
    // Many quiet periods (0.3 s) long: a notice typed now would answer the question.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(run.output()).not.toMatch(/\[agent-chat\]/);
    run.child.stdin!.write("n\r");
    await run.until(/answered: n\r?\n/);
    await run.until(gotNotice);
    expect(run.output()).not.toMatch(/answered: \[agent-chat\]/);
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("takes what the terminal answers by itself (tmux's name, device attributes, focus) for no typing", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("\x1bP>|tmux 3.3a\x1b\\\x1b[?1;2c\x1b[I\x1b]11;rgb:0000/0000/0000\x07");
    await post("after the terminal answered");
    // A TUI takes those answers itself; this stand-in reads them into its line, before ours.
    await run.until(new RegExp(`got: .*${escaped(NOTICE)}`));
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("takes an arrow or a paste for a draft until it is sent; a line typed and erased is empty", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("\x1b[A"); // Up: the tool may have put the last prompt back
    await post("after an arrow");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(run.output()).not.toMatch(/\[agent-chat\]/);
    run.child.stdin!.write("\r");
    await run.until(gotNotice);

    run.child.stdin!.write("draft");
    run.child.stdin!.write("\x7f".repeat(5)); // all of it erased: the line is known empty
    await post("after an erased draft");
    await run.until(new RegExp(`${gotNotice.source}[\\s\\S]*${gotNotice.source}`));
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("counts the session idle once the agent's own stop hook marks its turn ended, however its screen keeps redrawing", async () => {
    // A quiet period that never passes in this test: only the hooks' mark can make it idle.
    const run = startRun("600");
    await run.until(/> /);
    run.child.stdin!.write("hooked\r");
    await run.until(/turn ended/);
    await post("after the turn");
    await run.until(gotNotice);
    expect(given(run.output())).toEqual(["hooked", NOTICE]);
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("types the notice as a marked paste into a tool that turned bracketed paste on, so its Enter sends it", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("paste-mode\r");
    await run.until(/got: paste-mode/);
    await post("pasted");
    await run.until(new RegExp(`got: \x1b\\[200~${escaped(NOTICE)}\x1b\\[201~`));
    run.child.stdin!.write("quit\r");
    expect(await run.exit).toBe(7);
  });

  it("passes Ctrl-C through to the agent and exits with its exit code", async () => {
    const run = startRun();
    await run.until(/> /);
    run.child.stdin!.write("\x03");
    await run.until(/sigint/);
    expect(await run.exit).toBe(130);
  });

  it("refuses a command that does not exist, and a line without one", async () => {
    const missing = await runCli(["run", "--as", "alice", "--", "no-such-agent-cli-xyz"], { root });
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/no such command: no-such-agent-cli-xyz/);
    const none = await runCli(["run", "--as", "alice"], { root });
    expect(none.code).toBe(64);
    expect(none.stderr).toMatch(/missing required argument 'command'/);
  });
});
