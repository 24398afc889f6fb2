import { mkdtempSync, readFileSync, rmSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { IPty } from "@lydell/node-pty";
import { UnreadCounter } from "../client/unread.js";
import { memberChannels } from "../client/wait-all.js";
import { NotifiedRecorder } from "../features/delivery/mcp.js";
import { waitForNews } from "../hosts/wake.js";
import type { Store } from "../store/types.js";
import { lastSeqs } from "./hook-wait.js";
import type { TurnState } from "./turn-mark.js";

/** The one line typed into an idle session: ours alone, never a message's text. */
export function runNotice(agent: string): string {
  return (
    `[agent-chat] New messages for ${agent} arrived while you were idle. Read them with the ` +
    `chat_read tool (or: agent-chat read CHANNEL --as ${agent}).`
  );
}

/**
 * Between the notice and its Enter: a TUI (Codex, Gemini CLI) takes keys that come in one burst
 * for a paste, in which Enter is a new line, not a submit.
 */
const ENTER_AFTER_MS = 200;
/** How long after Enter the prompt hook may take to mark the turn started, and how often. */
const TURN_START_WAIT_MS = 1_500;
const ENTER_TRIES = 3;
/** The longest wait for the tool to draw a typed line before its Enter goes anyway. */
const ECHO_WAIT_MS = 2_000;

/**
 * After a line the user sent, how long the tool's prompt hook has to mark a turn started before
 * the line is taken for one that opens none (a local command such as `/help`).
 */
const NO_TURN_AFTER_MS = 3_000;

/**
 * What a terminal sends by itself, never typed: answers to the tool's queries (device
 * attributes and modes, `CSI ? … c`, `CSI ? … $ y`, `CSI ? … u`; the terminal's name and
 * capabilities, `DCS … ST`, as tmux answers `XTVERSION`; colours, `OSC … BEL`), cursor position
 * reports, focus in and out, mouse reports. Anything else with an escape is the user's (an arrow
 * recalling history, a paste, a word deleted).
 */
const TERMINAL_REPORT =
  /\x1b\[[?>=][\d;:$]*[\x40-\x7e]|\x1bP[^\x1b]*\x1b\\|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[\d+;\d+R|\x1b\[[IO]|\x1b\[<\d+;\d+;\d+[Mm]/g;

/** How long a round of `waitForNews` lasts before it starts over (it never needs to end). */
const NEWS_ROUND_MS = 3_600_000;

/**
 * When the session may be typed into (docs/delivery.md, "run"): the user's line is known to be
 * empty, and
 * - where the tool's hooks mark its turns (`turn`, under setup's hooks): its stop hook marked
 *   the turn ended since the last prompt was sent. During an open turn nothing else counts: a
 *   question the tool asks then ("Allow execution?") may sit on a quiet screen, and a line
 *   typed into it would answer it;
 * - else: nothing came out of the agent and nothing was typed for `quietMs` (a screen that
 *   keeps redrawing is slower to count).
 *
 * The line is known empty when nothing was typed since the last Enter or Ctrl-C, or what was
 * typed was plain characters all erased again with Backspace. Anything else (an arrow that may
 * recall history, a paste, a key with an escape) means the user is typing until Enter or
 * Ctrl-C: never a notice glued to a draft.
 */
export class IdleGate {
  private lastActivity = Date.now();
  /** Plain characters typed since the line was last known empty, less those erased. */
  private typed = 0;
  /** Whether something typed since then leaves the line's content unknown. */
  private lineUnknown = false;
  private lastSubmit = 0;
  private turnEnded = -1;
  private turnStarted = 0;

  constructor(private readonly quietMs: number) {}

  /** When the agent last printed, on the `performance.now()` clock. */
  outputAt = 0;

  /** Whether the tool has turned on bracketed paste (it reads a marked paste as one). */
  bracketedPaste = false;

  output(data = ""): void {
    this.lastActivity = Date.now();
    this.outputAt = performance.now();
    const on = data.lastIndexOf("\x1b[?2004h");
    const off = data.lastIndexOf("\x1b[?2004l");
    if (on !== off) this.bracketedPaste = on > off;
  }

  keys(data: string): void {
    const typed = data.replace(TERMINAL_REPORT, "");
    if (typed === "") return; // the terminal answering the tool, not the user
    this.lastActivity = Date.now();
    if (/[\r\n\x03\x04]$/.test(typed)) {
      if (this.lineDirty && typed.endsWith("\r")) this.lastSubmit = Date.now();
      [this.typed, this.lineUnknown] = [0, false];
      return;
    }
    if (typed.includes("\x1b")) this.lineUnknown = true;
    for (const char of typed) {
      if (char === "\x7f" || char === "\b") this.typed = Math.max(0, this.typed - 1);
      else if (char < " ")
        this.lineUnknown = true; // Tab completes, Ctrl-U, Ctrl-W: unknown
      else this.typed++;
    }
  }

  private get lineDirty(): boolean {
    return this.lineUnknown || this.typed > 0;
  }

  /** A line of ours was sent as a prompt: the tool is at work until its hook says otherwise. */
  submitted(): void {
    this.lastSubmit = Date.now();
    this.lastActivity = Date.now();
  }

  /** The tool's hook marked its turn started or ended. */
  turn(state: TurnState): void {
    if (state === "idle") this.turnEnded = Date.now();
    else this.turnStarted = Date.now();
  }

  /** Whether the tool's hooks mark its turns (then a turn started since `since` is seen). */
  get marksTurns(): boolean {
    return this.turnEnded >= 0 || this.turnStarted > 0;
  }

  startedSince(since: number): boolean {
    return this.turnStarted >= since;
  }

  /**
   * Milliseconds until it is idle if nothing happens meanwhile; undefined while a line is half
   * typed or the tool's turn is open (only its hook can end that).
   */
  idleIn(): number | undefined {
    if (this.lineDirty) return undefined;
    const quiet = Math.max(0, this.lastActivity + this.quietMs - Date.now());
    if (!this.marksTurns) return quiet;
    if (this.turnStarted > this.turnEnded) return undefined;
    if (this.turnEnded >= this.lastSubmit) return 0;
    // A line sent since the turn ended that started no turn (a local command) leaves it idle.
    return Math.max(quiet, this.lastSubmit + NO_TURN_AFTER_MS - Date.now());
  }
}

/**
 * A private folder for the turn marks of the agent's hooks (see turn-mark.ts): `path` goes in
 * the agent's environment; each new mark in it reaches the gate; `close` removes the folder.
 */
export function watchTurnMarks(gate: IdleGate): { path: string; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), "agent-chat-run-"));
  const path = join(dir, "turn");
  let last = "";
  // A mark lands by a rename onto `turn`; the events of its temporary file are not news.
  const watcher = watch(dir, (_event, name) => {
    if (name !== basename(path)) return;
    let state: string;
    try {
      state = readFileSync(path, "utf8");
    } catch {
      return;
    }
    if (state === last || (state !== "busy" && state !== "idle")) return;
    last = state;
    gate.turn(state);
  });
  return {
    path,
    close: () => {
      watcher.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface AgentRunIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
}

/**
 * `agent-chat run`: the agent's CLI under a pseudo-terminal that passes the user's keys, the
 * agent's output and resizes through unchanged, and that types `runNotice` plus Enter as a user
 * turn when a message for the agent arrives while the session is idle (`IdleGate`). Messages that
 * arrive before the session is idle again are one batch: one notice. Resolves with the child's
 * exit code (128 + the signal that ended it).
 */
export async function runUnderPty(
  store: Store,
  agent: string,
  pty: IPty,
  gate: IdleGate,
  io: AgentRunIo,
): Promise<number> {
  let exited = false;
  const exit = new Promise<number>((resolve) =>
    pty.onExit(({ exitCode, signal }) => {
      exited = true;
      resolve(signal ? 128 + signal : exitCode);
    }),
  );
  const detach = connectTerminal(pty, gate, io);
  const waking = wakeLoop(store, agent, pty, gate, () => !exited);
  try {
    return await exit;
  } finally {
    detach();
    await waking.catch(() => {});
  }
}

/** The signals that end a terminal program from outside; run hands them to the agent. */
const PASSED_SIGNALS: readonly NodeJS.Signals[] = ["SIGTERM", "SIGHUP"];

/** The user's terminal and the pseudo-terminal joined; returns what undoes it. */
function connectTerminal(pty: IPty, gate: IdleGate, io: AgentRunIo): () => void {
  const { stdin, stdout } = io;
  const raw = stdin.isTTY === true;
  if (raw) stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  const onKeys = (data: string) => {
    gate.keys(data);
    pty.write(data);
  };
  // A closed pipe is the end of the user's input: the terminal's end-of-file key.
  const onEnd = () => pty.write("\x04");
  const onResize = () => pty.resize(stdout.columns, stdout.rows);
  const output = pty.onData((data) => {
    gate.output(data);
    stdout.write(data);
  });
  // Ended from outside (kill, a closed terminal), run ends the agent the same way and still
  // waits for it, so that nothing it started outlives the session unseen.
  const onSignal = (signal: NodeJS.Signals) => pty.kill(signal);
  for (const signal of PASSED_SIGNALS) process.on(signal, onSignal);
  stdin.on("data", onKeys);
  stdin.on("end", onEnd);
  stdout.on("resize", onResize);
  stdin.resume();
  return () => {
    output.dispose();
    stdin.off("data", onKeys);
    stdin.off("end", onEnd);
    stdout.off("resize", onResize);
    for (const signal of PASSED_SIGNALS) process.off(signal, onSignal);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
  };
}

/** Until the child ends: park for news, wait for the session to be idle, type one notice. */
async function wakeLoop(
  store: Store,
  agent: string,
  pty: IPty,
  gate: IdleGate,
  alive: () => boolean,
): Promise<void> {
  let told = await lastSeqs(store, await memberChannels(store, agent));
  while (alive()) {
    const result = await waitForNews(store, agent, {
      told,
      timeoutMs: NEWS_ROUND_MS,
      pollMs: 1000,
      stillWanted: async () => alive(),
    });
    if (result.kind !== "news") continue;
    await whenIdle(gate, alive);
    if (!alive()) return;
    // Everything that arrived up to now is this one notice's batch.
    const counter = new UnreadCounter(store, agent);
    await counter.count();
    told = await lastSeqs(store, await memberChannels(store, agent));
    const { channel, seq } = result.message;
    told[channel] = Math.max(told[channel] ?? 0, seq);
    await typeLine(pty, gate, runNotice(agent));
    gate.submitted();
    await new NotifiedRecorder(store, agent).told(counter.upTo);
  }
}

async function whenIdle(gate: IdleGate, alive: () => boolean): Promise<void> {
  for (;;) {
    const wait = gate.idleIn();
    if (wait === 0 || !alive()) return;
    // Looked at again at least every 100 ms: a half-typed line may be sent or cleared, and the
    // tool's hook may mark its turn ended before the quiet period is over.
    await new Promise((resolve) => setTimeout(resolve, Math.min(wait ?? 100, 100)));
  }
}

/**
 * The line, then Enter once the tool has drawn it (or `ECHO_WAIT_MS` passed). A TUI that takes
 * a burst of keys for a paste may count an Enter soon after it as part of it, a new line (seen
 * in Codex on a loaded machine: the notice left unsent in its input box): where the tool has
 * turned bracketed paste on, the line goes as a marked paste, so that its end is certain.
 */
async function typeLine(pty: IPty, gate: IdleGate, line: string): Promise<void> {
  const typed = performance.now();
  pty.write(gate.bracketedPaste ? `\x1b[200~${line}\x1b[201~` : line);
  const deadline = typed + ECHO_WAIT_MS;
  while (gate.outputAt <= typed && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await new Promise((resolve) => setTimeout(resolve, ENTER_AFTER_MS));
  await pressEnter(pty, gate);
}

/**
 * Enter, again while the tool's prompt hook does not mark a turn started: a TUI may still take
 * an Enter soon after a paste for a new line (seen in Gemini CLI on a loaded machine, the
 * notice left in its input box). An Enter too many meets an empty input box, which sends
 * nothing. A tool without turn marks gets one Enter.
 */
async function pressEnter(pty: IPty, gate: IdleGate): Promise<void> {
  const since = Date.now();
  for (let tries = 1; ; tries++) {
    pty.write("\r");
    if (!gate.marksTurns || tries === ENTER_TRIES) return;
    const deadline = performance.now() + TURN_START_WAIT_MS;
    while (!gate.startedSince(since) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (gate.startedSince(since)) return;
  }
}
