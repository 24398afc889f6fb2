import type { Message } from "../../core/message.js";
import type { ReadLimit } from "../types.js";

/** The part of a channel scan (backend-store.ts) that a budget reads. */
interface ScannedMessages {
  messages: readonly Message[];
  scannedTo: number;
}

/** What a bounded read keeps of one scan, and how far its cursor may move. */
export interface Taken {
  messages: Message[];
  /** Before the first message left out, when one was (else the scan's own end). */
  scannedTo: number;
  /** The messages left out. */
  more: number;
}

/**
 * What a read or wait with a {@link ReadLimit} has left to return, spent scan by scan (a wait
 * spends one budget across its channels). The first message is always taken: a read must make
 * progress, and one message's size is bounded by the channel's body limit.
 */
export class Budget {
  private messages = 0;
  private bytes = 0;

  constructor(private readonly limit: ReadLimit | undefined) {}

  /** The messages of `scan` that `keep` selects, as far as the budget goes. */
  take(scan: ScannedMessages, keep: (m: Message) => boolean): Taken {
    const taken: Taken = { messages: [], scannedTo: scan.scannedTo, more: 0 };
    for (const m of scan.messages) {
      if (!keep(m)) continue;
      // A second file of a number already taken goes too: the cursor cannot stop inside a number.
      const sameSeq = taken.messages.at(-1)?.seq === m.seq;
      if (taken.more === 0 && (sameSeq || this.fits(m))) {
        this.spend(m);
        taken.messages.push(m);
        continue;
      }
      if (taken.more === 0) taken.scannedTo = m.seq - 1;
      taken.more++;
    }
    return taken;
  }

  private fits(m: Message): boolean {
    if (this.limit === undefined || this.messages === 0) return true;
    const { messages = Number.POSITIVE_INFINITY, bytes = Number.POSITIVE_INFINITY } = this.limit;
    return this.messages < messages && this.bytes + size(m) <= bytes;
  }

  private spend(m: Message): void {
    this.messages++;
    this.bytes += size(m);
  }
}

function size(m: Message): number {
  return Buffer.byteLength(m.title) + Buffer.byteLength(m.body);
}
