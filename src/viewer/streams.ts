import type { ServerResponse } from "node:http";

/** How much the viewer's event streams may hold back for readers that are behind. */
export interface StreamLimits {
  /** Unsent bytes of one stream past which it is closed rather than written to. */
  streamBytes: number;
  /** Unsent bytes of all streams together past which a stream that is behind is closed. */
  totalBytes: number;
  /** Open streams at most; one more is refused (503) until one closes. */
  streams: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  streamBytes: 4 * 1024 * 1024,
  totalBytes: 32 * 1024 * 1024,
  streams: 100,
};

export interface StreamStats {
  open: number;
  /** Bytes written to the streams that their readers have not taken yet. */
  unsentBytes: number;
  /** Streams closed because their reader fell too far behind. */
  closedBehind: number;
  /** Streams refused because as many as the limit were open. */
  refused: number;
}

/**
 * The open server-sent event streams. An event is serialised once and the same bytes are
 * written to every stream. A reader that does not keep up is never buffered for without end:
 * a stream that is already behind and would go past its budget (or the budget of all streams)
 * is closed instead. The page then reconnects and fetches what it missed, so nothing is lost
 * for a reader that comes back; a reader that is caught up always gets the event.
 */
export class EventStreams {
  private readonly open = new Set<ServerResponse>();
  private closedBehind = 0;
  private refused = 0;

  constructor(private readonly limits: StreamLimits) {}

  /** Takes a stream whose head is written; false when as many streams as allowed are open. */
  add(res: ServerResponse): boolean {
    if (this.open.size >= this.limits.streams) {
      this.refused += 1;
      return false;
    }
    this.open.add(res);
    res.on("close", () => this.open.delete(res));
    return true;
  }

  /** Writes `chunk` to one stream, or closes it if it is too far behind to take it. */
  send(res: ServerResponse, chunk: Buffer): void {
    this.write(res, chunk, this.unsent());
  }

  broadcast(chunk: Buffer): void {
    let total = this.unsent();
    for (const res of this.open) {
      const before = res.writableLength;
      this.write(res, chunk, total);
      total += res.destroyed ? -before : res.writableLength - before;
    }
  }

  stats(): StreamStats {
    return {
      open: this.open.size,
      unsentBytes: this.unsent(),
      closedBehind: this.closedBehind,
      refused: this.refused,
    };
  }

  endAll(): void {
    for (const res of this.open) res.end();
  }

  private write(res: ServerResponse, chunk: Buffer, total: number): void {
    if (res.destroyed || res.writableEnded) return;
    const pending = res.writableLength;
    if (
      pending > 0 &&
      (pending + chunk.length > this.limits.streamBytes ||
        total + chunk.length > this.limits.totalBytes)
    ) {
      // Ending politely would queue behind what the reader is not taking: drop it all.
      this.closedBehind += 1;
      this.open.delete(res);
      res.destroy();
      return;
    }
    res.write(chunk);
  }

  private unsent(): number {
    let total = 0;
    for (const res of this.open) total += res.writableLength;
    return total;
  }
}
