import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { vi } from "vitest";

/** The built CLI (`npm test` builds first): tests run what users run. */
export const CLI = fileURLToPath(new URL("../../dist/cli.cjs", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  root?: string;
  env?: Record<string, string | undefined>;
  input?: string | Buffer;
  /** Leave stdin open for the test to write to (else it is ended at once, or after `input`). */
  keepStdin?: boolean;
  /** A bound on a hang, not on speed (default 20 s); a command that is meant to wait gives its own. */
  timeoutMs?: number;
  /** The working folder (default: the test runner's). */
  cwd?: string;
}

function cliEnv(options: CliOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, AGENT_CHAT_NAME: undefined };
  if (options.root !== undefined) env.AGENT_CHAT_ROOT = options.root;
  Object.assign(env, options.env);
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  return env;
}

const results = new WeakMap<ChildProcess, Promise<CliResult>>();
const liveStdout = new WeakMap<ChildProcess, () => string>();

/**
 * Starts the CLI and returns the child, for tests that signal or race it. Its output is
 * collected from the start, so a child that exits before `collect` is called is not missed.
 */
export function startCli(args: string[], options: CliOptions = {}): ChildProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: cliEnv(options),
    cwd: options.cwd,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const result = gather(child, args, options);
  result.catch(() => {}); // observed through collect()
  results.set(child, result);
  return child;
}

/** Runs the CLI to completion. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return collect(startCli(args, options));
}

/** The result of a child started by {@link startCli}. */
export function collect(child: ChildProcess): Promise<CliResult> {
  const result = results.get(child);
  if (!result) throw new Error("collect() takes a child started by startCli()");
  return result;
}

function gather(child: ChildProcess, args: string[], options: CliOptions): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    liveStdout.set(child, () => stdout);
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(
          `CLI timed out: agent-chat ${args.join(" ")}\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, options.timeoutMs ?? 20_000);
    child.on("error", reject);
    // A CLI that refuses its input early closes stdin; that is an outcome, not a test error.
    child.stdin?.on("error", () => {});
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    else if (!options.keepStdin) child.stdin?.end();
  });
}

/**
 * Resolves once the child holds an inotify instance, i.e. a `wait` or `tail` has set up its file
 * watch (and long since its signal handlers): a deterministic "ready" on a loaded machine.
 */
export async function watching(child: ChildProcess, timeoutMs = 15_000): Promise<void> {
  const { readdirSync, readlinkSync } = await import("node:fs");
  const holdsInotify = () => {
    try {
      return readdirSync(`/proc/${child.pid}/fd`).some(
        (fd) => safeReadlink(readlinkSync, `/proc/${child.pid}/fd/${fd}`) === "anon_inode:inotify",
      );
    } catch {
      return false; // not started yet, or gone
    }
  };
  await vi.waitFor(
    () => {
      if (!holdsInotify()) throw new Error("the child never started watching");
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

function safeReadlink(readlink: (p: string) => string, path: string): string | undefined {
  try {
    return readlink(path);
  } catch {
    return undefined;
  }
}

/** Resolves once the child's stdout so far satisfies `done` (e.g. holds two lines). */
export async function untilStdout(
  child: ChildProcess,
  done: (stdout: string) => boolean,
  timeoutMs = 15_000,
): Promise<string> {
  return vi.waitFor(
    () => {
      const out = liveStdout.get(child)?.() ?? "";
      if (!done(out)) throw new Error(`stdout never matched; got: ${out}`);
      return out;
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

/** Polls until `check` holds (a state another process reaches): readiness, not a sleep. */
export async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error("condition never met");
    },
    { timeout: timeoutMs, interval: 50 },
  );
}
