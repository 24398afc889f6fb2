import { existsSync, promises as fsp } from "node:fs";
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { AgentChatError, type ErrorCode } from "../core/errors.js";
import { sameAgent, validateName } from "../core/names.js";
import type { SearchResult, Store } from "../store/types.js";
import {
  DEFAULT_VIEWER_HOST,
  DEFAULT_VIEWER_PORT,
  isLoopbackHost,
  isWildcardHost,
  urlHost,
} from "./address.js";
import { MESSAGE_PAGE_DEFAULT, MESSAGE_PAGE_MAX, type PanelAction } from "./api-types.js";
import { ViewerModel } from "./model.js";
import { defaultPanels, type PanelProvider } from "./panels.js";
import { parseNotifiedRequest, parsePanelActionRequest, parsePostRequest } from "./requests.js";
import {
  bearer,
  HostPolicy,
  newToken,
  originAllowed,
  SECURITY_HEADERS,
  sameToken,
  secretPrefix,
  underSecretPrefix,
} from "./security.js";
import {
  DEFAULT_STREAM_LIMITS,
  EventStreams,
  type StreamLimits,
  type StreamStats,
} from "./streams.js";

export interface ViewerOptions {
  store: Store;
  /** Default 127.0.0.1. Anything but a loopback address needs `allowRemote`. */
  host?: string;
  /** Default 7391; 0 picks a free port. */
  port?: number;
  allowRemote?: boolean;
  /** Default: 32 random bytes. */
  token?: string;
  /**
   * The channel panels, in the order the page shows them. Default: the viewer's own
   * (governance); the CLI adds the workspace panel (src/cli/plugins/viewer-panels.ts).
   */
  panels?: readonly PanelProvider[];
  /** What the event streams may hold back for slow readers (DEFAULT_STREAM_LIMITS). */
  streamLimits?: Partial<StreamLimits>;
  /**
   * The person who opened the viewer (`view --as`): the page posts and decides as `name` only,
   * through `store`, which signs with their key. Without it the From box names the poster and
   * nothing is signed.
   */
  as?: { name: string; store: Store };
}

export interface Viewer {
  /** The page's address: the token is in its path (`/s/<token>/`), the browser's only credential. */
  url: string;
  token: string;
  /** The event streams' figures: open, unsent bytes, closed for falling behind, refused. */
  streamStats(): StreamStats;
  close(): Promise<void>;
}

/** Largest POST body accepted: a maximal message body plus room for JSON escaping. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const KEEP_ALIVE = Buffer.from(": keep-alive\n\n");

const ASSETS: Record<string, string> = {
  "/app.js": "text/javascript; charset=utf-8",
  "/app.css": "text/css; charset=utf-8",
  "/favicon.svg": "image/svg+xml",
};

/**
 * Serves the web viewer of a store: one page, a JSON API and server-sent events. Only callers
 * holding the access token get anything (see docs/viewer.md for the security model).
 */
export async function startViewer(options: ViewerOptions): Promise<Viewer> {
  const { host, requestedPort, token } = checkedOptions(options);
  const panels = options.panels ?? defaultPanels;
  const model = new ViewerModel(options.store, panels, options.as?.name);
  await model.start();
  const routes = new ViewerRoutes(options, panels, model, token);
  const { streams } = routes;
  const server = createServer((req, res) => {
    routes.handle(req, res).catch((err) => {
      if (!res.headersSent) sendError(res, err);
      else res.destroy();
    });
  });
  try {
    await listen(server, host, requestedPort);
  } catch (err) {
    await model.close();
    throw err;
  }
  // Each event is serialised once, whoever is listening.
  const unsubscribe = model.subscribe((event) => {
    streams.broadcast(
      event.type === "state"
        ? eventChunk("state", event.state)
        : eventChunk("message", { channel: event.channel, message: event.message }),
    );
  });
  const heartbeat = setInterval(() => streams.broadcast(KEEP_ALIVE), HEARTBEAT_MS);
  const port = (server.address() as AddressInfo).port;
  routes.listening(host, port);
  const shownHost = isWildcardHost(host) ? (host === "::" ? "::1" : "127.0.0.1") : host;
  const url = `http://${urlHost(shownHost)}:${port}${secretPrefix(token)}`;

  let closing: Promise<void> | undefined;
  return {
    url,
    token,
    streamStats: () => streams.stats(),
    close() {
      closing ??= (async () => {
        clearInterval(heartbeat);
        unsubscribe();
        streams.endAll();
        await model.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })();
      return closing;
    },
  };
}

/** The viewer's requests: who may ask, and what each address answers. */
class ViewerRoutes {
  private readonly assets = locateAssets();
  private readonly postStore: Store;
  readonly streams: EventStreams;
  /** Set once the server listens: it depends on the port it got. */
  private hostPolicy: HostPolicy | undefined;

  constructor(
    private readonly options: ViewerOptions,
    private readonly panels: readonly PanelProvider[],
    private readonly model: ViewerModel,
    private readonly token: string,
  ) {
    this.postStore = options.as?.store ?? options.store;
    this.streams = new EventStreams({ ...DEFAULT_STREAM_LIMITS, ...options.streamLimits });
  }

  /** The address the server listens on: the Host headers allowed. */
  listening(host: string, port: number): void {
    this.hostPolicy = new HostPolicy(host, port);
  }

  /**
   * A request holds the token in its path (`/s/<token>/…`: the page, which a browser sends only
   * to this port) or in an `Authorization: Bearer` header (a script). Nothing else is answered.
   */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.hostPolicy?.allows(req.headers.host)) {
      return sendText(res, 403, "agent-chat viewer: unexpected Host header (refused)");
    }
    const url = new URL(req.url ?? "/", "http://viewer.invalid");
    const viaHeader = sameToken(bearer(req), this.token);
    const inside = underSecretPrefix(url.pathname, this.token);
    // The page's addresses are relative: they need the prefix's last slash.
    if (inside === "") return redirect(res, `${secretPrefix(this.token)}${url.search}`);
    const path = inside ?? (viaHeader ? url.pathname : undefined);
    if (path === undefined) return sendText(res, 404, refusal);
    if (req.method === "GET" || req.method === "HEAD") {
      return this.serveRead(res, path, url.searchParams);
    }
    if (req.method === "POST") return this.serveWrite(req, res, path, viaHeader);
    res.setHeader("Allow", "GET, HEAD, POST");
    return sendText(res, 405, "method not allowed");
  }

  /** GET and HEAD, for a caller holding the token: the page's files, the state, the stream. */
  private async serveRead(
    res: ServerResponse,
    path: string,
    params: URLSearchParams,
  ): Promise<void> {
    if (path === "/" || path === "/index.html") {
      return sendFile(res, this.assets, "index.html", "text/html; charset=utf-8");
    }
    const type = ASSETS[path];
    if (type) return sendFile(res, this.assets, path.slice(1), type);
    if (path === "/api/state") return sendJson(res, 200, await this.model.state());
    if (path === "/api/events") return this.openStream(res);
    if (path === "/api/search")
      return sendJson(res, 200, await searchRequest(this.options.store, params));
    const m = /^\/api\/channels\/([^/]+)\/messages$/.exec(path);
    if (m) {
      const channel = channelParam(m[1]!);
      return sendJson(res, 200, await this.model.messages(channel, pageParams(params)));
    }
    const thread = /^\/api\/channels\/([^/]+)\/thread\/([^/]+)$/.exec(path);
    if (thread) {
      const seq = wholeNumber(
        thread[2]!,
        "message",
        1,
        Number.MAX_SAFE_INTEGER,
        "a message number",
      );
      return sendJson(res, 200, await this.model.thread(channelParam(thread[1]!), seq));
    }
    return sendText(res, 404, "not found");
  }

  /** POST, for a caller holding the token: same origin (or the token in a header), JSON only. */
  private async serveWrite(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    viaHeader: boolean,
  ): Promise<void> {
    if (!originAllowed(req, viaHeader)) {
      return sendJson(res, 403, {
        error: { code: "FORBIDDEN", message: "cross-site request refused (Origin)" },
      });
    }
    const type = String(req.headers["content-type"] ?? "");
    if (!/^application\/json\b/i.test(type)) {
      return sendJson(res, 415, {
        error: { code: "UNSUPPORTED_MEDIA_TYPE", message: "send application/json" },
      });
    }
    const body = await readJson(req);
    const post = /^\/api\/channels\/([^/]+)\/messages$/.exec(path);
    if (post) return this.postMessage(res, channelParam(post[1]!), body);
    const notified = /^\/api\/channels\/([^/]+)\/notified$/.exec(path);
    if (notified) return this.notified(res, channelParam(notified[1]!), body);
    const act =
      /^\/api\/channels\/([^/]+)\/panels\/([^/]+)\/items\/([^/]+)\/(approve|reject|veto)$/.exec(
        path,
      );
    if (act) return this.panelAction(res, act, body);
    return sendText(res, 404, "not found");
  }

  /**
   * That the page showed `as` the channel up to `seq` (docs/delivery.md): only for the viewer's
   * own person when it was opened `--as`, a valid name, and a message that exists; a page of
   * another port must not mark someone's messages seen.
   */
  private async notified(res: ServerResponse, channel: string, body: unknown): Promise<void> {
    const { as, seq } = parseNotifiedRequest(body);
    validateName("agent", as);
    this.onlyAsOpener(as);
    const newest = (await this.options.store.peek(channel, 1))[0]?.seq ?? 0;
    if (seq > newest) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `${channel} has no message #${seq} (the newest is #${newest})`,
      );
    }
    await this.options.store.notify(channel, as, seq);
    return sendJson(res, 200, {});
  }

  private async postMessage(res: ServerResponse, channel: string, body: unknown): Promise<void> {
    const input = parsePostRequest(body);
    this.onlyAsOpener(input.from);
    const result = await this.postStore.post(channel, input);
    const [written] = (await this.options.store.peek(channel, 1)).filter(
      (m) => m.seq === result.seq,
    );
    if (written) this.model.noteMessage(written);
    sendJson(res, 201, result);
  }

  private async panelAction(
    res: ServerResponse,
    [, rawChannel, rawPanel, rawItem, action]: RegExpExecArray,
    body: unknown,
  ): Promise<void> {
    const channel = channelParam(rawChannel!);
    const panelId = pathPart(rawPanel!, "panel");
    const provider = this.panels.find((p) => p.id === panelId);
    if (!provider?.act) {
      throw new AgentChatError("NOT_FOUND", `there is no panel ${panelId} to act on`);
    }
    const input = parsePanelActionRequest(body);
    validateName("agent", input.as);
    this.onlyAsOpener(input.as);
    const result = await provider.act(
      this.postStore,
      channel,
      pathPart(rawItem!, "item"),
      action as PanelAction,
      input,
    );
    const [written] = (await this.options.store.peek(channel, 1)).filter(
      (m) => m.seq === result.seq,
    );
    if (written) this.model.noteMessage(written);
    sendJson(res, 200, result);
  }

  /** A viewer opened `--as A` speaks for A alone: its key must not sign anyone else's words. */
  private onlyAsOpener(name: string): void {
    const as = this.options.as?.name;
    if (as !== undefined && !sameAgent(name, as)) {
      throw new AgentChatError("NOT_ALLOWED", `this viewer posts as ${as} only, not as ${name}`);
    }
  }

  private openStream(res: ServerResponse): void {
    if (!this.streams.add(res)) {
      // The page tries again on its own (src/viewer/page/live.ts).
      res.setHeader("Retry-After", "5");
      sendText(res, 503, "agent-chat viewer: too many open event streams; try again later");
      return;
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      "Content-Type": "text/event-stream; charset=utf-8",
      Connection: "keep-alive",
    });
    res.write("retry: 1000\n\n");
    this.model.state().then(
      (state) => this.streams.send(res, eventChunk("state", state)),
      () => {},
    );
  }
}

/** Listens on `host:port`; a port in use is told as such, with what to do instead. */
async function listen(server: Server, host: string, port: number): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const where = `${urlHost(host)}:${port}`;
    if (code === "EADDRINUSE") {
      throw new AgentChatError(
        "IO_ERROR",
        `${where} is already in use; choose another port (e.g. --http ${host}:0 for any free one)`,
        { cause: err },
      );
    }
    throw new AgentChatError("IO_ERROR", `cannot listen on ${where}: ${code ?? err}`, {
      cause: err,
    });
  }
}

/** Where to listen and the token; refuses a bad port, a remote host not allowed, a weak token. */
function checkedOptions(options: ViewerOptions): {
  host: string;
  requestedPort: number;
  token: string;
} {
  const host = options.host ?? DEFAULT_VIEWER_HOST;
  const requestedPort = options.port ?? DEFAULT_VIEWER_PORT;
  if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65535) {
    throw new AgentChatError("INVALID_ARGUMENT", `invalid port ${requestedPort}`);
  }
  if (!isLoopbackHost(host) && !options.allowRemote) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `refusing to serve the viewer on ${host}: it is not a loopback address, so other machines ` +
        "could reach it; allow that explicitly (--http-allow-remote) if you mean it",
    );
  }
  const token = options.token ?? newToken();
  if (!/^[A-Za-z0-9_-]{16,}$/.test(token)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      "the viewer token must be at least 16 characters of A-Z, a-z, 0-9, '_' or '-'",
    );
  }
  return { host, requestedPort, token };
}

// The same answer for no token and a wrong one, and the same as for any unknown address.
const refusal =
  "agent-chat viewer: not found. Open the address printed at start " +
  "(http://HOST:PORT/s/<token>/), or send the token as Authorization: Bearer <token>.";

/** The page's files: beside the bundle (dist/viewer), or built from a source checkout. */
function locateAssets(): string {
  const candidates = ["./viewer/", "../viewer/", "../../dist/viewer/"].map((rel) =>
    fileURLToPath(new URL(rel, import.meta.url)),
  );
  const found = candidates.find((dir) => existsSync(`${dir}index.html`));
  if (!found) {
    throw new AgentChatError(
      "IO_ERROR",
      `the viewer page is missing (looked in ${candidates.join(", ")}); run npm run build`,
    );
  }
  return found;
}

/** One server-sent event; its data is one line, since JSON text never holds a raw line break. */
function eventChunk(event: string, data: unknown): Buffer {
  return Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function channelParam(raw: string): string {
  return validateName("channel", pathPart(raw, "channel"));
}

/** One part of a request's path, decoded; malformed percent-encoding is the caller's error. */
function pathPart(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `the ${what} in the address is not valid percent-encoding (UTF-8): ${raw.slice(0, 60)}`,
    );
  }
}

/** `before` and `limit` of a messages request, checked: a bad value is refused, never guessed. */
function pageParams(params: URLSearchParams): { before?: number; limit: number } {
  const out: { before?: number; limit: number } = { limit: MESSAGE_PAGE_DEFAULT };
  const before = params.get("before");
  if (before !== null) {
    out.before = wholeNumber(before, "before", 1, Number.MAX_SAFE_INTEGER, "a message number");
  }
  const limit = params.get("limit");
  if (limit !== null) {
    out.limit = wholeNumber(limit, "limit", 1, MESSAGE_PAGE_MAX, `from 1 to ${MESSAGE_PAGE_MAX}`);
  }
  return out;
}

function wholeNumber(raw: string, name: string, min: number, max: number, hint: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new AgentChatError("INVALID_ARGUMENT", `invalid ${name} "${raw}": use ${hint}`);
  }
  return n;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) {
      throw new AgentChatError("TOO_LARGE", `request is larger than ${MAX_REQUEST_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error();
    return value;
  } catch {
    throw new AgentChatError("INVALID_ARGUMENT", "request body is not a JSON object");
  }
}

const STATUS_OF: Partial<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: 400,
  INVALID_NAME: 400,
  // The root's files, not the server, are at fault: a channel nobody can use as it is.
  CORRUPT_META: 422,
  UNSAFE_FILE: 422,
  CHANNEL_NOT_FOUND: 404,
  TASK_NOT_FOUND: 404,
  NOT_A_MEMBER: 403,
  NOT_HOLDER: 403,
  NOT_MAINTAINER: 403,
  NOT_ALLOWED: 403,
  NOT_GOVERNED: 409,
  ALREADY_DECIDED: 409,
  NOT_FOUND: 404,
  CHANNEL_EXISTS: 409,
  TASK_EXISTS: 409,
  CLAIM_LOST: 409,
  TOO_LARGE: 413,
  LOCK_TIMEOUT: 503,
  BACKEND_UNAVAILABLE: 503,
};

function sendError(res: ServerResponse, err: unknown): void {
  if (err instanceof AgentChatError) {
    sendJson(res, STATUS_OF[err.code] ?? 500, { error: { code: err.code, message: err.message } });
  } else {
    sendJson(res, 500, { error: { code: "INTERNAL", message: String(err) } });
  }
}

function redirect(res: ServerResponse, location: string): void {
  res.writeHead(308, { ...SECURITY_HEADERS, Location: location, "Content-Length": 0 });
  res.end();
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, { "Content-Type": "application/json; charset=utf-8" }, JSON.stringify(value));
}

function sendText(res: ServerResponse, status: number, text: string): void {
  send(res, status, { "Content-Type": "text/plain; charset=utf-8" }, `${text}\n`);
}

async function sendFile(
  res: ServerResponse,
  dir: string,
  name: string,
  type: string,
): Promise<void> {
  send(res, 200, { "Content-Type": type }, await fsp.readFile(`${dir}${name}`));
}

function send(
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string | Buffer,
): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    ...headers,
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

/** `GET /api/search?q=…[&channel=…]`: the 20 newest matches (docs/search.md). */
async function searchRequest(store: Store, params: URLSearchParams): Promise<SearchResult> {
  const channel = params.get("channel");
  return store.search(params.get("q") ?? "", {
    limit: 20,
    ...(channel ? { channels: [channel] } : {}),
  });
}
