/** A level-triggered wake-up: kicks between two `next()` calls are not lost. */
export class Wakeup {
  private pending = false;
  private failure: Error | undefined;
  private ended = false;
  private resolve: (() => void) | undefined;
  private reject: ((err: Error) => void) | undefined;

  kick(): void {
    this.pending = true;
    this.settle();
  }

  fail(err: Error): void {
    this.failure ??= err;
    this.settle();
  }

  end(): void {
    this.ended = true;
    this.settle();
  }

  next(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.settle();
    });
  }

  private settle(): void {
    if (!this.resolve || !this.reject) return;
    if (this.failure) this.reject(this.failure);
    else if (this.ended) this.reject(new Error("ended"));
    else if (this.pending) {
      this.pending = false;
      this.resolve();
    } else return;
    this.resolve = undefined;
    this.reject = undefined;
  }
}
