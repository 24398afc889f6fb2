/**
 * How long one request to the servers waits before it is sent again. While a cluster elects a
 * new leader (its old one frozen, dead or cut off) the requests sent meanwhile go unanswered:
 * asking again soon reaches the new leader as soon as there is one.
 */
export const ATTEMPT_MS = 1_500;
/** The pause before a request that went unanswered is sent again. */
export const RETRY_PAUSE_MS = 250;

/** JetStream's answer while a cluster has no leader for the asset (code 10008). */
export function isElecting(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown; message?: string } })?.cause;
  return cause?.code === 10008 || /temporarily unavailable/i.test(cause?.message ?? "");
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
 * Runs a request until it is answered: while the cluster elects a leader, or (when it may be
 * sent twice) after a timeout, it is sent again, until `deadline`.
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
      if ((!timedOut && !isElecting(err)) || Date.now() + RETRY_PAUSE_MS > deadline) throw err;
      if (timedOut) await onTimeout?.();
      await delay(RETRY_PAUSE_MS);
    }
  }
}
