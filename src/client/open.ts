import { join } from "node:path";
import { FsStore, type FsStoreOptions } from "../store/fs/index.js";
import { guardIdentities } from "../store/identities.js";
import type { NatsStoreOptions } from "../store/nats/index.js";
import type { NatsConnectionOptions } from "../store/roots.js";
import { parseRoot } from "../store/roots.js";
import type { Store } from "../store/types.js";
import { signedStore } from "./signed-store.js";
import type { SignatureOptions } from "./signing.js";

export interface OpenOptions extends FsStoreOptions {
  /** Connection options for `nats://` and `tls://` roots (credentials, TLS, timeouts). */
  nats?: NatsConnectionOptions;
  /** Keys and pins for signed messages (docs/signatures.md); default: verify, never sign. */
  signatures?: Omit<SignatureOptions, "rootId" | "publishedIn">;
}

/**
 * Opens the store behind a root: a folder path selects the embedded folder store, a
 * `nats://host:port/namespace` (or `tls://…`) URL the NATS JetStream store. Backends with heavy
 * dependencies are imported only when their URL is used. Either comes behind the identity guard
 * (src/store/identities.ts): a channel admits one name per cursor-file key. Every message read
 * says whether it is verified, unsigned or forged (src/client/signed-store.ts).
 */
export async function openStore(root: string, options: OpenOptions = {}): Promise<Store> {
  const parsed = parseRoot(root);
  if (parsed.kind === "nats") {
    const { NatsStore } = await import("../store/nats/index.js");
    const store = guardIdentities(await NatsStore.open(root, natsStoreOptions(options)));
    return signedStore(store, {
      ...options.signatures,
      rootId: store.location,
      directory: store.publishedKeys,
    });
  }
  const store = guardIdentities(new FsStore(root, options));
  return signedStore(store, {
    ...options.signatures,
    rootId: parsed.path,
    publishedIn: store.location,
  });
}

/** The options a NATS store takes from those given for any root (not the folder's lock ones). */
function natsStoreOptions(options: OpenOptions): NatsStoreOptions {
  const { nats, maxBodyBytes, now, harness, onWarning, recordPresence } = options;
  const picked: NatsStoreOptions = { ...nats };
  if (maxBodyBytes !== undefined) picked.maxBodyBytes = maxBodyBytes;
  if (now !== undefined) picked.now = now;
  if (harness !== undefined) picked.harness = harness;
  if (onWarning !== undefined) picked.onWarning = onWarning;
  if (recordPresence !== undefined) picked.recordPresence = recordPresence;
  return picked;
}

export interface RootSources {
  /** `--root` on the command line. */
  flag?: string | undefined;
  /** `$AGENT_CHAT_ROOT`. */
  env?: string | undefined;
  /** The user's home directory. */
  home: string;
}

/** The reference's precedence: `--root` > non-empty `$AGENT_CHAT_ROOT` > `~/agent-chat`. */
export function resolveRoot(sources: RootSources): string {
  if (sources.flag) return sources.flag;
  if (sources.env && sources.env.trim() !== "") return sources.env;
  return join(sources.home, "agent-chat");
}
