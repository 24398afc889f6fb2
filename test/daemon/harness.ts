import type { ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterEach } from "vitest";
import { LineSplitter } from "../../src/core/ndjson.js";
import { DEFAULT_MAX_RESPONSE_BYTES } from "../../src/daemon/client.js";
import { type CliResult, collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/** A temp world for one daemon: root, runtime dir and HOME, never the user's own. */
export interface World {
  dir: string;
  root: string;
  env: WorldEnv;
  cleanup(): void;
  cli(args: string[], extra?: Record<string, string | undefined>): Promise<CliResult>;
}

export interface WorldEnv {
  AGENT_CHAT_ROOT: string;
  XDG_RUNTIME_DIR: string;
  HOME: string;
  [name: string]: string;
}

export function makeWorld(): World {
  const tmp = tempDir("agent-chat-daemon-");
  const root = join(tmp.dir, "root");
  const home = join(tmp.dir, "home");
  mkdirSync(join(tmp.dir, "run"), { recursive: true });
  mkdirSync(home, { recursive: true });
  const env: WorldEnv = {
    AGENT_CHAT_ROOT: root,
    XDG_RUNTIME_DIR: join(tmp.dir, "run"),
    HOME: home,
    AGENT_CHAT_SOCKET: "",
    AGENT_CHAT_DAEMON: "",
  };
  return {
    dir: tmp.dir,
    root,
    env,
    cleanup: tmp.cleanup,
    cli: (args, extra = {}) => runCli(args, { env: { ...env, ...extra } }),
  };
}

export interface Daemon {
  child: ChildProcess;
  sockets: string[];
  socket: string;
  /** SIGTERM and the exit result. */
  stop(signal?: NodeJS.Signals): Promise<CliResult>;
  exited: Promise<CliResult>;
}

/** Starts the built CLI's `serve --json` and resolves once it says it is listening. */
export async function startDaemon(
  world: World,
  args: string[] = [],
  cwd?: string,
): Promise<Daemon> {
  const child = startCli(["--json", "serve", ...args], {
    env: world.env,
    timeoutMs: 60_000,
    ...(cwd !== undefined && { cwd }),
  });
  const exited = collect(child);
  const first = await new Promise<string>((resolve, reject) => {
    const lines = new LineSplitter({
      maxLineBytes: 64 * 1024,
      onLine: (line) => {
        lines.close();
        child.stdout?.off("data", onData);
        resolve(line.toString());
      },
      onTooLong: () => reject(new Error("serve's first line is longer than 64 KiB")),
    });
    // collect() has set stdout to text.
    const onData = (d: Buffer | string) => lines.push(Buffer.from(d));
    child.stdout?.on("data", onData);
    exited.then((r) => reject(new Error(`serve exited ${r.code}: ${r.stderr}`)), reject);
  });
  const event = JSON.parse(first) as { event: string; sockets: string[] };
  return {
    child,
    sockets: event.sockets,
    socket: event.sockets[0]!,
    exited,
    stop: (signal = "SIGTERM") => {
      child.kill(signal);
      return exited;
    },
  };
}

/** A raw NDJSON client on a plain `net` socket: what any other language would do. */
export class RawClient {
  private readonly lines: string[] = [];
  private readonly splitter = new LineSplitter({
    maxLineBytes: DEFAULT_MAX_RESPONSE_BYTES,
    onLine: (line) => this.lines.push(line.toString()),
    onTooLong: () => {
      this.failure = `the daemon sent a line longer than ${DEFAULT_MAX_RESPONSE_BYTES} bytes`;
      this.socket.destroy();
    },
  });
  private failure: string | undefined;
  private waiters: Array<() => void> = [];
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on("data", (d: Buffer) => {
      this.splitter.push(d);
      this.wake();
    });
    socket.on("error", () => {});
    this.closed = new Promise((resolve) => socket.on("close", () => resolve()));
    void this.closed.then(() => this.wake());
  }

  static connect(path: string): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = connect(path);
      s.once("connect", () => resolve(new RawClient(s)));
      s.once("error", reject);
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  send(value: unknown): void {
    this.socket.write(`${JSON.stringify(value)}\n`);
  }

  /** The next line from the daemon, parsed; rejects after `timeoutMs` or when the socket closes. */
  async next(timeoutMs = 5000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length === 0) {
      if (this.socket.destroyed) throw new Error(this.failure ?? "socket closed");
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("no line from the daemon in time");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return JSON.parse(this.lines.shift()!) as Record<string, unknown>;
  }

  /** Sends a request and returns its response. */
  async request(value: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.send(value);
    return this.next();
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

export function envelope(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    channel: "mission.delta",
    sender: "frontend.agent",
    body: "handoff complete",
    timestamp: "2025-03-04T05:30:00Z",
    ...fields,
  };
}

export function makeWorldDirOpen(world: World): void {
  chmodSync(world.dir, 0o755);
}

/**
 * Worlds and daemons for one test file, all torn down after each test: `world()` makes a fresh
 * world, `serve(world)` starts a daemon in it.
 */
export function daemonFixture(): {
  world: () => World;
  serve: (w: World, args?: string[], cwd?: string) => Promise<Daemon>;
} {
  const worlds: World[] = [];
  const daemons: Daemon[] = [];
  afterEach(() => {
    for (const d of daemons.splice(0)) d.child.kill("SIGKILL");
    for (const w of worlds.splice(0)) w.cleanup();
  });
  return {
    world: () => {
      const w = makeWorld();
      worlds.push(w);
      return w;
    },
    serve: async (w, args = [], cwd) => {
      const d = await startDaemon(w, args, cwd);
      daemons.push(d);
      return d;
    },
  };
}
