import { execFileSync, spawn } from "node:child_process";
import { closeSync, constants, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exitCodeFor } from "../../src/cli/exit-codes.js";
import { CLI, collect, runCli, startCli } from "../helpers/cli.js";
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
/** What process.stdin on a socket or pipe loads first (Node itself loads internal/streams/utils). */
const STREAMS = /^NativeModule (net|stream|internal\/streams\/(readable|duplex))$/;
const NOTICE = /1 unread agent-chat message for bob \(review: 1\)/;

describe("the hook's input on a socket (what Node's spawn gives a hook, as Gemini CLI runs it)", () => {
  it("reads the host's JSON written in parts and answers in its format, nothing on stderr", async () => {
    const { child } = hookPrompt();
    child.stdin!.write(gemini.slice(0, 20));
    setImmediate(() => child.stdin!.end(gemini.slice(20)));
    const r = await collect(child);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout);
    expect(out.hookSpecificOutput.hookEventName).toBe("BeforeAgent");
    expect(out.hookSpecificOutput.additionalContext).toMatch(NOTICE);
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
});

describe("the hook's input on a pipe its host wrote and closed (a shell's |, a Rust host's piped stdin)", () => {
  it("is read at once, without Node's streams", async () => {
    runs += 1;
    const log = join(tmp.dir, `modules-${runs}.log`);
    const env = {
      ...process.env,
      AGENT_CHAT_ROOT: root,
      AGENT_CHAT_NAME: "bob",
      XDG_STATE_HOME: join(tmp.dir, `state-${runs}`),
      NODE_OPTIONS: `--require ${preload}`,
      MODULES_LOG: log,
    };
    // $0 and $1 of the script: this Node and the CLI.
    const script = `printf '%s' "$INPUT" | exec "$0" "$1" hook prompt`;
    const out = execFileSync("sh", ["-c", script, process.execPath, CLI], {
      env: { ...env, INPUT: gemini },
      encoding: "utf8",
    });
    expect(JSON.parse(out).hookSpecificOutput.additionalContext).toMatch(NOTICE);
    expect(
      readFileSync(log, "utf8")
        .split("\n")
        .filter((m) => STREAMS.test(m)),
    ).toEqual([]);
  });
});

describe("a post's body on stdin", () => {
  /** `post` by alice with its body on stdin, given as `stdin` (default: Node's socket). */
  function post(stdin: "pipe" | number = "pipe", globals: string[] = []) {
    runs += 1;
    const log = join(tmp.dir, `modules-${runs}.log`);
    const env = { NODE_OPTIONS: `--require ${preload}`, MODULES_LOG: log };
    const args = [...globals, "post", "review", "--from", "alice", "--title", "stdin", "--json"];
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, AGENT_CHAT_ROOT: root, ...env },
      stdio: [stdin, "pipe", "pipe"],
    });
    const out = { stdout: "", stderr: "" };
    child.stdout!.on("data", (d: Buffer) => (out.stdout += d));
    child.stderr!.on("data", (d: Buffer) => (out.stderr += d));
    const exited = new Promise<number | null>((r) => child.on("close", r));
    const modules = () => readFileSync(log, "utf8").split("\n");
    return { child, out, exited, modules };
  }

  async function posted(out: { stdout: string }): Promise<string> {
    const { seq } = JSON.parse(out.stdout) as { seq: number };
    const read = await runCli(["--json", "peek", "review", "-n", "1"], { root });
    const [message] = (
      JSON.parse(read.stdout) as { messages: Array<{ seq: number; body: string }> }
    ).messages;
    expect(message!.seq).toBe(seq);
    return message!.body;
  }

  const body = `line one\n${"ü".repeat(40_000)}\nlast line`;

  it("from a socket written in parts: the whole body", async () => {
    const { child, out, exited } = post();
    child.stdin!.write(body.slice(0, 100));
    setImmediate(() => child.stdin!.end(body.slice(100)));
    expect(await exited, out.stderr).toBe(0);
    expect(await posted(out)).toBe(body);
  });

  it("from a file given as stdin (without Node's streams), and from a pipe its writer closes later", async () => {
    const file = join(tmp.dir, "body.txt");
    writeFileSync(file, body);
    const fd = openSync(file, "r");
    const fromFile = post(fd);
    closeSync(fd);
    expect(await fromFile.exited, fromFile.out.stderr).toBe(0);
    expect(await posted(fromFile.out)).toBe(body);
    expect(fromFile.modules().filter((m) => STREAMS.test(m))).toEqual([]);

    const fifo = join(tmp.dir, "body.fifo");
    execFileSync("mkfifo", [fifo]);
    const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeEnd = openSync(fifo, constants.O_WRONLY);
    const fromPipe = post(readEnd);
    closeSync(readEnd);
    writeSync(writeEnd, body.slice(0, 10));
    setImmediate(() => {
      writeSync(writeEnd, body.slice(10));
      closeSync(writeEnd);
    });
    expect(await fromPipe.exited, fromPipe.out.stderr).toBe(0);
    expect(await posted(fromPipe.out)).toBe(body);
  });

  it("over the limit on a socket: refused, nothing posted", async () => {
    const before = await runCli(["--json", "peek", "review", "-n", "1"], { root });
    const { child, out, exited } = post("pipe", ["--max-body", "1000"]);
    child.stdin!.on("error", () => {});
    child.stdin!.end("x".repeat(5000));
    expect(await exited).toBe(exitCodeFor("TOO_LARGE"));
    expect(out.stderr).toMatch(/message body is more than 1000 bytes/);
    const after = await runCli(["--json", "peek", "review", "-n", "1"], { root });
    expect(after.stdout).toBe(before.stdout);
  });
});
