import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { AgentChatError } from "../core/errors.js";

/**
 * What a root names, decided without loading any backend: the CLI asks this on every start, and
 * the NATS client must stay off the start-up path of folder commands. Every part that opens,
 * prints or keys a root (the CLI, `serve` and its socket, `send`, `info`, setup, hooks, doctor)
 * reads it through {@link parseRoot}, so a NATS root is never taken for a folder path.
 */
/** A root given as a URL (`nats://…`, `tls://…`, any `scheme://`) rather than a folder path. */
export function isUrlRoot(root: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(root);
}

export function isNatsUrl(root: string): boolean {
  return /^(nats|tls):\/\//i.test(root);
}

/**
 * How to reach and authenticate to nats-server. Every field maps onto the NATS client's own
 * connection options; the CLI fills them from the environment, never from printed output.
 */
export interface NatsConnectionOptions {
  user?: string;
  pass?: string;
  token?: string;
  /** A NATS credentials file (JWT + NKey seed), as `nsc` writes it. */
  credsFile?: string;
  /** TLS: a CA to trust, and a client certificate when the server asks for one. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /** More seed servers (`host:port`) beside the root URL's, e.g. from the config file. */
  servers?: string[];
  /** Bound on connecting and on every request (default 5 s): nothing hangs on a dead server. */
  timeoutMs?: number;
  /**
   * Copies a new namespace keeps (its stream and KV bucket): default 3 on a cluster of three or
   * more servers, else as many as it has. The root URL's `?replicas=N` wins over this.
   */
  replicas?: number;
  /** Hears what the user should know but that does not stop the open (an R1 namespace on a cluster). */
  onWarning?: (warning: string) => void;
}

/** A root read once: a folder (by its absolute path) or a NATS namespace (by its servers). */
export type ParsedRoot =
  | { kind: "folder"; given: string; path: string }
  | { kind: "nats"; given: string; nats: NatsTarget };

/**
 * The one reading of a root, as given on the command line or in `$AGENT_CHAT_ROOT`: a
 * `nats://` or `tls://` URL is a NATS namespace (checked here, before anything connects), any
 * other `scheme://` is refused, and everything else is a folder path.
 */
export function parseRoot(root: string): ParsedRoot {
  if (root.trim() === "") throw new AgentChatError("INVALID_ARGUMENT", "root is empty");
  if (!isUrlRoot(root)) return { kind: "folder", given: root, path: resolve(root) };
  if (isNatsUrl(root)) return { kind: "nats", given: root, nats: parseNatsUrl(root) };
  const scheme = root.slice(0, root.indexOf(":")).toLowerCase();
  throw new AgentChatError(
    "BACKEND_UNAVAILABLE",
    `no backend for ${scheme}:// roots; use a folder path or nats://host:port/namespace`,
  );
}

/**
 * The name of a root that does not depend on how or where it was spelt, which keys its daemon
 * socket: a folder's absolute path with symlinks resolved where it exists (`./chat`,
 * `/home/me/chat/` and a link to it are one root); a NATS root's scheme, seed servers (sorted,
 * default port filled in) and namespace, without credentials or options.
 */
export function canonicalRoot(root: string | ParsedRoot): string {
  const parsed = typeof root === "string" ? parseRoot(root) : root;
  if (parsed.kind === "nats") {
    const { nats } = parsed;
    const scheme = nats.server.slice(0, nats.server.indexOf("//"));
    const seeds = nats.servers.map((s) => s.slice(scheme.length + 2)).sort();
    return `${scheme}//${seeds.join(",")}/${nats.namespace}`;
  }
  try {
    // The C library's, not a JavaScript walk with an lstat per folder: every command asks.
    return realpathSync.native(parsed.path);
  } catch {
    return parsed.path;
  }
}

/** A root fit to print: a NATS URL without its credentials; anything else as it is. */
export function printableRoot(root: string): string {
  if (!isNatsUrl(root)) return root;
  try {
    return canonicalRoot(root);
  } catch {
    return "(a nats:// URL that does not parse)";
  }
}

/**
 * Whether two roots are one, however each is spelt (`./chat` and its absolute path; a NATS URL
 * with and without credentials). A root that cannot be read (a tool's file may hold anything)
 * is only the same as the same text.
 */
export function sameRoot(a: string, b: string): boolean {
  try {
    return canonicalRoot(a) === canonicalRoot(b);
  } catch {
    return a === b;
  }
}

/** Where a NATS root points: its servers, namespace and any credentials of the URL. */
export interface NatsTarget {
  /**
   * `nats://host:port` or `tls://host:port`, without credentials; seeds joined by commas
   * (`nats://h1:4222,h2:4222`) when the root names several.
   */
  server: string;
  /** Each seed server, `nats://host:port`: the client tries them all and learns the rest. */
  servers: string[];
  /** The namespace (one stream and one KV bucket); empty for a bare server URL. */
  namespace: string;
  /** Credentials found in the URL itself. */
  user?: string;
  pass?: string;
  token?: string;
  /** `?replicas=N` in the URL: the copies a new namespace keeps. */
  replicas?: number;
  /** The URL without credentials: safe to print. */
  location: string;
}

/** JetStream keeps at most 5 copies of a stream. */
export const MAX_REPLICAS = 5;
const SCHEMES = new Set(["nats:", "tls:"]);
/** A namespace names a stream and a KV bucket, whose names allow no dots. */
const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** scheme, [userinfo@]seeds, path, query. */
const ROOT_URL = /^([a-z][a-z0-9+.-]*:)\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?$/i;

/**
 * Parses `nats://[user:pass@ | token@]host[:port][,host[:port]…][/namespace][?replicas=N]`.
 * Several seeds let a client start while one of them is down. Credentials in the URL work but
 * show up in `ps`; prefer the environment (docs/nats.md).
 */
export function parseNatsUrl(root: string, requireNamespace = true): NatsTarget {
  const parts = ROOT_URL.exec(root.trim());
  if (!parts) throw new AgentChatError("INVALID_ARGUMENT", "not a valid nats:// URL");
  const scheme = parts[1]!.toLowerCase();
  if (!SCHEMES.has(scheme)) {
    throw new AgentChatError("INVALID_ARGUMENT", `unsupported scheme ${scheme}// (use nats://)`);
  }
  const authority = parts[2]!;
  const at = authority.lastIndexOf("@");
  const servers = authority
    .slice(at + 1)
    .split(",")
    .map((seed) => seedServer(scheme, seed));
  const server = `${scheme}//${servers.map((s) => s.slice(scheme.length + 2)).join(",")}`;
  const namespace = decodeURIComponent(parts[3]!.replace(/^\/+|\/+$/g, ""));
  if (namespace === "" && requireNamespace) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `NATS root needs a namespace: ${server}/<namespace> (e.g. ${server}/team-a)`,
    );
  }
  if (namespace !== "" && !NAMESPACE.test(namespace)) {
    throw new AgentChatError(
      "INVALID_NAME",
      `invalid namespace ${JSON.stringify(namespace)}: use letters, digits, '_' and '-', starting with a letter or digit`,
    );
  }
  const target: NatsTarget = {
    server,
    servers,
    namespace,
    location: namespace === "" ? server : `${server}/${namespace}`,
  };
  const replicas = new URLSearchParams(parts[4] ?? "").get("replicas");
  if (replicas !== null) target.replicas = parseReplicas(replicas);
  if (at >= 0) Object.assign(target, credentials(`${scheme}//${authority.slice(0, at + 1)}x`));
  return target;
}

/** One seed, `host[:port]`, as `scheme//host:port` (port 4222 by default). */
function seedServer(scheme: string, seed: string): string {
  let url: URL;
  try {
    url = new URL(`${scheme}//${seed.trim()}`);
  } catch {
    throw new AgentChatError("INVALID_ARGUMENT", `not a valid server in the NATS URL: ${seed}`);
  }
  if (url.hostname === "") throw new AgentChatError("INVALID_ARGUMENT", "NATS URL has no host");
  return `${scheme}//${url.hostname}:${url.port === "" ? "4222" : url.port}`;
}

/** `user:pass@` or `token@` of a URL. */
function credentials(url: string): Pick<NatsTarget, "user" | "pass" | "token"> {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const pass = decodeURIComponent(parsed.password);
  if (user !== "" && pass !== "") return { user, pass };
  return user === "" ? {} : { token: user };
}

/** A replica count as given in a URL or the environment: 1 to 5. */
function parseReplicas(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < 1 || n > MAX_REPLICAS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `replicas must be a whole number from 1 to ${MAX_REPLICAS}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}
