/**
 * What a root names, decided without loading any backend: the CLI asks this on every start, and
 * the NATS client must stay off the start-up path of folder commands.
 */
/** A root given as a URL (`nats://…`, `tls://…`, any `scheme://`) rather than a folder path. */
export function isUrlRoot(root: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(root);
}

export function isNatsUrl(root: string): boolean {
  return /^(nats|tls):\/\//i.test(root);
}

/**
 * How to reach and authenticate to nats-server. Every field maps onto the NATS client's own
 * connection options; the CLI fills them from the environment, never from printed output.
 */
export interface NatsConnectionOptions {
  user?: string;
  pass?: string;
  token?: string;
  /** A NATS credentials file (JWT + NKey seed), as `nsc` writes it. */
  credsFile?: string;
  /** TLS: a CA to trust, and a client certificate when the server asks for one. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /** More seed servers (`host:port`) beside the root URL's, e.g. from the config file. */
  servers?: string[];
  /** Bound on connecting and on every request (default 5 s): nothing hangs on a dead server. */
  timeoutMs?: number;
  /**
   * Copies a new namespace keeps (its stream and KV bucket): default 3 on a cluster of three or
   * more servers, else as many as it has. The root URL's `?replicas=N` wins over this.
   */
  replicas?: number;
  /** Hears what the user should know but that does not stop the open (an R1 namespace on a cluster). */
  onWarning?: (warning: string) => void;
}
