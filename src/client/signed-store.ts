import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import { weakenings, withPinnedPolicy } from "../core/policy-pin.js";
import { ForwardingStore } from "../store/forwarding.js";
import type {
  PeekOptions,
  PostInput,
  PostResult,
  PostSigner,
  ReadOptions,
  ReadResult,
  Store,
  ThreadNode,
  ThreadOptions,
  WaitOptions,
  WaitResult,
  WatchOptions,
} from "../store/types.js";
import { DEFAULT_WAIT_TIMEOUT_MS } from "../store/types.js";
import { guardPost } from "./loop-guard.js";
import { admitPost, deliverable } from "./policy.js";
import { PolicyPins, type PolicyStanding } from "./policy-pins.js";
import { type SignatureOptions, signerFor, Verifier } from "./signing.js";

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
    this.verifier = new Verifier(options);
    this.policies = new PolicyPins(this.verifier.trust, {
      lastSeq: async (channel) => (await inner.peek(channel, 1))[0]?.seq ?? 0,
      checkedAfter: async (channel, seq) => {
        const last = (await inner.peek(channel, 1))[0]?.seq ?? 0;
        if (last <= seq) return [];
        const after = await inner.peek(channel, last - seq);
        return this.verifier.check(after.filter((m) => m.seq > seq));
      },
    });
    const update = inner.updateMeta?.bind(inner);
    if (update) this.updateMeta = (channel, change) => this.changeMeta(update, channel, change);
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
    if (meta) {
      admitPost(channel, meta, input.from, signer !== undefined);
      await guardPost(this.inner, channel, meta, input.from);
    }
    return this.inner.post(channel, signer ? { ...input, signer } : input);
  }

  override async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    const result = await this.inner.read(channel, options);
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
    for (;;) {
      const result = await this.inner.wait(channels, options);
      const messages: Message[] = [];
      for (const channel of new Set(result.messages.map((m) => m.channel))) {
        const mine = result.messages.filter((m) => m.channel === channel);
        messages.push(...(await this.deliver(channel, mine)));
      }
      held.push(...result.warnings, ...this.verifier.takeWarnings());
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
    for await (const message of this.inner.watch(channels, options)) {
      yield* await this.verifier.check([message]);
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

  /** Verified, then as the channel's policy delivers them to agents. */
  private async deliver(channel: string, messages: readonly Message[]): Promise<Message[]> {
    const checked = await this.verifier.check(messages);
    if (checked.length === 0) return checked;
    const meta = await this.meta(channel);
    return meta ? deliverable(channel, meta, checked, (w) => this.verifier.report(w)) : checked;
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
