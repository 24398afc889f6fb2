import { readFile } from "node:fs/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import { AgentChatError } from "../../core/errors.js";
import type { NatsConnectionOptions, NatsTarget } from "../roots.js";

export const DEFAULT_NATS_TIMEOUT_MS = 5_000;

/**
 * Connects with the NATS client's own options. Once connected, the client reconnects forever
 * (a waiter outlives a server restart); the first connection is bounded by `timeoutMs` so that
 * an unreachable server or wrong credentials fail at once with a clear error.
 */
export async function connectNats(
  target: NatsTarget,
  options: NatsConnectionOptions,
): Promise<NatsConnection> {
  const nats = await import("@nats-io/transport-node");
  const timeout = options.timeoutMs ?? DEFAULT_NATS_TIMEOUT_MS;
  const user = options.user ?? target.user;
  const pass = options.pass ?? target.pass;
  const token = options.token ?? target.token;
  const opts: Parameters<typeof nats.connect>[0] = {
    servers: [...new Set([...target.servers, ...(options.servers ?? []).map(seed)])],
    name: "agent-chat",
    timeout,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    pingInterval: 10_000,
  };
  if (user !== undefined) {
    opts.user = user;
    opts.pass = pass ?? "";
  } else if (token !== undefined) {
    opts.token = token;
  }
  if (options.credsFile) {
    let creds: Uint8Array;
    try {
      creds = await readFile(options.credsFile);
    } catch (err) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `cannot read the NATS credentials file ${options.credsFile}: ${(err as NodeJS.ErrnoException).code ?? err}`,
        { cause: err },
      );
    }
    opts.authenticator = nats.credsAuthenticator(creds);
  }
  if (options.tls || target.server.startsWith("tls:")) opts.tls = { ...options.tls };
  try {
    return await nats.connect(opts);
  } catch (err) {
    throw connectError(err, target);
  }
}

/** A seed from the config file, `host:port` or a URL, as the client takes it. */
function seed(server: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `nats://${server}`;
}

function connectError(err: unknown, target: NatsTarget): AgentChatError {
  const e = err as Error & { code?: string; cause?: { code?: string } };
  const text = `${e?.name ?? ""} ${e?.message ?? ""} ${e?.code ?? ""} ${e?.cause?.code ?? ""}`;
  let why: string;
  if (/authori[sz]ation|authentication|auth/i.test(text)) {
    why =
      "authentication failed (check AGENT_CHAT_NATS_USER/AGENT_CHAT_NATS_PASS, AGENT_CHAT_NATS_TOKEN or AGENT_CHAT_NATS_CREDS)";
  } else if (/ECONNREFUSED|refused/i.test(text)) {
    why = "connection refused (is nats-server running there?)";
  } else if (/timeout|timed out/i.test(text)) {
    why = "no answer in time (is nats-server running there?)";
  } else if (/tls|certificate|ssl/i.test(text)) {
    why = `TLS failed (${e.message})`;
  } else {
    why = e?.message ?? String(err);
  }
  return new AgentChatError("BACKEND_UNAVAILABLE", `cannot connect to ${target.server}: ${why}`, {
    cause: err,
  });
}
