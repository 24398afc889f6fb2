import type { PresenceOptions } from "../records/index.js";
import type { NatsConnectionOptions } from "../roots.js";

export interface NatsStoreOptions extends NatsConnectionOptions, PresenceOptions {
  /** Largest accepted message body in bytes (default 1 MiB, capped by the server's max_payload). */
  maxBodyBytes?: number;
  /**
   * Told of every acknowledged post: how many publishes it took (1 when no other post raced it
   * and the server answered at once). For monitoring contention; the torture rows measure it.
   */
  onPosted?: (post: { channel: string; seq: number; tries: number }) => void;
  /** The clock leases are measured by (default `Date.now`; tests inject one). */
  now?: () => number;
}
