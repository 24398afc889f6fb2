import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, requireNatsServer, stopProcess } from "./nats-server.js";
import { tempDir } from "./tmp.js";

/** What a node's monitoring port says about the JetStream meta group (GET /jsz). */
interface MetaCluster {
  leader?: string;
  cluster_size?: number;
  replicas?: Array<{ name: string; current?: boolean; offline?: boolean }>;
}

/** One nats-server of a test cluster: its own ports, config and store directory. */
export class ClusterNode {
  private child: ChildProcess | undefined;
  private log = "";
  /** Why the node ended on its own, when it did (for the readiness error). */
  exited: string | undefined;
  port = 0;
  routePort = 0;
  httpPort = 0;

  constructor(
    readonly name: string,
    readonly dir: string,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** `nats://127.0.0.1:<port>` */
  get server(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  writeConfig(clusterName: string, routes: number[]): string {
    const file = join(this.dir, "server.conf");
    writeFileSync(
      file,
      [
        `server_name: ${this.name}`,
        `listen: 127.0.0.1:${this.port}`,
        `http: 127.0.0.1:${this.httpPort}`,
        `jetstream { store_dir: "${join(this.dir, "js")}" }`,
        "cluster {",
        `  name: ${clusterName}`,
        `  listen: 127.0.0.1:${this.routePort}`,
        `  routes: [${routes.map((p) => `nats-route://127.0.0.1:${p}`).join(", ")}]`,
        "}",
        "",
      ].join("\n"),
    );
    return file;
  }

  /** Starts the server and resolves once it accepts clients ("Server is ready"). */
  async start(): Promise<void> {
    if (this.running) return;
    const child = spawn(requireNatsServer(), ["-c", join(this.dir, "server.conf")], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.child = child;
    this.log = "";
    child.once("exit", (code, signal) => {
      if (this.child === child)
        this.exited = `${this.name} exited (${code ?? signal}): ${this.log.slice(-1500)}`;
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.off("exit", onExit);
        reject(new Error(`${this.name} did not start: ${this.log}`));
      }, 15_000);
      const onExit = () => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited: ${this.log}`));
      };
      child.once("exit", onExit);
      child.stderr?.setEncoding("utf8").on("data", (d: string) => {
        this.log = (this.log + d).slice(-8000);
        if (this.log.includes("Server is ready")) {
          clearTimeout(timer);
          child.off("exit", onExit);
          resolve();
        }
      });
    });
  }

  /** SIGTERM (SIGKILL after 3 s); the store directory stays for a restart. */
  async stop(): Promise<void> {
    await this.end("SIGTERM");
  }

  /** SIGKILL: a crash, nothing flushed or handed over. */
  async kill(): Promise<void> {
    await this.end("SIGKILL");
  }

  private async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGCONT");
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  }

  /** SIGSTOP: the process is frozen with its sockets open, as a node cut off by a partition. */
  pause(): void {
    if (this.child) stopProcess(this.child);
  }

  resume(): void {
    this.child?.kill("SIGCONT");
  }

  /** The meta group as this node sees it, or undefined while it cannot tell. */
  async meta(): Promise<MetaCluster | undefined> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.httpPort}/jsz`, {
        signal: AbortSignal.timeout(1000),
      });
      const body = (await res.json()) as { meta_cluster?: MetaCluster };
      return body.meta_cluster;
    } catch {
      return undefined;
    }
  }

  /** The leaders of the streams this node holds a replica of (GET /jsz?streams=true). */
  async streamLeaders(): Promise<Map<string, string>> {
    const res = await fetch(`http://127.0.0.1:${this.httpPort}/jsz?streams=true`, {
      signal: AbortSignal.timeout(1000),
    });
    const body = (await res.json()) as {
      account_details?: Array<{
        stream_detail?: Array<{ name: string; cluster?: { leader?: string } }>;
      }>;
    };
    const out = new Map<string, string>();
    for (const account of body.account_details ?? []) {
      for (const s of account.stream_detail ?? []) {
        if (s.cluster?.leader) out.set(s.name, s.cluster.leader);
      }
    }
    return out;
  }
}

/**
 * A 3-node JetStream cluster of real nats-servers on random local ports (client, route and
 * monitoring port each), routes between all of them, each node with its own store directory.
 */
export class NatsCluster {
  private readonly store = tempDir("agent-chat-cluster-");
  readonly nodes: ClusterNode[];

  get dir(): string {
    return this.store.dir;
  }

  private constructor(size: number) {
    this.nodes = Array.from(
      { length: size },
      (_, i) => new ClusterNode(`n${i + 1}`, join(this.store.dir, `n${i + 1}`)),
    );
  }

  /** Starts every node and resolves once the cluster is ready (see `waitReady`). */
  static async start(size = 3): Promise<NatsCluster> {
    const cluster = new NatsCluster(size);
    try {
      for (const node of cluster.nodes) {
        node.port = await freePort();
        node.routePort = await freePort();
        node.httpPort = await freePort();
      }
      const routes = cluster.nodes.map((n) => n.routePort);
      for (const node of cluster.nodes) {
        mkdirSync(node.dir, { recursive: true });
        node.writeConfig("agentchat-test", routes);
      }
      await Promise.all(cluster.nodes.map((n) => n.start()));
      await cluster.waitReady();
      return cluster;
    } catch (err) {
      await cluster.dispose();
      throw err;
    }
  }

  /** Seeds of every node: `nats://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/<namespace>`. */
  url(namespace: string, nodes: ClusterNode[] = this.nodes): string {
    return `nats://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}/${namespace}`;
  }

  /**
   * Resolves once every running node agrees on one meta leader, and that leader sees each
   * other running node as a current peer: the cluster can create and serve replicated streams.
   * Polls with a deadline; never a fixed sleep.
   */
  async waitReady(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    for (;;) {
      const running = this.nodes.filter((n) => n.running);
      const metas = await Promise.all(running.map((n) => n.meta()));
      const leaders = new Set(metas.map((m) => m?.leader ?? ""));
      const leader = leaders.size === 1 ? [...leaders][0] : "";
      const leaderMeta = metas[running.findIndex((n) => n.name === leader)];
      const peers = new Set(
        (leaderMeta?.replicas ?? []).filter((r) => r.current && !r.offline).map((r) => r.name),
      );
      const others = running.filter((n) => n.name !== leader);
      if (leader && leaderMeta && others.every((n) => peers.has(n.name))) return;
      last = `${JSON.stringify(metas)} ${this.nodes.map((n) => n.exited ?? "").join(" ")}`;
      if (Date.now() > deadline) throw new Error(`cluster not ready: ${last}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Waits until each of `streams` has a leader again. A node thawed after a freeze can call
   * elections in the groups it follows, and nats-server 2.9 may leave one without a leader for
   * ten seconds or more (commands meanwhile answer "temporarily unavailable").
   */
  async waitLed(streams: string[], timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const node of this.nodes.filter((n) => n.running)) {
        const leaders = await node.streamLeaders().catch(() => new Map<string, string>());
        if (streams.every((s) => leaders.has(s))) return;
      }
      if (Date.now() > deadline) throw new Error(`no leader for one of ${streams.join(", ")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * The node that leads a stream now, as the cluster reports it (polls); `not` waits for a
   * leader other than that node (after it was killed or frozen).
   */
  async streamLeader(stream: string, not?: ClusterNode, timeoutMs = 20_000): Promise<ClusterNode> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const node of this.nodes.filter((n) => n.running && n !== not)) {
        const leader = await node
          .streamLeaders()
          .then((m) => m.get(stream))
          .catch(() => undefined);
        const found = this.nodes.find((n) => n.name === leader && n.running && n !== not);
        if (found) return found;
      }
      if (Date.now() > deadline) throw new Error(`no leader for stream ${stream}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Kills every node (thawing frozen ones first) and removes every store directory. */
  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    this.store.cleanup();
  }
}
