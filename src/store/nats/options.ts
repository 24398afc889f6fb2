import type { PresenceOptions } from "../core/index.js";
import type { NatsConnectionOptions } from "../roots.js";

export interface NatsStoreOptions extends NatsConnectionOptions, PresenceOptions {
  /** Largest accepted message body in bytes (default 1 MiB, capped by the server's max_payload). */
  maxBodyBytes?: number;
  /** The clock leases are measured by (default `Date.now`; tests inject one). */
  now?: () => number;
}
