import { createConnection, createServer, type Server, type Socket } from "node:net";

/** One route connection through a proxy: the node it reaches, and the node that dialled it. */
interface Link {
  target: string;
  /** The dialling node's server ID, once its CONNECT has been read; undefined until then. */
  dialer: string | undefined;
  sockets: Socket[];
}

/**
 * TCP proxies in front of the route ports of a test cluster, so that a test can cut a node off
 * from the others (a partition) and heal it, with no root rights and on any OS. Each node has
 * one front proxy and advertises it as its route address: every route to it, configured or
 * learned from gossip, goes through that proxy. A route's dialer is known from its first line
 * (`CONNECT {"name":"<server id>",…}`, sent before any compression), so a cut can close and
 * refuse the routes a node dials as well as those dialled to it.
 */
export class RouteProxies {
  private readonly servers = new Map<string, Server>();
  private readonly links = new Set<Link>();
  /** Server IDs of the nodes cut off now (a node gets a new ID on each start). */
  private readonly cut = new Set<string>();
  /** The server ID of each node name, as its latest start logged it. */
  private readonly ids = new Map<string, string>();
  /** Route connections refused by a cut so far (a test waits on it, not on the clock). */
  refused = 0;

  /** Starts the proxy in front of `name`, forwarding to its route port; returns its port. */
  async front(name: string, routePort: number): Promise<number> {
    const server = createServer((socket) => this.accept(name, routePort, socket));
    this.servers.set(name, server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    return typeof address === "object" && address ? address.port : 0;
  }

  /** Notes the server ID a node started with (a cut follows the node across restarts). */
  identify(name: string, id: string): void {
    const old = this.ids.get(name);
    if (old !== undefined && this.cut.delete(old)) this.cut.add(id);
    this.ids.set(name, id);
  }

  /** Cuts `name` off from every other node: its routes close, new ones are refused. */
  isolate(name: string): void {
    const id = this.ids.get(name);
    if (id === undefined) throw new Error(`node ${name} has not started`);
    this.cut.add(id);
    for (const link of this.links) if (this.severed(link)) this.drop(link);
  }

  /** Lets every node reach every other again (the servers re-dial their routes). */
  heal(): void {
    this.cut.clear();
  }

  async close(): Promise<void> {
    for (const link of this.links) this.drop(link);
    await Promise.all(
      [...this.servers.values()].map((s) => new Promise<void>((r) => s.close(() => r()))),
    );
  }

  private severed(link: Link): boolean {
    const target = this.ids.get(link.target);
    return (
      (target !== undefined && this.cut.has(target)) ||
      (link.dialer !== undefined && this.cut.has(link.dialer))
    );
  }

  private drop(link: Link): void {
    for (const socket of link.sockets) socket.destroy();
    this.links.delete(link);
  }

  /** Forwards one route connection; what the dialer sends waits until its CONNECT is read. */
  private accept(target: string, routePort: number, inbound: Socket): void {
    const upstream = createConnection(routePort, "127.0.0.1");
    const link: Link = { target, dialer: undefined, sockets: [inbound, upstream] };
    this.links.add(link);
    for (const socket of link.sockets) {
      socket.on("error", () => this.drop(link));
      socket.on("close", () => this.drop(link));
    }
    if (this.severed(link)) {
      this.refused++;
      this.drop(link);
      return;
    }
    upstream.pipe(inbound);
    let head = Buffer.alloc(0);
    const readConnect = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const line = head.toString("latin1").split("\r\n")[0] ?? "";
      if (!head.includes("\r\n") && head.length < 64 * 1024) return;
      inbound.off("data", readConnect);
      link.dialer = /"name":"([^"]+)"/.exec(line)?.[1] ?? "";
      if (this.severed(link)) {
        this.refused++;
        this.drop(link);
        return;
      }
      upstream.write(head);
      inbound.pipe(upstream);
    };
    inbound.on("data", readConnect);
  }
}
