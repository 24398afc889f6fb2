import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/** A preload that lists, at exit, the built-in modules the process loaded (Node's own list). */
const EXIT_MODULES = `
const { writeFileSync } = require("node:fs");
process.on("exit", () => writeFileSync(process.env.MODULES_LOG, process.moduleLoadList.join("\\n")));
`;

let tmp: ReturnType<typeof tempDir>;
let root: string;
let preload: string;

beforeAll(async () => {
  tmp = tempDir();
  root = join(tmp.dir, "root");
  preload = join(tmp.dir, "exit-modules.cjs");
  writeFileSync(preload, EXIT_MODULES);
  expect((await runCli(["init", "review"], { root })).code).toBe(0);
  const post = ["post", "review", "--from", "alice", "--to", "bob", "--body", "hi"];
  expect((await runCli(post, { root })).code).toBe(0);
});

afterAll(() => tmp.cleanup());

let runs = 0;
/** `hook prompt` for bob with a fresh state folder, its stdin a socket (Node's spawn), and more. */
function hookPrompt(more: Record<string, string> = {}) {
  runs += 1;
  const log = join(tmp.dir, `modules-${runs}.log`);
  const env = {
    AGENT_CHAT_NAME: "bob",
    XDG_STATE_HOME: join(tmp.dir, `state-${runs}`),
    NODE_OPTIONS: `--require ${preload}`,
    MODULES_LOG: log,
    ...more,
  };
  const child = startCli(["hook", "prompt"], { root, env, keepStdin: true });
  const modules = () => readFileSync(log, "utf8").split("\n");
  return { child, modules };
}

const gemini = JSON.stringify({ hook_event_name: "BeforeAgent", session_id: "s", prompt: "go" });
const NOTICE = /1 unread agent-chat message for bob \(review: 1\)/;

describe("the hook's input on a socket (what Node's spawn gives), read without Node's streams", () => {
  it("reads the host's JSON written in parts, answers in its format, and loads neither net nor the streams", async () => {
    const { child, modules } = hookPrompt();
    child.stdin!.write(gemini.slice(0, 20));
    setImmediate(() => child.stdin!.end(gemini.slice(20)));
    const r = await collect(child);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout);
    expect(out.hookSpecificOutput.hookEventName).toBe("BeforeAgent");
    expect(out.hookSpecificOutput.additionalContext).toMatch(NOTICE);
    const loaded = modules();
    expect(loaded).toContain("NativeModule fs");
    // What process.stdin on a socket loads first (Node itself loads internal/streams/utils).
    const streams = /^NativeModule (net|stream|internal\/streams\/(readable|duplex))$/;
    expect(loaded.filter((m) => streams.test(m))).toEqual([]);
  });

  it("a host that writes its JSON and keeps stdin open is answered after the wait, in that JSON's format", async () => {
    const { child } = hookPrompt();
    child.stdin!.write(gemini);
    const r = await collect(child);
    child.stdin!.destroy();
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).hookSpecificOutput.additionalContext).toMatch(NOTICE);
  });

  it("a host that writes nothing and keeps stdin open still gets its answer and exit 0", async () => {
    const { child } = hookPrompt();
    const r = await collect(child);
    child.stdin!.destroy();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(NOTICE);
  });

  it("with --pending-deprecation (which would warn about the handle) reads through process.stdin, silently", async () => {
    const { child, modules } = hookPrompt({
      NODE_OPTIONS: `--pending-deprecation --require ${preload}`,
    });
    child.stdin!.end(gemini);
    const r = await collect(child);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout).hookSpecificOutput.additionalContext).toMatch(NOTICE);
    expect(modules()).toContain("NativeModule net");
  });
});
