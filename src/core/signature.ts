import { type Message, serializeMessage } from "./message.js";

/**
 * Signed messages (docs/signatures.md). A signed message file carries one more frontmatter line
 * after the reference's keys, `sig: ed25519:<key>:<signature>`, where `<key>` is the signer's raw
 * 32-byte Ed25519 public key and `<signature>` the 64-byte signature, both base64url without
 * padding. The signature is over the message's canonical bytes: the file as this package writes
 * it ({@link serializeMessage}) without that line. The seq is the one of the file name and the
 * channel the folder's, so a signed file copied to another number or channel no longer verifies;
 * a message signed in a channel with an instance id carries it ({@link CHANNEL_ID_KEY}), so a
 * copy into another root's channel of the same name does not verify either.
 *
 * This module is pure (no `node:crypto`): it only says what is signed and what a line holds, so
 * that a reader of unsigned messages never loads a crypto library.
 */

/** The frontmatter key of the signature line; chat.py keeps it as an unknown key. */
export const SIG_KEY = "sig";
const SIG_ALGORITHM = "ed25519";

export interface SigValue {
  /** The signer's public key, base64url (43 characters). */
  key: string;
  /** The signature, base64url (86 characters). */
  signature: string;
}

const B64URL_KEY = /^[A-Za-z0-9_-]{43}$/;
const B64URL_SIG = /^[A-Za-z0-9_-]{86}$/;

/** The parts of a `sig:` value, or undefined when it is not `ed25519:<key>:<signature>`. */
export function parseSigValue(value: string): SigValue | undefined {
  const parts = value.split(":");
  if (parts.length !== 3 || parts[0] !== SIG_ALGORITHM) return undefined;
  const [, key, signature] = parts as [string, string, string];
  return B64URL_KEY.test(key) && B64URL_SIG.test(signature) ? { key, signature } : undefined;
}

export function formatSigValue(sig: SigValue): string {
  return `${SIG_ALGORITHM}:${sig.key}:${sig.signature}`;
}

/** The bytes a signature covers: the message serialised without its `sig` line. */
export function canonicalText(message: Message): string {
  const { [SIG_KEY]: _sig, ...extra } = message.extra;
  return serializeMessage({ ...message, extra });
}

/**
 * Adds the signature line to a message text as {@link serializeMessage} wrote it: the last line
 * of the frontmatter, after the reference's keys and any extra ones.
 */
export function withSigLine(text: string, sig: SigValue): string {
  const close = text.indexOf("\n---\n", 4);
  return `${text.slice(0, close)}\n${SIG_KEY}: ${formatSigValue(sig)}${text.slice(close)}`;
}

/** A line in a body that looks like a signature line: a signature smuggled out of the frontmatter. */
const SIG_IN_BODY = /^sig\s*:\s*ed25519:/m;

/**
 * Why a message's signature cannot be right whatever the key, or undefined when it is worth
 * verifying (or there is none: see {@link hasSignature}). Pure checks, no crypto.
 */
export function signatureDefect(message: Message): string | undefined {
  if (message.sigDefect !== undefined) return message.sigDefect;
  const value = message.extra[SIG_KEY];
  if (value === undefined) {
    return SIG_IN_BODY.test(message.body) ? "a signature line inside the body" : undefined;
  }
  return parseSigValue(value) ? undefined : "a malformed signature line";
}

/** Whether the message claims a signature at all (a `sig` line, well-formed or not, anywhere). */
export function hasSignature(message: Message): boolean {
  return (
    message.extra[SIG_KEY] !== undefined ||
    message.sigDefect !== undefined ||
    SIG_IN_BODY.test(message.body)
  );
}

/** The text a key rotation signs: the old key vouches for the new one, for one name. */
export function rotationText(name: string, oldKey: string, newKey: string): string {
  return `agent-chat key rotation\nname: ${name}\nold: ${oldKey}\nnew: ${newKey}\n`;
}

/**
 * What a channel's maintainer signs to approve `key` as `name`'s key when the old key cannot
 * vouch for it (lost): `agent-chat id approve CH NAME KEY --as MAINTAINER`.
 */
export function approvalText(name: string, key: string, by: string, channel: string): string {
  return `agent-chat key approval\nname: ${name}\nkey: ${key}\nby: ${by}\nchannel: ${channel}\n`;
}

/**
 * The key, in `_meta.json` and in a signed message's frontmatter, of the channel's instance id:
 * random, made at `init`, pinned by every reader with the channel's policy. A signature covers
 * it, so a signed text copied from another root, or from an earlier channel of the same name,
 * names another instance and is forged there (docs/signatures.md, "Bound to its place").
 */
export const CHANNEL_ID_KEY = "channel_id";
const CHANNEL_ID = /^[A-Za-z0-9_-]{22}$/;

/** A new channel instance id: 128 random bits, base64url (the Web Crypto global, no import). */
export function newChannelId(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64url");
}

/** The instance id a `_meta.json` (or a pin) states, when it is a well-formed one. */
export function channelIdOf(meta: Record<string, unknown>): string | undefined {
  const id = meta[CHANNEL_ID_KEY];
  return typeof id === "string" && CHANNEL_ID.test(id) ? id : undefined;
}

/** The line that binds a statement to a channel instance; none for a channel made without one. */
function instanceLine(instance: string | undefined): string {
  return instance === undefined ? "" : `instance: ${instance}\n`;
}

/**
 * What an agent signs to say it was given a channel up to `seq` (a read receipt): where
 * signatures are required, the only proof of `read` (docs/delivery.md). Bound to the channel's
 * instance: a receipt copied from another root counts for nothing here.
 */
export function readReceiptText(
  channel: string,
  agent: string,
  seq: number,
  at: number,
  instance: string | undefined,
): string {
  return `agent-chat read receipt\nchannel: ${channel}\n${instanceLine(instance)}agent: ${agent}\nseq: ${seq}\nat: ${at}\n`;
}

/**
 * What a poster's own tools sign when its loop guard pauses it: where signatures are required,
 * a pause counts only so signed, so that no one else can pause a member by editing `_meta.json`.
 */
export function pauseText(
  channel: string,
  instance: string | undefined,
  agent: string,
  since: string,
  reason: string,
): string {
  return `agent-chat pause\nchannel: ${channel}\n${instanceLine(instance)}agent: ${agent}\nsince: ${since}\nreason: ${reason}\n`;
}

export function isKeyText(value: unknown): value is string {
  return typeof value === "string" && B64URL_KEY.test(value);
}

export function isSignatureText(value: unknown): value is string {
  return typeof value === "string" && B64URL_SIG.test(value);
}
