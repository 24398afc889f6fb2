import { readFileSync } from "node:fs";
import type { NatsConnectionOptions } from "../store/roots.js";
import { parseSeconds, UsageError } from "./usage.js";

/**
 * NATS connection options from the environment, and optionally from a JSON file named by
 * $AGENT_CHAT_NATS_CONFIG (keys: user, pass, token, creds, ca, cert, key, timeout, replicas, servers). Variables
 * win over the file; the `nats` CLI's own names (NATS_USER, NATS_PASSWORD, NATS_TOKEN,
 * NATS_CREDS, NATS_CA, NATS_CERT, NATS_KEY) are honoured as fallbacks. Values are never printed.
 */
export function natsOptionsFromEnv(env: NodeJS.ProcessEnv): NatsConnectionOptions {
  const file = readConfig(env.AGENT_CHAT_NATS_CONFIG);
  const pick = (ours: string, theirs: string | undefined, key: string): string | undefined => {
    const value = env[ours] || (theirs ? env[theirs] : undefined) || file[key];
    return value === undefined || value === "" ? undefined : String(value);
  };
  const options: NatsConnectionOptions = {};
  const user = pick("AGENT_CHAT_NATS_USER", "NATS_USER", "user");
  const pass = pick("AGENT_CHAT_NATS_PASS", "NATS_PASSWORD", "pass");
  const token = pick("AGENT_CHAT_NATS_TOKEN", "NATS_TOKEN", "token");
  const creds = pick("AGENT_CHAT_NATS_CREDS", "NATS_CREDS", "creds");
  const ca = pick("AGENT_CHAT_NATS_CA", "NATS_CA", "ca");
  const cert = pick("AGENT_CHAT_NATS_CERT", "NATS_CERT", "cert");
  const key = pick("AGENT_CHAT_NATS_KEY", "NATS_KEY", "key");
  const timeout = pick("AGENT_CHAT_NATS_TIMEOUT", undefined, "timeout");
  const replicas = pick("AGENT_CHAT_NATS_REPLICAS", undefined, "replicas");
  // A list in the file reads as "h1:4222,h2:4222" here, as the variable is written.
  const servers = pick("AGENT_CHAT_NATS_SERVERS", undefined, "servers");
  if (user !== undefined) options.user = user;
  if (pass !== undefined) options.pass = pass;
  if (token !== undefined) options.token = token;
  if (creds !== undefined) options.credsFile = creds;
  if (ca !== undefined || cert !== undefined || key !== undefined) {
    options.tls = {};
    if (ca !== undefined) options.tls.caFile = ca;
    if (cert !== undefined) options.tls.certFile = cert;
    if (key !== undefined) options.tls.keyFile = key;
  }
  if (timeout !== undefined) options.timeoutMs = timeoutMs(timeout);
  if (replicas !== undefined) options.replicas = replicaCount(replicas);
  if (servers !== undefined)
    options.servers = servers
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  return options;
}

function timeoutMs(text: string): number {
  const ms = parseSeconds(text, "AGENT_CHAT_NATS_TIMEOUT");
  if (ms <= 0) throw new UsageError("AGENT_CHAT_NATS_TIMEOUT must be a positive number of seconds");
  return ms;
}

function replicaCount(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < 1 || n > 5) {
    throw new UsageError(
      `AGENT_CHAT_NATS_REPLICAS must be a whole number from 1 to 5, got ${text}`,
    );
  }
  return n;
}

function readConfig(path: string | undefined): Record<string, unknown> {
  if (!path) return {};
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new UsageError(
      `cannot read AGENT_CHAT_NATS_CONFIG ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`,
    );
  }
  try {
    const data = JSON.parse(text) as unknown;
    if (typeof data === "object" && data !== null && !Array.isArray(data)) {
      return data as Record<string, unknown>;
    }
  } catch {
    // reported below without echoing the content, which may hold secrets
  }
  throw new UsageError(`AGENT_CHAT_NATS_CONFIG ${path} must hold one JSON object`);
}
