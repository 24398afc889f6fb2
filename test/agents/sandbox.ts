import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI, runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/** The agent tools' binaries, installed by `npm ci` as devDependencies. */
const BIN = fileURLToPath(new URL("../../node_modules/.bin/", import.meta.url));

/** A tool's binary; a missing one fails the test (it is a devDependency, `npm ci` installs it). */
export function toolBinary(name: string): string {
  const path = join(BIN, name);
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: run npm ci (the agent tools are devDependencies)`);
  }
  return path;
}

export interface Sandbox {
  dir: string;
  home: string;
  project: string;
  root: string;
  /** The environment every tool runs with: nothing of the real user's, no model key. */
  env: Record<string, string>;
  /** Runs agent-chat as the tools do (found on PATH). */
  agentChat(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Every message of a channel, as `read --all --peek --json` gives them (no cursor moves). */
  messages(channel: string): Promise<Array<{ seq: number; from: string; body: string }>>;
  cleanup(): void;
}

/**
 * A throwaway user: HOME, the XDG folders and a project folder under one temp folder, and
 * `agent-chat` on PATH (as `npm link` puts it), so nothing a tool or setup writes reaches the
 * real user's files. The environment is built from nothing so that no key, config folder or
 * host-tool variable of the machine leaks in.
 */
export function makeSandbox(prefix: string): Sandbox {
  const { dir, cleanup } = tempDir(prefix);
  const home = join(dir, "home");
  const project = join(dir, "project");
  const root = join(dir, "chat");
  const bin = join(dir, "bin");
  for (const d of [home, project, bin]) mkdirSync(d, { recursive: true });
  symlinkSync(CLI, join(bin, "agent-chat"));
  const env: Record<string, string> = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    PATH: [bin, BIN, dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
  };
  const agentChat: Sandbox["agentChat"] = (args) =>
    runCli(["--root", root, ...args], { env, cwd: project });
  return {
    dir,
    home,
    project,
    root,
    env,
    agentChat,
    messages: async (channel) => {
      const read = await agentChat(["--json", "read", channel, "--as", "bob", "--all", "--peek"]);
      return JSON.parse(read.stdout).messages;
    },
    cleanup,
  };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts a tool in the project folder with the sandbox's environment (plus `extra`). */
export function startTool(
  sandbox: Sandbox,
  command: string,
  args: string[],
  extra: Record<string, string> = {},
): ChildProcess {
  return spawn(command, args, {
    cwd: sandbox.project,
    env: { ...sandbox.env, ...extra },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Runs a tool to its end; kills it past `timeoutMs` and rejects with what it printed. */
export function runTool(
  sandbox: Sandbox,
  command: string,
  args: string[],
  options: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {},
): Promise<Run> {
  const child = startTool(sandbox, command, args, options.env);
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
      reject(new Error(`${command} ${args.join(" ")} timed out\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 40_000);
    child.on("error", reject);
    child.stdin?.on("error", () => {});
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(options.input ?? "");
  });
}
