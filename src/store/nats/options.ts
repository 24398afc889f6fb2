import { AgentChatError } from "../../core/errors.js";
import type { PresenceOptions } from "../core/index.js";
import type { NatsConnectionOptions } from "../roots.js";
import { MAX_REPLICAS } from "./replicas.js";

export interface NatsStoreOptions extends NatsConnectionOptions, PresenceOptions {
  /** Largest accepted message body in bytes (default 1 MiB, capped by the server's max_payload). */
  maxBodyBytes?: number;
  /**
   * Told of every acknowledged post: how many publishes it took (1 when no other post raced it
   * and the server answered at once). For monitoring contention; the torture rows measure it.
   */
  onPosted?: (post: { channel: string; seq: number; tries: number }) => void;
  /** The clock leases are measured by (default `Date.now`; tests inject one). */
  now?: () => number;
}

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
export function parseReplicas(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < 1 || n > MAX_REPLICAS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `replicas must be a whole number from 1 to ${MAX_REPLICAS}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}
