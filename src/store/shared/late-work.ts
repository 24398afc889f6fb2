/**
 * Work an operation lets finish after it answered: a woken wait answers once its cursor is
 * saved, and its receipt and presence follow. A thousand agents woken at once would otherwise
 * each wait for two checked writes that a cluster orders one after another. The store's own
 * questions about those records (receipts, explain, who, waitFor) and its close wait for them
 * first, so nothing asked of the store finds them missing.
 */
export class LateWork {
  private readonly pending = new Set<Promise<unknown>>();

  /** Lets `work` (a record, never failing) finish after its operation answered. */
  add(work: Promise<unknown>): void {
    const tracked = work.catch(() => {}).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** Resolves once the work started before this call is done (or has given up). */
  async written(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /**
   * Resolves once all the work started so far is done (or has given up), or after `maxMs` (a
   * store closing while its server is away does not wait out every retry).
   */
  async settled(maxMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((r) => {
      timer = setTimeout(r, maxMs);
    });
    const drained = (async () => {
      while (this.pending.size > 0) await this.written();
    })();
    await Promise.race([drained, late]);
    clearTimeout(timer);
  }
}
