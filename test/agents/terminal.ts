import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { requirePresent } from "../helpers/tools.js";
import type { Sandbox } from "./sandbox.js";

/**
 * A tool run as a user runs it: in a terminal (a tmux session of its own, on a tmux server of
 * its own), read from the screen and answered by keystroke. The tool's environment is the
 * sandbox's, as the tmux server is started with it.
 */
export interface Terminal {
  /** The screen as it is now, one line per row, trailing blanks cut. */
  screen(): string;
  /**
   * Waits until the screen matches `want`; throws, with the screen, when it matches `refuse`
   * first (a question the test must never meet) or `timeoutMs` passes.
   */
  waitFor(want: RegExp, options?: { refuse?: RegExp; timeoutMs?: number }): Promise<string>;
  /**
   * Sends one key as tmux names it (`Enter`, `Down`, `2`) and waits until the screen matches
   * `until`. A key can be lost (sent while the tool switches its terminal to raw mode, which
   * drops pending input): only when the screen has not moved at all for `patienceMs` after a
   * send is the key sent again, at most `tries` times in all. A screen that moved but does not
   * match yet is the tool at work, and is waited for up to `timeoutMs`.
   */
  press(key: string, until: RegExp, options?: PressOptions): Promise<string>;
  /** Types `text` literally (as `press` does a key) until the screen matches `until`. */
  type(text: string, until: RegExp, options?: PressOptions): Promise<string>;
  /** Ends the tool and everything it started in its terminal, then the tmux server. */
  close(): Promise<void>;
}

export interface PressOptions {
  /** A question the test must never meet: throws as soon as the screen shows it. */
  refuse?: RegExp;
  patienceMs?: number;
  tries?: number;
  timeoutMs?: number;
}

/** Sends `signal` to a process group; whether one was there. */
function signalGroup(group: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false;
  }
}

/** Whether tmux can be run here (without it the tests that need it fail in CI, skip elsewhere). */
export function hasTmux(): boolean {
  return spawnSync("tmux", ["-V"], { stdio: "ignore" }).status === 0;
}

const POLL_MS = 100;
const pause = () => new Promise((resolve) => setTimeout(resolve, POLL_MS));

/** The screen, checked for `refuse` first; throws past `deadline`. */
async function watch(
  screen: () => string,
  done: (now: string) => boolean,
  want: RegExp,
  { refuse, deadline }: { refuse?: RegExp; deadline: number },
): Promise<string> {
  for (;;) {
    const now = screen();
    if (refuse?.test(now)) throw new Error(`the screen shows ${refuse}:\n${now}`);
    if (want.test(now) || done(now)) return now;
    if (Date.now() > deadline) throw new Error(`no ${want} on the screen:\n${now}`);
    await pause();
  }
}

/** Runs `send` until the screen matches `until`; again only while the screen stands still. */
async function sendUntil(
  screen: () => string,
  send: () => void,
  until: RegExp,
  options: PressOptions = {},
): Promise<string> {
  const { refuse, patienceMs = 5_000, tries = 4, timeoutMs = 90_000 } = options;
  const deadline = Date.now() + timeoutMs;
  for (let sent = 1; ; sent++) {
    const before = screen();
    send();
    const patience = Date.now() + patienceMs;
    const stood = (now: string) => now === before && Date.now() > patience;
    const now = await watch(screen, stood, until, { refuse, deadline });
    if (until.test(now)) return now;
    if (sent >= tries) throw new Error(`the screen did not move after ${sent} sends:\n${now}`);
  }
}

export function startTerminal(
  sandbox: Sandbox,
  command: string[],
  extraEnv: Record<string, string> = {},
): Terminal {
  requirePresent("tmux", hasTmux());
  // A socket of its own: no other test's session, and never the user's tmux server.
  const socket = `agent-chat-${randomUUID().slice(0, 8)}`;
  // None of the user's tmux settings; a tool that exits leaves its last screen to read.
  const conf = join(sandbox.dir, `${socket}.conf`);
  writeFileSync(conf, "set-option -g remain-on-exit on\n");
  const env = { ...sandbox.env, ...extraEnv, TERM: "xterm-256color" };
  const tmux = (args: string[]) =>
    execFileSync("tmux", ["-L", socket, "-f", conf, ...args], {
      cwd: sandbox.project,
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  tmux(
    ["new-session", "-d", "-s", "t", "-x", "160", "-y", "50", "-c", sandbox.project, "--"].concat(
      command,
    ),
  );
  const screen = () =>
    tmux(["capture-pane", "-p", "-t", "t"])
      .split("\n")
      .map((line) => line.trimEnd())
      .join("\n")
      .trimEnd();
  return {
    screen,
    waitFor: (want, { refuse, timeoutMs = 90_000 } = {}) =>
      watch(screen, () => false, want, { refuse, deadline: Date.now() + timeoutMs }),
    press: (key, until, options) =>
      sendUntil(screen, () => tmux(["send-keys", "-t", "t", key]), until, options),
    type: (text, until, options) =>
      sendUntil(screen, () => tmux(["send-keys", "-t", "t", "-l", text]), until, options),
    close: () => closeTerminal(tmux),
  };
}

/**
 * The tool leads the pane's process group, with the MCP servers and hooks it started: all of
 * it ends with the test (Gemini CLI outlives a closed terminal for a while), then the server.
 */
async function closeTerminal(tmux: (args: string[]) => string): Promise<void> {
  let group: number;
  try {
    group = Number(tmux(["display-message", "-p", "-t", "t", "#{pane_pid}"]).trim());
  } catch {
    return; // the tool and its terminal are gone already
  }
  signalGroup(group, "SIGTERM");
  for (let i = 0; i < 50 && signalGroup(group, 0); i++) await pause();
  signalGroup(group, "SIGKILL");
  try {
    tmux(["kill-server"]);
  } catch {
    // The server ends by itself with its last session.
  }
}
