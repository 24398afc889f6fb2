import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AgentChatError } from "../../core/errors.js";
import { MAX_REPLICAS } from "../roots.js";

/** What a namespace gets on a cluster of three or more when nobody asked for a count. */
const DEFAULT_CLUSTER_REPLICAS = 3;
/** JetStream's error code when no set of servers can hold the asked replicas. */
const INSUFFICIENT_RESOURCES = 10023;

/**
 * How many servers the connection knows of: 1 outside a cluster, else every server whose client
 * URL the cluster gossips to us (the connected one included). A stopped node drops out of that
 * list, which is what counts for placing replicas now.
 */
export function clusterSize(nc: NatsConnection): number {
  const info = nc.info;
  if (!info?.cluster) return 1;
  return Math.max(1, info.connect_urls?.length ?? 1);
}

/** The replicas a new namespace gets: the asked count (checked), else 3 or what the cluster has. */
export function replicasFor(nc: NatsConnection, asked: number | undefined, where: string): number {
  const size = clusterSize(nc);
  if (asked === undefined) return Math.min(DEFAULT_CLUSTER_REPLICAS, size);
  checkReplicas(asked, size, where);
  return asked;
}

export function checkReplicas(asked: number, size: number, where: string): void {
  if (!Number.isSafeInteger(asked) || asked < 1 || asked > MAX_REPLICAS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `replicas must be a whole number from 1 to ${MAX_REPLICAS}, got ${asked}`,
    );
  }
  if (asked > size) throw tooMany(asked, size, where);
}

function tooMany(asked: number, size: number, where: string): AgentChatError {
  return new AgentChatError(
    "INVALID_ARGUMENT",
    size === 1
      ? `replicas ${asked} needs a JetStream cluster, but ${where} is a single server (use replicas 1, or cluster ${asked} servers)`
      : `replicas ${asked} is more than the ${size} JetStream servers reachable in the cluster at ${where}`,
  );
}

/** True when the server could not place that many replicas (too few JetStream servers). */
export function isInsufficientResources(err: unknown): boolean {
  const e = err as { code?: unknown; api_error?: { err_code?: number }; message?: string };
  return (
    e?.api_error?.err_code === INSUFFICIENT_RESOURCES ||
    /insufficient resources|replicas > 1 not supported/i.test(e?.message ?? "")
  );
}

/**
 * Creates with `replicas`, and when the servers cannot hold that many (some have no JetStream)
 * and nobody asked for the count, with fewer: a namespace with fewer copies beats none.
 */
export async function createReplicated<T>(
  nc: NatsConnection,
  replicas: number,
  asked: boolean,
  where: string,
  create: (replicas: number) => Promise<T>,
): Promise<T> {
  for (let r = replicas; ; r--) {
    try {
      return await create(r);
    } catch (err) {
      if (!isInsufficientResources(err) || r <= 1) throw err;
      if (asked) throw tooMany(replicas, clusterSize(nc), where);
    }
  }
}

/** The warning for a namespace kept on fewer servers than the cluster could give it, if any. */
export function replicaWarning(
  namespace: string,
  streams: StreamInfo[],
  nc: NatsConnection,
): string | undefined {
  const want = Math.min(DEFAULT_CLUSTER_REPLICAS, clusterSize(nc));
  const have = Math.min(...streams.map((s) => s.config.num_replicas || 1));
  if (have >= want) return undefined;
  return (
    `namespace ${namespace} keeps ${have} ${have === 1 ? "copy" : "copies"} on a cluster of ` +
    `${clusterSize(nc)} servers: losing ${have === 1 ? "the node that holds it" : `${have} nodes`} stops it; ` +
    `raise it with: agent-chat nats replicas ${namespace} ${want}`
  );
}

/**
 * Sets the replicas of a namespace's stream and KV bucket. JetStream copies the data to the new
 * peers itself; this resolves once both streams report that many current replicas.
 */
export async function setReplicas(
  jsm: JetStreamManager,
  streams: string[],
  replicas: number,
  timeoutMs: number,
): Promise<void> {
  for (const name of streams) {
    const info = await jsm.streams.info(name);
    if ((info.config.num_replicas || 1) !== replicas) {
      await jsm.streams.update(name, { ...info.config, num_replicas: replicas });
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const name of streams) {
    for (;;) {
      const info = await jsm.streams.info(name);
      const peers = info.cluster?.replicas ?? [];
      if (peers.length === replicas - 1 && peers.every((p) => p.current)) break;
      if (Date.now() > deadline) {
        throw new AgentChatError(
          "TIMEOUT",
          `stream ${name} was set to ${replicas} replicas but has ${peers.filter((p) => p.current).length + 1} current ones after ${timeoutMs / 1000} s; it keeps copying in the background`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
