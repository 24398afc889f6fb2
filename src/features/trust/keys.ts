import { lstatSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { AgentChatError } from "../../core/errors.js";
import { parseUntrustedJson } from "../../core/json.js";
import { identity, validateName } from "../../core/names.js";
import { isKeyText, isSignatureText } from "../../core/signature.js";
import {
  assertRealDir,
  ensureRealDir,
  readOwnTextSync,
  readRootTextSync,
  replaceFileSync,
} from "../../fsutil/root-files.js";

/**
 * Keys and pins (docs/signatures.md), on the file system only: nothing here loads
 * `node:crypto` (src/client/ed25519.ts does, when a signature is made or checked).
 *
 * - Private keys live in the user's own config folder, `<config>/keys/<identity>.key`, mode
 *   0600 in a 0700 folder, never in a root.
 * - Public keys are published in the root, `<root>/.keys/<identity>.pub` (a dot folder, which
 *   chat.py never lists), as JSON: `{ name, keys: [k0, k1, …], rotations: [s0, …] }` where `sN`
 *   is `kN`'s signature over rotationText(name, kN, kN+1): the last key is the current one.
 * - Pins (trust on first use, like SSH's known_hosts) live in `<config>/pins.json`, per root:
 *   the keys a name was first seen with, extended only by rotations the pinned key signed.
 */

/** A published key file is a few keys; anything larger is not one. */
const MAX_PUBLISHED_BYTES = 64 * 1024;
const MAX_PRIVATE_BYTES = 16 * 1024;
const KEYS_DIR = "keys";
const PUBLISHED_DIR = ".keys";

export interface PublishedKey {
  name: string;
  /** Every key the name has had, oldest first; the last is the current one. */
  keys: string[];
  /** `rotations[i]`: keys[i]'s signature vouching for keys[i + 1]. */
  rotations: string[];
  /**
   * Keys a channel's maintainer approved for the name when no rotation leads to them (the old
   * key lost): readers whose pin the chain does not reach accept them (docs/signatures.md).
   */
  approvals?: KeyApproval[];
}

export interface KeyApproval {
  /** The approved key: one of `keys`. */
  key: string;
  /** The maintainer who approved it, and of which channel. */
  by: string;
  channel: string;
  /** `by`'s signature over approvalText(name, key, by, channel). */
  sig: string;
}

export function privateKeyPath(configDir: string, name: string): string {
  return join(configDir, KEYS_DIR, `${identity(validateName("agent", name))}.key`);
}

/** Whether this user holds a private key for `name` (an lstat: no crypto, no read). */
export function hasPrivateKey(configDir: string, name: string): boolean {
  try {
    return lstatSync(privateKeyPath(configDir, name), { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/**
 * The PEM of `name`'s private key. Refused when it is not a plain file of this user's, or when
 * the group or others may read it: a key others can read signs for them too.
 */
export function readPrivateKey(configDir: string, name: string): string {
  const path = privateKeyPath(configDir, name);
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined) {
    throw new AgentChatError(
      "NO_KEY",
      `${name} has no key here (${path}); make one with: agent-chat id new --as ${name}`,
    );
  }
  if (!st.isFile()) {
    throw new AgentChatError("UNSAFE_FILE", `${path} is not a plain file; a key is never followed`);
  }
  if ((st.mode & 0o077) !== 0) {
    throw new AgentChatError(
      "UNSAFE_FILE",
      `${path} can be read by others (mode ${(st.mode & 0o777).toString(8)}); ` +
        `fix it with: chmod 600 ${path}`,
    );
  }
  if (typeof process.getuid === "function" && st.uid !== process.getuid()) {
    throw new AgentChatError("UNSAFE_FILE", `${path} belongs to another user`);
  }
  // Read as the checks saw it: no link followed, the same file, and no more than a key's size.
  return readOwnTextSync(path, MAX_PRIVATE_BYTES);
}

/**
 * Writes `name`'s private key, mode 0600 from its first byte (a temporary file renamed into
 * place). `replace` false refuses an existing key (KEY_CONFLICT).
 */
export function writePrivateKey(
  configDir: string,
  name: string,
  pem: string,
  replace: boolean,
): string {
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const dir = join(configDir, KEYS_DIR);
  mkdirSync(dir, { mode: 0o700, recursive: true });
  const path = privateKeyPath(configDir, name);
  if (!replace && lstatSync(path, { throwIfNoEntry: false }) !== undefined) {
    throw new AgentChatError(
      "KEY_CONFLICT",
      `${name} already has a key (${path}); change it with: agent-chat id rotate --as ${name}`,
    );
  }
  // A umask only takes bits away: created 0600, the key is never readable by others.
  replaceFileSync(dir, basename(path), pem, 0o600);
  return path;
}

/** The names this user holds private keys for (their identities, from the file names). */
export function localKeyNames(configDir: string): string[] {
  try {
    return readdirSync(join(configDir, KEYS_DIR))
      .filter((f) => f.endsWith(".key") && !f.startsWith("."))
      .map((f) => f.slice(0, -".key".length))
      .sort();
  } catch {
    return [];
  }
}

export function publishedKeyPath(root: string, name: string): string {
  return join(root, PUBLISHED_DIR, `${identity(name)}.pub`);
}

/**
 * `name`'s published key file in a folder root, checked for shape only (the rotations'
 * signatures are checked by whoever trusts it). Undefined when there is none. A link, a huge or
 * a corrupt file, or one for another name, is reported through `onProblem` and ignored.
 */
export function readPublishedKey(
  root: string,
  name: string,
  onProblem: (problem: string) => void,
): PublishedKey | undefined {
  const path = publishedKeyPath(root, name);
  let text: string;
  try {
    // `.keys` itself planted as a link would lead the read out of the root.
    assertRealDir(join(root, PUBLISHED_DIR));
    text = readRootTextSync(path, MAX_PUBLISHED_BYTES);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    onProblem(`ignored ${path}: ${(err as Error).message}`);
    return undefined;
  }
  return publishedKeyOf(text, name, path, onProblem);
}

/**
 * A published key file's text as `name`'s key, checked for shape only; `where` names it in the
 * problem reported when it is not one (corrupt, too large, another name's).
 */
export function publishedKeyOf(
  text: string,
  name: string,
  where: string,
  onProblem: (problem: string) => void,
): PublishedKey | undefined {
  const doc = text.length > MAX_PUBLISHED_BYTES ? undefined : parsePublished(text);
  if (doc === undefined || identity(doc.name) !== identity(name)) {
    onProblem(`ignored ${where}: not a published key of ${name}`);
    return undefined;
  }
  return doc;
}

function parsePublished(text: string): PublishedKey | undefined {
  const data = parseUntrustedJson(text);
  if (typeof data !== "object" || data === null) return undefined;
  const { name, keys, rotations, approvals } = data as Record<string, unknown>;
  if (typeof name !== "string" || !Array.isArray(keys) || !Array.isArray(rotations)) {
    return undefined;
  }
  if (keys.length === 0 || !keys.every(isKeyText)) return undefined;
  if (rotations.length !== keys.length - 1 || !rotations.every(isSignatureText)) return undefined;
  if (approvals === undefined) return { name, keys, rotations };
  if (!Array.isArray(approvals) || !approvals.every(isApproval)) return undefined;
  return { name, keys, rotations, approvals };
}

function isApproval(value: unknown): value is KeyApproval {
  if (typeof value !== "object" || value === null) return false;
  const { key, by, channel, sig } = value as Record<string, unknown>;
  return (
    isKeyText(key) && typeof by === "string" && typeof channel === "string" && isSignatureText(sig)
  );
}

/** Writes (or replaces) a published key file in a folder root. */
export function writePublishedKey(root: string, doc: PublishedKey): string {
  // A key may come before the first channel, as `init` does: the root is made if missing.
  mkdirSync(root, { recursive: true });
  const dir = join(root, PUBLISHED_DIR);
  ensureRealDir(dir);
  replaceFileSync(dir, `${identity(doc.name)}.pub`, `${JSON.stringify(doc, null, 2)}\n`);
  return publishedKeyPath(root, doc.name);
}

/** Pinned keys per root and name: the first key seen, plus the rotations it signed. */
export interface PinStore {
  get(name: string): string[] | undefined;
  set(name: string, keys: string[]): void;
}

/** Pins that last as long as the process: a library user who gave no config folder. */
export function memoryPins(): PinStore {
  const pins = new Map<string, string[]>();
  return {
    get: (name) => pins.get(identity(name)),
    set: (name, keys) => void pins.set(identity(name), keys),
  };
}

/**
 * Pins kept in `<config>/pins.json`, `{ "<root>": { "<identity>": [keys…] } }`, re-read on each
 * look-up (another process may have pinned meanwhile) and replaced atomically on each change.
 * `alias` is another name the root was known by (the path as given, before links were resolved):
 * pins found only there still count, so that a root reached by two paths has one set of pins.
 */
export function filePins(configDir: string, rootId: string, alias?: string): PinStore {
  const path = join(configDir, "pins.json");
  const load = (): Record<string, Record<string, string[]>> => {
    try {
      const data = JSON.parse(readFileSync(path, "utf8")) as unknown;
      return typeof data === "object" && data !== null ? (data as never) : {};
    } catch {
      return {};
    }
  };
  return {
    get(name) {
      const all = load();
      const keys =
        all[rootId]?.[identity(name)] ??
        (alias === undefined ? undefined : all[alias]?.[identity(name)]);
      return Array.isArray(keys) && keys.every(isKeyText) ? keys : undefined;
    },
    set(name, keys) {
      const all = load();
      all[rootId] = { ...all[rootId], [identity(name)]: keys };
      mkdirSync(configDir, { recursive: true, mode: 0o700 });
      replaceFileSync(configDir, "pins.json", `${JSON.stringify(all, null, 2)}\n`);
    },
  };
}
