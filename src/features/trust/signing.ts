import { AgentChatError } from "../../core/errors.js";
import { type Message, messageFileName } from "../../core/message.js";
import { identity } from "../../core/names.js";
import { lookAlikeNote, lookAlikeOf, NOT_A_SENDER, shownSender } from "../../core/safe-text.js";
import {
  approvalText,
  CHANNEL_ID_KEY,
  canonicalText,
  hasSignature,
  parseSigValue,
  rotationText,
  SIG_KEY,
  signatureDefect,
} from "../../core/signature.js";
import type { PostSigner, PublishedKeyDirectory } from "../../store/types.js";
import {
  filePins,
  hasPrivateKey,
  memoryPins,
  type PinStore,
  type PublishedKey,
  privateKeyPath,
  publishedKeyOf,
  readPrivateKey,
  readPublishedKey,
} from "./keys.js";
import { fileTrust, memoryTrust, type UserTrust } from "./user-trust.js";

type Ed25519 = typeof import("./ed25519.js");

const MAX_TOLD = 10_000;
/** Good signatures remembered per store (with their text: a few MB at most). */
const MAX_GOOD = 2_000;

/** What a reader knows of a channel when it checks its messages (see {@link Verifier}). */
export interface ChannelPlace {
  instance: string | undefined;
  names: readonly string[];
}

/** Loaded on the first signature made or checked, never by a reader of unsigned messages. */
let ed25519: Promise<Ed25519> | undefined;
export function loadEd25519(): Promise<Ed25519> {
  ed25519 ??= import("./ed25519.js");
  return ed25519;
}

export interface SignatureOptions {
  /**
   * The user's own folder (e.g. `~/.config/agent-chat`) with private keys and pins. Without
   * one, nothing is signed and pins last as long as the store.
   */
  configDir?: string;
  /**
   * Whether posts are signed with the keys in `configDir` (default true). A daemon says false:
   * whoever reaches its socket must not post under the keys of the user who started it.
   */
  sign?: boolean;
  /** A folder root, where public keys are published (`.keys/`); none for a NATS root. */
  publishedIn?: string;
  /** Where a root with no folder publishes them (the NATS namespace's KV). */
  directory?: PublishedKeyDirectory;
  /** Names the root in the pin file. */
  rootId: string;
  /** Another name of the root whose pins count too (the path as given, links unresolved). */
  rootAlias?: string;
  /** Hears each problem with keys once (an attempted key change, a corrupt key file). */
  onWarning?: (warning: string) => void;
}

/**
 * Tells verified, unsigned and forged messages apart (docs/signatures.md). Unsigned messages
 * cost a look at their frontmatter; only a signed one loads the crypto module and the keys.
 */
export class Verifier {
  private readonly pins: PinStore;
  /** The user's authorities and policy pins for this root (src/client/user-trust.ts). */
  readonly trust: UserTrust;
  private readonly told = new Set<string>();
  private readonly good = new Map<string, { key: string; text: string }>();
  private readonly chains = new Map<string, { text: string; valid: boolean }>();
  /** Warnings not yet handed to a caller (a read result carries them). */
  private pending: string[] = [];

  /**
   * @param placeOf what a reader knows of a channel: its instance id as pinned (none for a
   *   channel made without one), which a signed message there must be bound to, and the names
   *   whose look-alikes are marked forged there.
   */
  constructor(
    private readonly options: SignatureOptions,
    private readonly placeOf: (channel: string) => Promise<ChannelPlace> = async () => ({
      instance: undefined,
      names: [],
    }),
  ) {
    const { configDir, rootId, rootAlias } = options;
    this.pins = configDir ? filePins(configDir, rootId, rootAlias) : memoryPins();
    this.trust = configDir ? fileTrust(configDir, rootId, rootAlias) : memoryTrust();
  }

  /**
   * Copies of the messages with `trust` (and `trustNote` when forged) set. A `from` that is no
   * valid name, or whose name reads as another's of the channel, is forged whatever it signed
   * (docs/signatures.md, "What the model sees"): every surface, `--json` and the viewer too.
   */
  async check(messages: readonly Message[]): Promise<Message[]> {
    const places = new Map<string, ChannelPlace>();
    for (const m of messages) {
      if (!places.has(m.channel)) places.set(m.channel, await this.placeOf(m.channel));
    }
    const checked = messages.some(hasSignature)
      ? await this.checkSigned(messages, places)
      : messages.map((m): Message => ({ ...m, trust: "unsigned" }));
    return checked.map((m) => {
      if (shownSender(m.from) === undefined) return forged(m, NOT_A_SENDER);
      const like = lookAlikeOf(m.from, places.get(m.channel)?.names ?? []);
      return like === undefined ? m : forged(m, lookAlikeNote(like));
    });
  }

  private async checkSigned(
    messages: readonly Message[],
    places: Map<string, ChannelPlace>,
  ): Promise<Message[]> {
    const ed = await loadEd25519();
    const keys = new Map<string, string[] | undefined>();
    for (const m of messages) {
      const id = identity(m.from);
      // A `from` that is no name (`аlice` in Cyrillic has the key `lice`) pins nothing.
      if (!hasSignature(m) || keys.has(id) || shownSender(m.from) === undefined) continue;
      keys.set(id, await this.pinnedKeys(m.from, ed));
    }
    return messages.map((m) => this.checkOne(m, ed, keys, places.get(m.channel)?.instance));
  }

  /**
   * Whether the signature is right, remembered for the signatures seen last: a daemon or an
   * MCP server reads the same messages again and again, and a check costs ~60 µs, a look-up
   * and a string comparison almost nothing. Only good signatures are kept, with the exact
   * text and key they are good for.
   */
  private matches(key: string, text: string, signature: string, ed: Ed25519): boolean {
    const known = this.good.get(signature);
    if (known && known.key === key && known.text === text) return true;
    if (!ed.verifySignature(key, text, signature)) return false;
    if (this.good.size >= MAX_GOOD) this.good.delete(this.good.keys().next().value as string);
    this.good.set(signature, { key, text });
    return true;
  }

  /**
   * Whether `sig` (a `sig:` value) signs `text` with a key pinned for `name`: a statement such
   * as a read receipt, which counts only from a key this reader already trusts for the name.
   */
  async signedBy(name: string, text: string, sig: string): Promise<boolean> {
    const parsed = parseSigValue(sig);
    if (parsed === undefined) return false;
    const ed = await loadEd25519();
    const pinned = await this.pinnedKeys(name, ed);
    return (
      pinned?.includes(parsed.key) === true && this.matches(parsed.key, text, parsed.signature, ed)
    );
  }

  /** Warnings found since the last call, each reported once per store. */
  takeWarnings(): string[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  private checkOne(
    m: Message,
    ed: Ed25519,
    keys: Map<string, string[] | undefined>,
    instance: string | undefined,
  ): Message {
    if (shownSender(m.from) === undefined) return forged(m, NOT_A_SENDER);
    if (!hasSignature(m)) return { ...m, trust: "unsigned" };
    const defect = signatureDefect(m) ?? placeDefect(m, instance);
    if (defect !== undefined) return forged(m, defect);
    const sig = parseSigValue(m.extra[SIG_KEY]!)!;
    const id = identity(m.from);
    const pinned = keys.get(id);
    if (pinned !== undefined && !pinned.includes(sig.key)) {
      return forged(m, `signed by a key that is not ${m.from}'s pinned key`);
    }
    if (!this.matches(sig.key, canonicalText(m), sig.signature, ed)) {
      return forged(m, "the signature does not match the message");
    }
    if (!namedAsSigned(m)) {
      return forged(m, "the file name does not match its sender and title (renamed after signing)");
    }
    if (pinned === undefined) {
      // Trust on first use: the first good signature for a name with no published key.
      this.pins.set(m.from, [sig.key]);
      keys.set(id, [sig.key]);
    }
    return { ...m, trust: "verified" };
  }

  /**
   * The keys `name` is pinned to, pinning the published ones on first use and following the
   * rotations the pinned key signed, or a key an authority the user chose approved. A published key
   * that neither leads to is an attempted key change: the pin wins, and it is reported.
   */
  async pinnedKeys(name: string, ed: Ed25519): Promise<string[] | undefined> {
    const pinned = this.pins.get(name);
    const published = await this.published(name, ed);
    if (published === undefined) return pinned;
    if (pinned === undefined) {
      this.pins.set(name, published.keys);
      return published.keys;
    }
    const at = published.keys.lastIndexOf(pinned[pinned.length - 1]!);
    if (at < 0) {
      const approved = this.approvedFrom(published, ed);
      if (approved !== undefined) {
        const extended = [...pinned, ...published.keys.slice(approved)];
        this.pins.set(name, extended);
        return extended;
      }
      this.warn(
        `attempted key change for ${name}: the key published in the root is not the one ` +
          `pinned here, and no rotation signed by the pinned key leads to it; the pin wins ` +
          `(messages signed with the new key show as forged)`,
      );
      return pinned;
    }
    if (at === published.keys.length - 1) return pinned;
    const extended = [...pinned, ...published.keys.slice(at + 1)];
    this.pins.set(name, extended);
    return extended;
  }

  /**
   * Where in `doc.keys` an approval starts the chain: one signed by a key of an authority the
   * user chose for this root (`agent-chat id authority add`). Whoever a `_meta.json` names is
   * no authority: the root is written by every poster, an authority only by the user.
   */
  private approvedFrom(doc: PublishedKey, ed: Ed25519): number | undefined {
    for (const a of doc.approvals ?? []) {
      const at = doc.keys.indexOf(a.key);
      const byKeys = this.trust.authorityKeys(a.by);
      if (at < 0 || byKeys === undefined) continue;
      const text = approvalText(doc.name, a.key, a.by, a.channel);
      if (byKeys.some((k) => ed.verifySignature(k, text, a.sig))) return at;
    }
    return undefined;
  }

  private async published(name: string, ed: Ed25519): Promise<PublishedKey | undefined> {
    const doc = await this.publishedDoc(name);
    if (doc === undefined) return undefined;
    if (!this.validChain(doc, ed)) {
      this.warn(
        `ignored the published key of ${name}: a rotation is not signed by the key before it`,
      );
      return undefined;
    }
    return doc;
  }

  /** `name`'s published key file, from the root's folder or its key directory. */
  private async publishedDoc(name: string): Promise<PublishedKey | undefined> {
    const { publishedIn, directory } = this.options;
    if (publishedIn !== undefined) return readPublishedKey(publishedIn, name, (p) => this.warn(p));
    const entry = await directory?.get(name).catch(() => undefined);
    if (entry === undefined) return undefined;
    return publishedKeyOf(entry.text, name, `the published key of ${name}`, (p) => this.warn(p));
  }

  /** Reports a problem once, with the next read's warnings. */
  report(warning: string): void {
    this.warn(warning);
  }

  /** {@link validRotations}, remembered for the chain last seen per name (it rarely changes). */
  private validChain(doc: PublishedKey, ed: Ed25519): boolean {
    const text = JSON.stringify(doc);
    const known = this.chains.get(identity(doc.name));
    if (known?.text === text) return known.valid;
    const valid = validRotations(doc, ed);
    this.chains.set(identity(doc.name), { text, valid });
    return valid;
  }

  private warn(warning: string): void {
    if (this.told.has(warning)) return;
    // A daemon lives for weeks: what it told stays bounded (one held-back message a warning).
    if (this.told.size >= MAX_TOLD) this.told.clear();
    this.told.add(warning);
    // Handed out by read and wait; peek and watch never take them, so keep only the latest.
    if (this.pending.length >= 100) this.pending.shift();
    this.pending.push(warning);
    this.options.onWarning?.(warning);
  }
}

/** Each key of a published chain vouched for by the one before it. */
export function validRotations(doc: PublishedKey, ed: Ed25519): boolean {
  return doc.rotations.every((sig, i) =>
    ed.verifySignature(doc.keys[i]!, rotationText(doc.name, doc.keys[i]!, doc.keys[i + 1]!), sig),
  );
}

/**
 * Whether the file is named as the SPEC names it from the signed `from` and `title`: the name is
 * what `ls`, git and chat.py show, and the signature does not cover it (chat.py's own posts carry
 * no signature, and covering the name would change the bytes every signed file has), so a
 * signed message whose name says something else is not shown as verified.
 */
function namedAsSigned(m: Message): boolean {
  const name = m.file.slice(Math.max(m.file.lastIndexOf("/"), m.file.lastIndexOf("\\")) + 1);
  return name === messageFileName(m.seq, m.from, m.title);
}

/**
 * Why a signed message is not bound to this channel instance, or undefined when it is: checked
 * before its key is, so that a copy from elsewhere never pins a key on first use.
 */
function placeDefect(m: Message, instance: string | undefined): string | undefined {
  const bound = m.extra[CHANNEL_ID_KEY];
  if (bound === instance) return undefined;
  if (bound === undefined) {
    return "signed for no channel instance in a channel that has one (a copy from elsewhere)";
  }
  return "signed for another instance of the channel (a copy from another root or an earlier channel of the name)";
}

function forged(m: Message, note: string): Message {
  return { ...m, trust: "forged", trustNote: note };
}

/**
 * The signer for `name` when this user holds its key, else undefined (an lstat, no crypto).
 * Throws when the key is there but unusable (readable by others, not a key).
 */
export async function signerFor(
  configDir: string | undefined,
  name: string,
): Promise<PostSigner | undefined> {
  if (configDir === undefined || !hasPrivateKey(configDir, name)) return undefined;
  const pem = readPrivateKey(configDir, name);
  const ed = await loadEd25519();
  try {
    return ed.signerFromPem(pem);
  } catch (err) {
    throw new AgentChatError(
      "NO_KEY",
      `${privateKeyPath(configDir, name)} is not an Ed25519 private key`,
      { cause: err },
    );
  }
}
