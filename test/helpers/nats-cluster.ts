import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  freePort,
  NATS_SERVER,
  natsServerVersion,
  natsSkipReason,
  requireNatsServer,
  stopProcess,
} from "./nats-server.js";
import { RouteProxies } from "./route-proxy.js";
import { tempDir } from "./tmp.js";

/**
 * The cluster rows need nats-server 2.10 or newer: 2.9's raft can replace an acknowledged post
 * after a frozen leader thaws (docs/nats.md), and NATS patches only its two newest minor lines.
 */
const CLUSTER_MIN: [number, number] = [2, 10];
const version = natsServerVersion();
const tooOld =
  version !== undefined &&
  (version[0] < CLUSTER_MIN[0] || (version[0] === CLUSTER_MIN[0] && version[1] < CLUSTER_MIN[1]));
const tooOldWhy = `${NATS_SERVER} is nats-server ${version?.join(".")}, older than ${CLUSTER_MIN.join(".")} (set NATS_SERVER_BIN to a current one)`;

/**
 * Why the cluster tests cannot run here, or undefined when they can. In CI an old or missing
 * server is a failure, not a skip: `NatsCluster.start` throws there.
 */
export const clusterSkipReason: string | undefined =
  natsSkipReason ?? (tooOld && !process.env.CI ? `${tooOldWhy}; cluster tests skipped` : undefined);

/** The skip's reason, for a test name: " (…)" or "". */
export const clusterSkipNote = clusterSkipReason ? ` (${clusterSkipReason})` : "";

/** The server binary for a cluster: there, and 2.10 or newer (or this throws). */
export function requireClusterServer(): string {
  const bin = requireNatsServer();
  if (tooOld) throw new Error(`the cluster tests refuse to run: ${tooOldWhy}`);
  return bin;
}

/** What a node's monitoring port says about the JetStream meta group (GET /jsz). */
interface MetaCluster {
  leader?: string;
  cluster_size?: number;
  replicas?: Array<{ name: string; current?: boolean; offline?: boolean }>;
}

/** A stream's raft group as one node sees it (its leader; the leader lists its replicas). */
interface StreamGroup {
  leader?: string;
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
  /** The route address the others reach this node at: its own port, or a proxy in front. */
  advertisedRoutePort = 0;
  /** Told the server ID of each start (the route proxies follow a node by it). */
  onStarted: (id: string) => void = () => {};
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

  /** `routes`: every node's advertised route port (this one's too: the server skips itself). */
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
        `  advertise: 127.0.0.1:${this.advertisedRoutePort}`,
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
    const child = spawn(requireClusterServer(), ["-c", join(this.dir, "server.conf")], {
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
      let id: string | undefined;
      let ready = false;
      child.stderr?.setEncoding("utf8").on("data", (d: string) => {
        this.log = (this.log + d).slice(-8000);
        // Read at once: the log keeps only its tail, and the ID comes first.
        id ??= /\bID:\s+(N[A-Z0-9]+)/.exec(this.log)?.[1];
        if (!ready && this.log.includes("Server is ready")) {
          ready = true;
          clearTimeout(timer);
          child.off("exit", onExit);
          this.onStarted(id ?? "");
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

  /** The client URLs this node tells its clients about (GET /varz), or [] while it cannot tell. */
  async connectUrls(): Promise<string[]> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.httpPort}/varz`, {
        signal: AbortSignal.timeout(1000),
      });
      return ((await res.json()) as { connect_urls?: string[] }).connect_urls ?? [];
    } catch {
      return [];
    }
  }

  /** How many route connections this node has now (GET /routez). */
  async routes(): Promise<number> {
    const res = await fetch(`http://127.0.0.1:${this.httpPort}/routez`, {
      signal: AbortSignal.timeout(1000),
    });
    return ((await res.json()) as { num_routes: number }).num_routes;
  }

  /** The streams this node holds a replica of, each as this node sees its group (GET /jsz). */
  async streamGroups(): Promise<Map<string, StreamGroup>> {
    const res = await fetch(`http://127.0.0.1:${this.httpPort}/jsz?streams=true`, {
      signal: AbortSignal.timeout(1000),
    });
    const body = (await res.json()) as {
      account_details?: Array<{ stream_detail?: Array<{ name: string; cluster?: StreamGroup }> }>;
    };
    const out = new Map<string, StreamGroup>();
    for (const account of body.account_details ?? []) {
      for (const s of account.stream_detail ?? []) if (s.cluster) out.set(s.name, s.cluster);
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

  /** Present when started `partitionable`: every route goes through it. */
  private proxies: RouteProxies | undefined;

  private constructor(size: number) {
    this.nodes = Array.from(
      { length: size },
      (_, i) => new ClusterNode(`n${i + 1}`, join(this.store.dir, `n${i + 1}`)),
    );
  }

  /** Starts every node and resolves once the cluster is ready (see `waitReady`). */
  static async start(size = 3, { partitionable = false } = {}): Promise<NatsCluster> {
    const cluster = new NatsCluster(size);
    try {
      const proxies = partitionable ? new RouteProxies() : undefined;
      cluster.proxies = proxies;
      for (const node of cluster.nodes) {
        node.port = await freePort();
        node.routePort = await freePort();
        node.httpPort = await freePort();
        node.advertisedRoutePort = proxies
          ? await proxies.front(node.name, node.routePort)
          : node.routePort;
        if (proxies) node.onStarted = (id) => proxies.identify(node.name, id);
      }
      const routes = cluster.nodes.map((n) => n.advertisedRoutePort);
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
   * Resolves once every running node agrees on one meta leader, that leader sees each other
   * running node as a current peer (the cluster can create and serve replicated streams), and
   * every running node tells its clients of every running node: a client that connects now
   * learns the whole cluster, so a new namespace gets a copy on each node (just after start-up
   * a node may have heard of two only, and three copies would then be refused).
   * Polls with a deadline; never a fixed sleep.
   */
  async waitReady(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = this.nodes.filter((n) => n.running);
      const [metas, gossip] = await Promise.all([
        Promise.all(running.map((n) => n.meta())),
        Promise.all(running.map((n) => n.connectUrls())),
      ]);
      const leaders = new Set(metas.map((m) => m?.leader ?? ""));
      const leader = leaders.size === 1 ? [...leaders][0] : "";
      const leaderMeta = metas[running.findIndex((n) => n.name === leader)];
      const peers = new Set(
        (leaderMeta?.replicas ?? []).filter((r) => r.current && !r.offline).map((r) => r.name),
      );
      const others = running.filter((n) => n.name !== leader);
      const told = (urls: string[]) => running.every((n) => urls.includes(`127.0.0.1:${n.port}`));
      if (leader && leaderMeta && others.every((n) => peers.has(n.name)) && gossip.every(told)) {
        return;
      }
      if (Date.now() > deadline) {
        const exits = this.nodes.map((n) => n.exited ?? "").join(" ");
        throw new Error(`cluster not ready: ${JSON.stringify({ metas, gossip })} ${exits}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Waits until each of `streams` is settled after a fault ended: every running node names the
   * same running leader, and that leader sees every other running node as a current replica.
   * A node back from a freeze, a crash or a cut has called elections of its own meanwhile; its
   * higher term makes the leader step down once it rejoins (nats-server's raft has no pre-vote),
   * and while it catches up it does not stand for election. The next fault starts after that
   * election and that catch-up, as one fault at a time in a real cluster would.
   */
  async waitSettled(streams: string[], timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    for (;;) {
      const running = this.nodes.filter((n) => n.running);
      const views = await Promise.all(
        running.map((n) => n.streamGroups().catch(() => new Map<string, StreamGroup>())),
      );
      const unsettled = streams.filter((stream) => {
        const leaders = new Set(views.map((v) => v.get(stream)?.leader));
        const leader = running.findIndex((n) => n.name === [...leaders][0]);
        if (leaders.size !== 1 || leader < 0) return true;
        const current = new Set(
          (views[leader]?.get(stream)?.replicas ?? [])
            .filter((r) => r.current && !r.offline)
            .map((r) => r.name),
        );
        return running.some((n, i) => i !== leader && !current.has(n.name));
      });
      if (unsettled.length === 0) return;
      last = unsettled
        .map((s) => `${s}: ${JSON.stringify(views.map((v) => v.get(s) ?? null))}`)
        .join("; ");
      if (Date.now() > deadline) throw new Error(`not settled after ${timeoutMs} ms: ${last}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * The node that leads a stream now, as the cluster reports it (polls); `not` waits for a
   * leader other than that node (after it was killed or frozen).
   */
  async streamLeader(stream: string, not?: ClusterNode, timeoutMs = 30_000): Promise<ClusterNode> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const node of this.nodes.filter((n) => n.running && n !== not)) {
        const leader = await node
          .streamGroups()
          .then((m) => m.get(stream)?.leader)
          .catch(() => undefined);
        const found = this.nodes.find((n) => n.name === leader && n.running && n !== not);
        if (found) return found;
      }
      if (Date.now() > deadline) throw new Error(`no leader for stream ${stream}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Cuts `node` off from the other nodes (a partition): their routes close and are refused
   * until `heal`. Its clients stay connected to it. Needs a cluster started `partitionable`.
   */
  isolate(node: ClusterNode): void {
    if (!this.proxies) throw new Error("start the cluster with { partitionable: true }");
    this.proxies.isolate(node.name);
  }

  heal(): void {
    this.proxies?.heal();
  }

  /** Route connections the cuts have refused so far. */
  get refusedRoutes(): number {
    return this.proxies?.refused ?? 0;
  }

  /** Kills every node (thawing frozen ones first) and removes every store directory. */
  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    await this.proxies?.close();
    this.store.cleanup();
  }
}
