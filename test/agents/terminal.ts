import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
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
  /** Sends keys as tmux names them (`Enter`, `Down`, `C-c`). */
  keys(...keys: string[]): void;
  /**
   * Sends `key` until the screen matches `until`: a screen can be drawn before the tool reads
   * keys, and a key sent then is lost. Waits `patienceMs` for each press.
   */
  press(
    key: string,
    until: RegExp,
    options?: { patienceMs?: number; tries?: number },
  ): Promise<string>;
  type(text: string): void;
  /** Ends the tool and everything it started in its terminal, then the tmux server. */
  close(): Promise<void>;
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

/** Whether tmux can be run here (the tests that need it fail in CI without it). */
export function hasTmux(): boolean {
  return spawnSync("tmux", ["-V"], { stdio: "ignore" }).status === 0;
}

const POLL_MS = 100;

export function startTerminal(
  sandbox: Sandbox,
  command: string[],
  extraEnv: Record<string, string> = {},
): Terminal {
  // A socket of its own: no other test's session, and never the user's tmux server.
  const socket = `agent-chat-${randomUUID().slice(0, 8)}`;
  const env = { ...sandbox.env, ...extraEnv, TERM: "xterm-256color" };
  const tmux = (args: string[]) =>
    execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], {
      cwd: sandbox.project,
      env,
      encoding: "utf8",
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
    async waitFor(want, { refuse, timeoutMs = 60_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = screen();
        if (refuse?.test(now)) throw new Error(`the screen shows ${refuse}:\n${now}`);
        if (want.test(now)) return now;
        if (Date.now() > deadline) throw new Error(`no ${want} on the screen:\n${now}`);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    },
    async press(key, until, { patienceMs = 3_000, tries = 5 } = {}) {
      for (let i = 1; ; i++) {
        tmux(["send-keys", "-t", "t", key]);
        try {
          return await this.waitFor(until, { timeoutMs: patienceMs });
        } catch (err) {
          if (i >= tries) throw err;
        }
      }
    },
    keys: (...keys) => {
      tmux(["send-keys", "-t", "t", ...keys]);
    },
    type: (text) => {
      tmux(["send-keys", "-t", "t", "-l", text]);
    },
    close: async () => {
      // The tool leads the pane's process group, with the MCP servers and hooks it started:
      // all of it ends with the test (Gemini CLI outlives a closed terminal for a while).
      let group: number;
      try {
        group = Number(tmux(["display-message", "-p", "-t", "t", "#{pane_pid}"]).trim());
      } catch {
        return; // the tool and its terminal are gone already
      }
      signalGroup(group, "SIGTERM");
      for (let i = 0; i < 50 && signalGroup(group, 0); i++) {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      signalGroup(group, "SIGKILL");
      try {
        tmux(["kill-server"]);
      } catch {
        // The server ends by itself with its last session.
      }
    },
  };
}
