import { AgentChatError } from "../../core/errors.js";
import { sameAgent, validateName } from "../../core/names.js";
import { approvalText, isKeyText, rotationText } from "../../core/signature.js";
import type { PublishedKeyDirectory } from "../../store/types.js";
import {
  filePins,
  hasPrivateKey,
  localKeyNames,
  type PublishedKey,
  privateKeyPath,
  publishedKeyOf,
  readPrivateKey,
  readPublishedKey,
  writePrivateKey,
  writePublishedKey,
} from "./keys.js";
import { loadEd25519, validRotations } from "./signing.js";
import { fileTrust } from "./user-trust.js";

/**
 * The `agent-chat id` operations (docs/signatures.md): make, show, copy and rotate an agent's
 * key. The caller passes the user's config folder and the root; nothing here reads the
 * environment or the home folder.
 */
export interface IdentityPlace {
  /** The user's own folder for private keys and pins. */
  configDir: string;
  /** A folder root where public keys are published; undefined for a NATS root. */
  root: string | undefined;
  /** Where a root with no folder publishes them (a NATS namespace's KV). */
  directory?: PublishedKeyDirectory;
  /** Names the root in the pin file (its real path or URL). */
  rootId: string;
  /** Another name of the root whose pins count too (src/client/open.ts, folderRootIds). */
  rootAlias?: string;
}

function pinsOf(place: IdentityPlace) {
  return filePins(place.configDir, place.rootId, place.rootAlias);
}

function trustOf(place: IdentityPlace) {
  return fileTrust(place.configDir, place.rootId, place.rootAlias);
}

export interface IdentityInfo {
  name: string;
  /** The current public key (base64url), when one is known. */
  key: string | undefined;
  /** Where this user's private key is, when there is one. */
  privateKey: string | undefined;
  /** The keys published in the root, oldest first. */
  published: string[];
  /** The keys pinned here for this root, oldest first. */
  pinned: string[];
  /** The current key's fingerprint (SHA-256), to compare out of band. */
  fingerprint: string | undefined;
  /** The keys this user accepts from the name as an authority (`id authority add`). */
  authority: string[];
}

/** Makes `name`'s key pair: private key 0600 in the config folder, public key published and pinned. */
export async function createIdentity(place: IdentityPlace, name: string): Promise<IdentityInfo> {
  validateName("agent", name);
  const problems: string[] = [];
  const { doc: published, revision } = await readDoc(place, name, (p) => problems.push(p));
  const pins = pinsOf(place);
  if (published || pins.get(name)) {
    throw new AgentChatError(
      "KEY_CONFLICT",
      `${name} already has a key in this root (${published ? "published" : "pinned here"}); ` +
        `on a second machine of the same agent copy it (agent-chat id export / id import); ` +
        `to change it, run agent-chat id rotate --as ${name} where the key is; if that key ` +
        `is lost: agent-chat id new --as ${name} --replace, then a channel's maintainer ` +
        "approves the new key (agent-chat id approve)",
    );
  }
  if (problems.length > 0) throw new AgentChatError("KEY_CONFLICT", problems[0]!);
  const ed = await loadEd25519();
  const pair = ed.generateKeyPair();
  writePrivateKey(place.configDir, name, pair.pem, false);
  const doc: PublishedKey = { name, keys: [pair.key], rotations: [] };
  await writeDoc(place, doc, revision);
  pins.set(name, doc.keys);
  return showIdentity(place, name);
}

/**
 * Replaces `name`'s key with a new one that the old key vouches for: readers who pinned the old
 * key follow the rotation; anyone else's key for the name stays refused.
 */
export async function rotateIdentity(place: IdentityPlace, name: string): Promise<IdentityInfo> {
  validateName("agent", name);
  const ed = await loadEd25519();
  const old = ed.signerFromPem(readPrivateKey(place.configDir, name));
  const pins = pinsOf(place);
  const current = (await currentChain(place, name, ed)) ?? pins.get(name) ?? [old.key];
  if (current[current.length - 1] !== old.key) {
    throw new AgentChatError(
      "KEY_CONFLICT",
      `the key of ${name} in this root is not the one in ${privateKeyPath(place.configDir, name)}; ` +
        "only the current key can vouch for the next",
    );
  }
  const { doc: published, revision } = await readDoc(place, name);
  const doc: PublishedKey = published ?? { name, keys: [old.key], rotations: [] };
  const pair = ed.generateKeyPair();
  doc.rotations.push(old.sign(rotationText(doc.name, old.key, pair.key)));
  doc.keys.push(pair.key);
  // Published first: should the key file then fail to be written, the old key still verifies.
  await writeDoc(place, doc, revision);
  writePrivateKey(place.configDir, name, pair.pem, true);
  pins.set(name, [...(pins.get(name) ?? []), pair.key]);
  return showIdentity(place, name);
}

/**
 * A new key for `name` when the old one is lost and cannot vouch for it: published in place of
 * the old chain, and refused by every reader who pinned the old key until an authority of theirs
 * approves it ({@link approveKey}) or they trust it themselves ({@link trustKey}).
 */
export async function replaceIdentity(place: IdentityPlace, name: string): Promise<IdentityInfo> {
  validateName("agent", name);
  const pins = pinsOf(place);
  const { doc: published, revision } = await readDoc(place, name);
  const pinned = pins.get(name);
  if (!published && !pinned) return createIdentity(place, name);
  const pair = (await loadEd25519()).generateKeyPair();
  writePrivateKey(place.configDir, name, pair.pem, true);
  await writeDoc(place, { name, keys: [pair.key], rotations: [] }, revision);
  pins.set(name, [...(pinned ?? []), pair.key]);
  return showIdentity(place, name);
}

export interface KeyApprovalRequest {
  /** The governed channel whose maintainer approves. */
  channel: string;
  /** Its maintainer, from its `_meta.json` (undefined: it has none). */
  maintainer: string | undefined;
  /** Whose key, and which. */
  name: string;
  key: string;
  /** Who approves: must be the maintainer, with the maintainer's current key held here. */
  as: string;
}

/**
 * A maintainer's signed approval of `key` as `name`'s key, recorded in `name`'s published key
 * file: it counts for the readers who chose the maintainer as an authority for this root
 * ({@link addAuthority}), never because a `_meta.json` names them.
 */
export async function approveKey(
  place: IdentityPlace,
  request: KeyApprovalRequest,
): Promise<IdentityInfo> {
  const { channel, maintainer, key, as } = request;
  const name = validateName("agent", request.name);
  if (maintainer === undefined) {
    throw new AgentChatError("NOT_GOVERNED", `${channel} has no maintainer to approve a key`);
  }
  if (!sameAgent(as, maintainer)) {
    throw new AgentChatError(
      "NOT_MAINTAINER",
      `only ${channel}'s maintainer (${maintainer}) approves a key; give --as ${maintainer}`,
    );
  }
  const ed = await loadEd25519();
  const signer = ed.signerFromPem(readPrivateKey(place.configDir, as));
  const mine = await currentChain(place, as, ed);
  if (mine && mine[mine.length - 1] !== signer.key) {
    throw new AgentChatError(
      "KEY_CONFLICT",
      `the key of ${as} in this root is not the one in ${privateKeyPath(place.configDir, as)}`,
    );
  }
  const { doc, revision } = await readDoc(place, name);
  if (!doc?.keys.includes(key)) {
    throw new AgentChatError(
      "NOT_FOUND",
      `${key} is not published for ${name}; on ${name}'s machine run: agent-chat id new --as ${name} --replace`,
    );
  }
  const sig = signer.sign(approvalText(doc.name, key, as, channel));
  const others = (doc.approvals ?? []).filter((a) => a.key !== key);
  doc.approvals = [...others, { key, by: as, channel, sig }];
  await writeDoc(place, doc, revision);
  const pins = pinsOf(place);
  const pinned = pins.get(name);
  if (pinned && !pinned.includes(key)) {
    pins.set(name, [...pinned, ...doc.keys.slice(doc.keys.indexOf(key))]);
  }
  return showIdentity(place, name);
}

async function currentChain(
  place: IdentityPlace,
  name: string,
  ed: Awaited<ReturnType<typeof loadEd25519>>,
): Promise<string[] | undefined> {
  const { doc } = await readDoc(place, name);
  return doc && validRotations(doc, ed) ? doc.keys : undefined;
}

/** `name`'s published key file and the revision to write over (0: none yet, or a folder). */
async function readDoc(
  place: IdentityPlace,
  name: string,
  onProblem: (problem: string) => void = () => {},
): Promise<{ doc: PublishedKey | undefined; revision: number }> {
  if (place.root) return { doc: readPublishedKey(place.root, name, onProblem), revision: 0 };
  const entry = await place.directory?.get(name);
  if (entry === undefined) return { doc: undefined, revision: 0 };
  const doc = publishedKeyOf(entry.text, name, `the published key of ${name}`, onProblem);
  return { doc, revision: entry.revision };
}

/**
 * Publishes `doc`: in the folder root, or in the key directory over the revision read (someone
 * who published meanwhile wins, and this is refused: read again and decide again).
 */
async function writeDoc(place: IdentityPlace, doc: PublishedKey, revision: number): Promise<void> {
  if (place.root) {
    writePublishedKey(place.root, doc);
    return;
  }
  if (!place.directory) return;
  if (!(await place.directory.put(doc.name, `${JSON.stringify(doc, null, 2)}\n`, revision))) {
    throw new AgentChatError(
      "KEY_CONFLICT",
      `the published key of ${doc.name} changed meanwhile; run the command again`,
    );
  }
}

export interface ExportedIdentity {
  name: string;
  key: string;
  private_key: string;
}

/** `name`'s key pair, for `id import` on a second machine of the same agent. */
export async function exportIdentity(
  place: IdentityPlace,
  name: string,
): Promise<ExportedIdentity> {
  const pem = readPrivateKey(place.configDir, name);
  const signer = (await loadEd25519()).signerFromPem(pem);
  return { name, key: signer.key, private_key: pem };
}

/**
 * Installs an exported key pair. Refused when the root or the pins here know `name` by another
 * key: importing is for the same agent's key, not for taking over a name.
 */
export async function importIdentity(
  place: IdentityPlace,
  exported: ExportedIdentity,
): Promise<IdentityInfo> {
  const name = validateName("agent", exported.name);
  const ed = await loadEd25519();
  let key: string;
  try {
    key = ed.signerFromPem(exported.private_key).key;
  } catch (err) {
    throw new AgentChatError("INVALID_ARGUMENT", "the import holds no Ed25519 private key", {
      cause: err,
    });
  }
  const pins = pinsOf(place);
  const known = (await currentChain(place, name, ed)) ?? pins.get(name);
  if (known && known[known.length - 1] !== key) {
    throw new AgentChatError(
      "KEY_CONFLICT",
      `${name}'s current key in this root is another one; import the key from the machine ` +
        "that holds the current one",
    );
  }
  writePrivateKey(
    place.configDir,
    name,
    exported.private_key,
    hasPrivateKey(place.configDir, name),
  );
  if (!known) {
    await writeDoc(
      place,
      { name, keys: [key], rotations: [] },
      (await readDoc(place, name)).revision,
    );
    pins.set(name, [key]);
  } else if (!pins.get(name)) pins.set(name, known);
  return showIdentity(place, name);
}

export async function showIdentity(place: IdentityPlace, name: string): Promise<IdentityInfo> {
  validateName("agent", name);
  const { doc: published } = await readDoc(place, name);
  const pinned = pinsOf(place).get(name) ?? [];
  const keys = published?.keys ?? pinned;
  const key = keys[keys.length - 1];
  return {
    name: published && !sameAgent(published.name, name) ? published.name : name,
    key,
    privateKey: hasPrivateKey(place.configDir, name)
      ? privateKeyPath(place.configDir, name)
      : undefined,
    published: published?.keys ?? [],
    pinned,
    fingerprint: key === undefined ? undefined : (await loadEd25519()).fingerprint(key),
    authority: trustOf(place).authorityKeys(name) ?? [],
  };
}

/**
 * The user's own act: pins `key` as `name`'s (after the keys pinned before, so that old
 * messages keep verifying; `only` forgets those, for a first pin that was someone else's).
 * The way to accept a new key nobody the user trusts vouched for, once its fingerprint was
 * compared out of band.
 */
export async function trustKey(
  place: IdentityPlace,
  name: string,
  key: string,
  only = false,
): Promise<IdentityInfo> {
  validateName("agent", name);
  if (!isKeyText(key)) {
    throw new AgentChatError("INVALID_ARGUMENT", `not a public key: ${JSON.stringify(key)}`);
  }
  const pins = pinsOf(place);
  const before = only ? [] : (pins.get(name) ?? []).filter((k) => k !== key);
  pins.set(name, [...before, key]);
  return showIdentity(place, name);
}

/**
 * The user chooses `name` as an authority for this root: key approvals signed by it count
 * (`id approve`). Its key is the one given, else the one pinned here for it now, else the one
 * published; the fingerprint is printed so that the user compares it out of band.
 */
export async function addAuthority(
  place: IdentityPlace,
  name: string,
  key?: string,
): Promise<IdentityInfo> {
  validateName("agent", name);
  const pinned = pinsOf(place).get(name);
  const chosen =
    key ?? pinned?.at(-1) ?? (await currentChain(place, name, await loadEd25519()))?.at(-1);
  if (chosen === undefined || !isKeyText(chosen)) {
    throw new AgentChatError(
      chosen === undefined ? "NO_KEY" : "INVALID_ARGUMENT",
      chosen === undefined
        ? `no key is known here for ${name}; give the key: agent-chat id authority add ${name} KEY`
        : `not a public key: ${JSON.stringify(chosen)}`,
    );
  }
  trustOf(place).setAuthority(name, [chosen]);
  return showIdentity(place, name);
}

/** `name` is no longer an authority here; approvals it signed no longer count. */
export async function removeAuthority(place: IdentityPlace, name: string): Promise<boolean> {
  validateName("agent", name);
  const trust = trustOf(place);
  if (trust.authorityKeys(name) === undefined) return false;
  trust.setAuthority(name, undefined);
  return true;
}

/** The authorities this user chose for the root, with their keys. */
export function listAuthorities(place: IdentityPlace): Record<string, string[]> {
  return trustOf(place).authorities();
}

/** The names this user holds keys for, each as {@link showIdentity} sees it. */
export function listIdentities(place: IdentityPlace): Promise<IdentityInfo[]> {
  return Promise.all(localKeyNames(place.configDir).map((name) => showIdentity(place, name)));
}
