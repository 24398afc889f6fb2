import { AgentChatError } from "../../core/errors.js";

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

/** How every backend's `wait` reports its timeout… */
export function timeoutError(ms: number): AgentChatError {
  return new AgentChatError("TIMEOUT", `no relevant message within ${ms / 1000} s`);
}

/** …and its cancellation, so that callers see the same codes and words from each. */
export function abortError(): AgentChatError {
  return new AgentChatError("ABORTED", "wait was cancelled");
}
