/**
 * How long one request to the servers waits before it is sent again. While a cluster elects a
 * new leader (its old one frozen, dead or cut off) the requests sent meanwhile go unanswered:
 * asking again soon reaches the new leader as soon as there is one.
 */
export const ATTEMPT_MS = 1_500;
/**
 * How long a call on a cluster keeps trying by default while the cluster elects a leader.
 * nats-server's raft calls an election 4–9 s after it last heard from a leader (fixed, not a
 * setting), and a split vote, or the one follower left still catching up, takes another round:
 * 20 s covers two. A timeout the user gave bounds the retries instead (see `retryWindowMs`).
 */
export const CLUSTER_ELECTION_MS = 20_000;

/**
 * How long a call keeps sending its request again: `times` the timeout the user gave; with no
 * timeout given, `times` the default one, and on a cluster at least an election's length.
 */
export function retryWindowMs(
  given: number | undefined,
  fallback: number,
  clustered: boolean,
  times: 1 | 2,
): number {
  if (given !== undefined) return times * given;
  return clustered ? Math.max(CLUSTER_ELECTION_MS, times * fallback) : times * fallback;
}

/** The pause before a request that went unanswered is sent again. */
export const RETRY_PAUSE_MS = 250;

/** JetStream's answer while a cluster has no leader for the asset (code 10008). */
export function isElecting(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown; message?: string } })?.cause;
  return cause?.code === 10008 || /temporarily unavailable/i.test(cause?.message ?? "");
}

/**
 * A stream could not be placed on a server the cluster lists but has not heard from yet (just
 * after it started: the meta leader has no statistics of it). Gossip names only running
 * servers, and asking for more copies than it names is refused before asking (see
 * `checkReplicas`), so this passes within seconds: the creation is sent again.
 */
export function isPlacementPending(err: unknown): boolean {
  const e = err as {
    code?: unknown;
    message?: string;
    cause?: { code?: unknown; message?: string };
  };
  return [e, e?.cause].some((x) => x?.code === 10005 && /peer offline/i.test(x?.message ?? ""));
}

/** Said of a request nobody on a cluster listened to yet: safe to send again (see `patiently`). */
export const NOT_ROUTED_YET = "(no responders yet: the cluster is still spreading its subjects)";

function notRoutedYet(err: unknown): boolean {
  return (err as Error)?.message?.endsWith(NOT_ROUTED_YET) === true;
}

/** Nobody answered in time (the failure itself, or the cause of the error made from it). */
export function isTimedOut(err: unknown): boolean {
  const e = err as { name?: string; message?: string; cause?: { name?: string; message?: string } };
  const text = `${e?.name} ${e?.message} ${e?.cause?.name} ${e?.cause?.message}`;
  return /TimeoutError|timed? ?out|did not answer in time/i.test(text);
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface Patience {
  /**
   * The request is safe to send twice (a read, a create with the same config): a timeout sends
   * it again too, not only an election in progress.
   */
  resend?: boolean;
  /** Runs before a resend after a timeout (moving a connection off a server that froze). */
  onTimeout?: () => Promise<void>;
}

/**
 * Runs a request until it is answered: while the cluster elects a leader, has not yet routed
 * its subjects (nobody got it) or cannot yet place a stream on a server that just started, or
 * (when it may be sent twice) after a timeout, it is sent again, until `deadline`.
 */
export async function patiently<T>(
  request: () => Promise<T>,
  deadline: number,
  { resend = true, onTimeout }: Patience = {},
): Promise<T> {
  for (;;) {
    try {
      return await request();
    } catch (err) {
      const timedOut = resend && isTimedOut(err);
      const again = timedOut || isElecting(err) || notRoutedYet(err) || isPlacementPending(err);
      if (!again || Date.now() + RETRY_PAUSE_MS > deadline) throw err;
      if (timedOut) await onTimeout?.();
      await delay(RETRY_PAUSE_MS);
    }
  }
}
