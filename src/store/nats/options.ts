import { AgentChatError } from "../../core/errors.js";
import type { NatsConnectionOptions } from "../roots.js";
import { MAX_REPLICAS } from "./replicas.js";

export interface NatsStoreOptions extends NatsConnectionOptions {
  /** Largest accepted message body in bytes (default 1 MiB, capped by the server's max_payload). */
  maxBodyBytes?: number;
  /** The clock leases are measured by (default `Date.now`; tests inject one). */
  now?: () => number;
}

export interface NatsTarget {
  /** `nats://host:port` or `tls://host:port`, without credentials. */
  server: string;
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

/**
 * Parses `nats://[user:pass@ | token@]host[:port][/namespace]`. Credentials in the URL work but
 * show up in `ps`; prefer the environment (docs/nats.md).
 */
export function parseNatsUrl(root: string, requireNamespace = true): NatsTarget {
  let url: URL;
  try {
    url = new URL(root);
  } catch {
    throw new AgentChatError("INVALID_ARGUMENT", "not a valid nats:// URL");
  }
  const scheme = url.protocol.toLowerCase();
  if (!SCHEMES.has(scheme)) {
    throw new AgentChatError("INVALID_ARGUMENT", `unsupported scheme ${scheme}// (use nats://)`);
  }
  if (url.hostname === "") throw new AgentChatError("INVALID_ARGUMENT", "NATS URL has no host");
  const port = url.port === "" ? "4222" : url.port;
  const server = `${scheme}//${url.hostname}:${port}`;
  const namespace = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ""));
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
    namespace,
    location: namespace === "" ? server : `${server}/${namespace}`,
  };
  const replicas = url.searchParams.get("replicas");
  if (replicas !== null) target.replicas = parseReplicas(replicas);
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  if (user !== "" && pass !== "") {
    target.user = user;
    target.pass = pass;
  } else if (user !== "") {
    target.token = user;
  }
  return target;
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
