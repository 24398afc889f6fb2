import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built CLI (`npm test` builds first): tests run what users run. */
export const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  root?: string;
  env?: Record<string, string | undefined>;
  input?: string;
  timeoutMs?: number;
}

function cliEnv(options: CliOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, AGENT_CHAT_NAME: undefined };
  if (options.root !== undefined) env.AGENT_CHAT_ROOT = options.root;
  Object.assign(env, options.env);
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  return env;
}

/** Starts the CLI and returns the child, for tests that signal or race it. */
export function startCli(args: string[], options: CliOptions = {}): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    env: cliEnv(options),
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Runs the CLI to completion. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const child = startCli(args, options);
  return collect(child, options);
}

export function collect(child: ChildProcess, options: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`CLI timed out: ${stderr}`));
    }, options.timeoutMs ?? 20_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}
