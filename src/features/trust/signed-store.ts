import type { Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { identity } from "../../core/names.js";
import {
  CHANNEL_ID_KEY,
  channelIdOf,
  formatSigValue,
  newChannelId,
  pauseText,
  readReceiptText,
} from "../../core/signature.js";
import { ForwardingStore } from "../../store/forwarding.js";
import { wholeChannel } from "../../store/paging.js";
import type {
  DeliveryProof,
  InitOptions,
  PeekOptions,
  PostInput,
  PostResult,
  PostSigner,
  PresenceInfo,
  ReadOptions,
  ReadResult,
  Receipts,
  Store,
  ThreadNode,
  ThreadOptions,
  WaitForOptions,
  WaitOptions,
  WaitResult,
  WatchOptions,
  WhoOptions,
} from "../../store/types.js";
import { DEFAULT_WAIT_TIMEOUT_MS } from "../../store/types.js";
import {
  admitPost,
  deliverable,
  type GuardTrust,
  guardPost,
  type Pause,
  POLICY_STATUS,
  PolicyPins,
  type PolicyStanding,
  signaturesRequired,
  weakenings,
  withPinnedPolicy,
} from "../governance/index.js";
import { type ChannelPlace, type SignatureOptions, signerFor, Verifier } from "./signing.js";

/** How many times the loop guards' window a `require` channel's guard reads. */
const GUARD_LOOK_BACK = 4;

/**
 * A store whose posts are signed when the poster's key is at hand and whose every message
 * says whether it is verified, unsigned or forged (docs/signatures.md). It is also where the
 * reader's policy pins apply: `roster` gives the policy this reader pinned in place of a weaker
 * `_meta.json`, so posting, delivery and governance all obey it. It sits above any backend, so
 * the folder store, NATS and the daemon (which serves a store wrapped so) agree.
 */
export function signedStore(inner: Store, options: SignatureOptions): Store {
  return new SignedStore(inner, options);
}

/** A store that keeps the user's policy pins: what openStore returns (src/client/open.ts). */
export interface PinnedPolicyStore extends Store {
  /** The policy this reader obeys in the channel, and how `_meta.json` is weaker, if it is. */
  policyStanding(channel: string): Promise<PolicyStanding>;
  /** Pins the policy the channel's `_meta.json` states now: the user accepts it. */
  acceptPolicy(channel: string): Promise<ChannelMeta>;
}

export function hasPinnedPolicy(store: Store): store is PinnedPolicyStore {
  return store instanceof SignedStore;
}

class SignedStore extends ForwardingStore implements PinnedPolicyStore {
  private readonly verifier: Verifier;
  private readonly policies: PolicyPins;
  private readonly signers = new Map<string, PostSigner | undefined>();
  declare readonly updateMeta?: Store["updateMeta"];

  constructor(
    inner: Store,
    private readonly options: SignatureOptions,
  ) {
    super(inner);
    this.verifier = new Verifier(options, (channel) => this.placeOf(channel));
    const report = (warning: string) => this.verifier.report(warning);
    this.policies = new PolicyPins(
      this.verifier.trust,
      {
        lastSeq: async (channel) => (await inner.peek(channel, 1))[0]?.seq ?? 0,
        policyChangesAfter: async (channel, seq, last) => {
          const after = await wholeChannel(inner, channel, { after: seq, upTo: last });
          // Only a policy message can move a pin: the others cost no signature check.
          return this.verifier.check(after.filter((m) => m.status === POLICY_STATUS));
        },
      },
      report,
    );
    const update = inner.updateMeta?.bind(inner);
    if (update) this.updateMeta = (channel, change) => this.changeMeta(update, channel, change);
  }

  /**
   * A new channel has an instance id that every signature made in it is bound to, pinned at
   * once for its maker (docs/signatures.md, "Bound to its place").
   */
  override async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const extra = { [CHANNEL_ID_KEY]: newChannelId(), ...options.extra };
    const meta = await this.inner.init(channel, { ...options, extra });
    await this.policies.accept(channel, meta);
    return meta;
  }

  /**
   * The instance id this reader pinned for the channel (or, before any pin, the one its
   * `_meta.json` states), read from the pin, not through {@link roster}: following the pin's
   * signed changes checks signatures, which asks this. And the names a sender must not read
   * as: the members and maintainer the file names and those pinned.
   */
  private async placeOf(channel: string): Promise<ChannelPlace> {
    const pinned = this.verifier.trust.channelPin(channel)?.policy;
    const meta: Partial<ChannelMeta> = await this.inner.roster(channel).catch(() => ({}));
    const names = [meta, pinned ?? {}].flatMap((m) => [
      ...(Array.isArray(m.members) ? m.members : []),
      ...(typeof m.maintainer === "string" ? [m.maintainer] : []),
    ]);
    const instance = pinned === undefined ? channelIdOf(meta) : channelIdOf(pinned);
    return { instance, names };
  }

  /** The meta with the policy this reader pinned in place of a weaker one (reported once). */
  override async roster(channel: string): Promise<ChannelMeta> {
    return (await this.policyStanding(channel)).meta;
  }

  async policyStanding(channel: string): Promise<PolicyStanding> {
    const standing = await this.policies.standing(channel, await this.inner.roster(channel));
    if (standing.warning) this.verifier.report(standing.warning);
    return standing;
  }

  async acceptPolicy(channel: string): Promise<ChannelMeta> {
    const meta = await this.inner.roster(channel);
    await this.policies.accept(channel, meta);
    return meta;
  }

  /**
   * A change made by this user starts from the policy they pinned (so that writing it repairs a
   * weakened `_meta.json`), and what they wrote is pinned: their own act.
   */
  private async changeMeta(
    update: NonNullable<Store["updateMeta"]>,
    channel: string,
    change: (meta: ChannelMeta) => ChannelMeta,
  ): Promise<ChannelMeta> {
    const pin = this.verifier.trust.channelPin(channel)?.policy;
    const meta = await update(channel, (current) =>
      change(pin && weakenings(pin, current).length > 0 ? withPinnedPolicy(current, pin) : current),
    );
    await this.policies.accept(channel, meta);
    return meta;
  }

  override async post(channel: string, input: PostInput): Promise<PostResult> {
    const signer =
      input.signer ?? (this.options.sign === false ? undefined : await this.signer(input.from));
    const meta = await this.meta(channel);
    const instance = meta && channelIdOf(meta);
    if (signer && instance)
      input = { ...input, extra: { ...input.extra, [CHANNEL_ID_KEY]: instance } };
    if (meta) {
      admitPost(channel, meta, input.from, signer !== undefined);
      await guardPost(
        this.inner,
        channel,
        meta,
        input.from,
        this.guardTrust(channel, meta, input.from, signer),
      );
    }
    return this.inner.post(channel, signer ? { ...input, signer } : input);
  }

  override async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    await this.meta(channel); // pins the channel's policy on first contact, messages or not
    const result = await this.inner.read(channel, options);
    if (options.peek !== true) await this.signReadReceipt(channel, options.as, result.cursor);
    const messages = await this.deliver(channel, result.messages);
    return { ...result, messages, warnings: [...result.warnings, ...this.verifier.takeWarnings()] };
  }

  override async peek(channel: string, count?: number, options?: PeekOptions): Promise<Message[]> {
    return this.verifier.check(await this.inner.peek(channel, count, options));
  }

  /**
   * Waits again when the policy held back everything that woke it: an unsigned message in a
   * channel that requires signatures must not end an agent's wait (the cursor has moved past
   * it, so the next wait does not see it again).
   */
  override async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS);
    const held: string[] = [];
    for (const channel of channels) await this.meta(channel); // first contact pins, as read
    for (;;) {
      const result = await this.inner.wait(channels, options);
      const messages: Message[] = [];
      for (const channel of new Set(result.messages.map((m) => m.channel))) {
        const mine = result.messages.filter((m) => m.channel === channel);
        messages.push(...(await this.deliver(channel, mine)));
      }
      held.push(...result.warnings, ...this.verifier.takeWarnings());
      for (const [channel, cursor] of Object.entries(result.cursors)) {
        await this.signReadReceipt(channel, options.as, cursor);
      }
      if (messages.length > 0 || result.messages.length === 0) {
        return { ...result, messages, warnings: held };
      }
      options = { ...options, timeoutMs: Math.max(1, deadline - Date.now()) };
    }
  }

  override async *watch(
    channels: readonly string[],
    options?: WatchOptions,
  ): AsyncIterable<Message> {
    // As a read delivers them: what the policy holds back (an unsigned message where signatures
    // are required) neither shows in a tail nor wakes an agent (hook wait, channel push, run).
    for await (const message of this.inner.watch(channels, options)) {
      yield* await this.deliver(message.channel, [message]);
    }
  }

  /** The thread, each message marked verified, unsigned or forged as a read marks it. */
  override async thread(
    channel: string,
    seq: number,
    options?: ThreadOptions,
  ): Promise<ThreadNode> {
    const tree = await this.inner.thread(channel, seq, options);
    const nodes: ThreadNode[] = [];
    const walk = (node: ThreadNode) => {
      nodes.push(node);
      node.replies.forEach(walk);
    };
    walk(tree);
    const checked = await this.verifier.check(nodes.map((n) => n.message));
    const mark = (node: ThreadNode, index: { next: number }): ThreadNode => ({
      ...node,
      message: checked[index.next++] ?? node.message,
      replies: node.replies.map((r) => mark(r, index)),
    });
    return mark(tree, { next: 0 });
  }

  /** Receipts in which, where signatures are required, only what addressees signed counts. */
  override async receipts(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    return this.inner.receipts(channel, seq, await this.withProof(channel, options ?? {}));
  }

  override async explain(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    return this.inner.explain(channel, seq, await this.withProof(channel, options ?? {}));
  }

  override async waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    return this.inner.waitFor(channel, seq, await this.withProof(channel, options));
  }

  /** Who is there; in a channel that requires signatures, owed and unread from verified messages. */
  override async who(channel?: string, options?: WhoOptions): Promise<PresenceInfo[]> {
    if (channel === undefined) return this.inner.who(channel, options);
    return this.inner.who(channel, await this.withProof(channel, options ?? {}));
  }

  /** The options with what proves a delivery step, when the channel requires signatures. */
  private async withProof<O extends WhoOptions>(channel: string, options: O): Promise<O> {
    const meta = await this.meta(channel);
    return meta && signaturesRequired(meta) ? { ...options, proof: this.proof } : options;
  }

  private readonly proof: DeliveryProof = {
    authored: async (messages) =>
      (await this.verifier.check(messages)).filter((m) => m.trust === "verified"),
    readBy: async (channel, agent, receipt) =>
      this.verifier.signedBy(
        agent,
        readReceiptText(
          channel,
          identity(agent),
          receipt.seq,
          receipt.at,
          (await this.placeOf(channel)).instance,
        ),
        receipt.sig,
      ),
  };

  /**
   * Where the channel requires signatures and the reader's key is here, signs that it was given
   * the channel up to `seq`: the receipt that proves `read` to the sender (a cursor does not).
   */
  private async signReadReceipt(channel: string, agent: string, seq: number): Promise<void> {
    if (seq <= 0 || this.options.sign === false || !this.inner.attestRead) return;
    const signer = await this.signer(agent); // first: a reader without a key pays nothing more
    if (!signer) return;
    const meta = await this.meta(channel);
    if (!meta || !signaturesRequired(meta)) return;
    const at = Date.now();
    const text = readReceiptText(channel, identity(agent), seq, at, channelIdOf(meta));
    const signature = signer.sign(text);
    const sig = formatSigValue({ key: signer.key, signature });
    await this.inner.attestRead(channel, agent, { seq, at, sig });
  }

  /** Verified, then as the channel's policy delivers them to agents. */
  private async deliver(channel: string, messages: readonly Message[]): Promise<Message[]> {
    const checked = await this.verifier.check(messages);
    if (checked.length === 0) return checked;
    // Fails closed: a policy that cannot be worked out delivers nothing (the error says why).
    const meta = await this.roster(channel);
    return deliverable(channel, meta, checked, (w) => this.verifier.report(w));
  }

  /**
   * The loop guards under the channel's policy: where signatures are required they count only
   * verified messages, and a pause binds only when the paused poster's own tools signed it.
   */
  private guardTrust(
    channel: string,
    meta: ChannelMeta,
    from: string,
    signer: PostSigner | undefined,
  ): GuardTrust {
    const required = signaturesRequired(meta);
    const instance = channelIdOf(meta);
    const text = (p: Pause) => pauseText(channel, instance, identity(from), p.since, p.reason);
    return {
      recent: (count) => this.recentDeliverable(channel, meta, count),
      binds: async (pause) => {
        if (!required) return true;
        const binds =
          typeof pause.sig === "string" &&
          (await this.verifier.signedBy(from, text(pause), pause.sig));
        if (!binds) {
          this.verifier.report(
            `${channel}: the pause of ${from} in _meta.json is not signed by ${from}; ignored (signatures: require)`,
          );
        }
        return binds;
      },
      sign: (pause) =>
        required && signer
          ? formatSigValue({ key: signer.key, signature: signer.sign(text(pause)) })
          : undefined,
    };
  }

  /**
   * The last `count` messages the policy delivers, for the loop guards: verified, held-back
   * ones dropped without a warning (the guard is not a reader). Where signatures are required,
   * a flood of look-alikes may stand between the real messages, so it looks further back.
   */
  private async recentDeliverable(
    channel: string,
    meta: ChannelMeta,
    count: number,
  ): Promise<Message[]> {
    const lookBack = signaturesRequired(meta) ? GUARD_LOOK_BACK : 1;
    const checked = await this.verifier.check(await this.inner.peek(channel, count * lookBack));
    return deliverable(channel, meta, checked, () => {}).slice(-count);
  }

  /** The channel's meta as pinned, or undefined when it cannot be read (the operation says why). */
  private async meta(channel: string): Promise<ChannelMeta | undefined> {
    try {
      return await this.roster(channel);
    } catch {
      return undefined;
    }
  }

  /** The poster's signer, looked up once per store (a missing key costs one lstat). */
  private async signer(from: string): Promise<PostSigner | undefined> {
    if (!this.signers.has(from)) {
      this.signers.set(from, await signerFor(this.options.configDir, from));
    }
    return this.signers.get(from);
  }
}
