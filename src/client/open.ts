import { realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import type { SignatureOptions } from "../features/trust/index.js";
import { signedStore } from "../features/trust/index.js";
import { FsStore, type FsStoreOptions } from "../store/fs/index.js";
import { guardIdentities } from "../store/identities.js";
import type { NatsStoreOptions } from "../store/nats/index.js";
import type { NatsConnectionOptions } from "../store/roots.js";
import { parseRoot } from "../store/roots.js";
import type { Store } from "../store/types.js";

export interface OpenOptions extends FsStoreOptions {
  /** Connection options for `nats://` and `tls://` roots (credentials, TLS, timeouts). */
  nats?: NatsConnectionOptions;
  /** Keys and pins for signed messages (docs/signatures.md); default: verify, never sign. */
  signatures?: Omit<SignatureOptions, "rootId" | "rootAlias" | "publishedIn">;
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
  const configDir = options.signatures?.configDir;
  const folderOptions: FsStoreOptions = { ...options };
  if (configDir !== undefined && folderOptions.searchIndexSecret === undefined) {
    // Loaded by the first search: node:crypto is not for the commands agents run all the time.
    folderOptions.searchIndexSecret = async () =>
      (await import("./index-secret.js")).searchIndexSecret(configDir);
  }
  if (
    configDir !== undefined &&
    options.watch === false &&
    folderOptions.tailHintDir === undefined
  ) {
    // A process without file watches (a CLI command, a hook) keeps large channels' tails in the
    // user's own folder for the next one, never in the root (tail-hint.ts).
    folderOptions.tailHintDir = join(configDir, "channel-tails");
  }
  const store = guardIdentities(new FsStore(root, folderOptions));
  return signedStore(store, {
    ...options.signatures,
    ...folderRootIds(parsed.path),
    publishedIn: store.location,
  });
}

/**
 * How a folder root is named in the user's pins: its real path, so that a root reached through
 * a link and by its own path has one set of pins (a second set would pin on first sight again,
 * whatever the root holds by then), and the path as given, where pins made before may be.
 */
export function folderRootIds(root: string): { rootId: string; rootAlias?: string } {
  const given = resolve(root);
  let real: string;
  try {
    // The C library's, not a JavaScript walk with an lstat per folder: every command asks.
    real = realpathSync.native(given);
  } catch {
    return { rootId: given }; // not made yet: `id new` may come before the first channel
  }
  return real === given ? { rootId: real } : { rootId: real, rootAlias: given };
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
