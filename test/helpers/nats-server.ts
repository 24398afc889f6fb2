import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tempDir } from "./tmp.js";
import { missingReason, requirePresent } from "./tools.js";

/** Where the tests look for the server: $NATS_SERVER_BIN, else Debian's package path or $PATH. */
function findBinary(): string | undefined {
  const candidates = [
    process.env.NATS_SERVER_BIN,
    "/usr/bin/nats-server",
    "/usr/local/bin/nats-server",
  ];
  for (const c of candidates) if (c && existsSync(c)) return c;
  const which = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  const found = which.stdout.trim();
  return found === "" ? undefined : found;
}

export const NATS_SERVER = findBinary();

/**
 * Why the NATS tests cannot run here, or undefined when they can. In CI a missing binary is a
 * failure, not a skip: `requireNatsServer()` throws there.
 */
export const natsSkipReason = missingReason(
  "nats-server",
  NATS_SERVER !== undefined,
  "apt-get install nats-server, or set $NATS_SERVER_BIN",
);

export function requireNatsServer(): string {
  requirePresent("nats-server", NATS_SERVER !== undefined);
  return NATS_SERVER!;
}

export interface NatsServerOptions {
  user?: string;
  pass?: string;
}

/** A real nats-server with JetStream on a random free port and its own store directory. */
export class NatsServer {
  private child: ChildProcess | undefined;
  private readonly store = tempDir("agent-chat-nats-");
  port = 0;

  private constructor(private readonly options: NatsServerOptions) {}

  static async start(options: NatsServerOptions = {}): Promise<NatsServer> {
    const server = new NatsServer(options);
    server.port = await freePort();
    await server.launch();
    return server;
  }

  /** `nats://127.0.0.1:<port>/<namespace>` */
  url(namespace: string): string {
    return `nats://127.0.0.1:${this.port}/${namespace}`;
  }

  private async launch(): Promise<void> {
    const args = ["-js", "-a", "127.0.0.1", "-p", String(this.port), "-sd", this.store.dir];
    if (this.options.user) args.push("--user", this.options.user);
    if (this.options.pass) args.push("--pass", this.options.pass);
    const child = spawn(requireNatsServer(), args, { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    // nats-server logs "Server is ready" once JetStream has recovered its streams and the port
    // accepts clients: the port alone accepts a little before the streams are back.
    await new Promise<void>((resolve, reject) => {
      let log = "";
      const timer = setTimeout(() => {
        child.off("exit", onExit);
        reject(new Error(`nats-server did not start: ${log}`));
      }, 10_000);
      const onExit = () => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited: ${log}`));
      };
      child.once("exit", onExit);
      child.stderr?.setEncoding("utf8").on("data", (d: string) => {
        log = (log + d).slice(-4000);
        if (log.includes("Server is ready")) {
          clearTimeout(timer);
          child.off("exit", onExit);
          resolve();
        }
      });
    });
  }

  /** Stops the server (SIGTERM, then SIGKILL) and keeps its store directory. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  }

  /**
   * Freezes the server (SIGSTOP) for `ms`: connections stay open and what clients send waits in
   * the socket, to be handled when it thaws, after the clients' requests have timed out.
   */
  async freeze(ms: number): Promise<void> {
    const child = this.child;
    if (!child) throw new Error("nats-server is not running");
    stopProcess(child);
    await new Promise((r) => setTimeout(r, ms));
    child.kill("SIGCONT");
  }

  /** Stops and starts again on the same port with the same store directory. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.store.cleanup();
  }
}

/**
 * A free port below the range the system hands out to outgoing connections
 * (`ip_local_port_range`): a server restarted on its port (a node killed and started again) must
 * find it still free, and on a busy machine any client connection may take a port of that range
 * the moment it is let go.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralLow();
  for (let tries = 0; tries < 50 && below > 10_000; tries++) {
    const port = 10_000 + Math.floor(Math.random() * (below - 10_000));
    if (await canListen(port)) return port;
  }
  return listenOn(0);
}

function ephemeralLow(): number {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0]);
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return listenOn(port).then(
    () => true,
    () => false,
  );
}

/** Listens on `port` (0: any) of 127.0.0.1, closes, and resolves with the port it had. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(port, "127.0.0.1", () => {
      const address = srv.address();
      const bound = typeof address === "object" && address ? address.port : 0;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * SIGSTOP, returning once the process is stopped (state T in /proc): the signal takes effect
 * asynchronously, and a process not yet stopped still answers what is sent to it right after.
 */
export function stopProcess(child: ChildProcess): void {
  child.kill("SIGSTOP");
  const pid = child.pid;
  if (pid === undefined) return;
  const tick = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 5_000;
  while (processState(pid) !== "T" && Date.now() < deadline) Atomics.wait(tick, 0, 0, 1);
}

function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2];
  } catch {
    return undefined;
  }
}
