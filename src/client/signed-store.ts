import { META_MAINTAINER } from "../core/governance.js";
import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import { identity } from "../core/names.js";
import { formatSigValue, pauseText, readReceiptText } from "../core/signature.js";
import { ForwardingStore } from "../store/forwarding.js";
import type {
  DeliveryProof,
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
} from "../store/types.js";
import { DEFAULT_WAIT_TIMEOUT_MS } from "../store/types.js";
import { type GuardTrust, guardPost, type Pause } from "./loop-guard.js";
import { admitPost, deliverable, signaturesRequired } from "./policy.js";
import { type SignatureOptions, signerFor, Verifier } from "./signing.js";

/** How many times the loop guards' window a `require` channel's guard reads. */
const GUARD_LOOK_BACK = 4;

/**
 * A store whose posts are signed when the poster's key is at hand and whose every message
 * says whether it is verified, unsigned or forged (docs/signatures.md). It sits above any
 * backend, so the folder store, NATS and the daemon (which serves a store wrapped so) agree.
 */
export function signedStore(inner: Store, options: SignatureOptions): Store {
  return new SignedStore(inner, options);
}

class SignedStore extends ForwardingStore {
  private readonly verifier: Verifier;
  private readonly signers = new Map<string, PostSigner | undefined>();

  constructor(
    inner: Store,
    private readonly options: SignatureOptions,
  ) {
    super(inner);
    // A key a maintainer approved counts when the channel it names says so (its _meta.json).
    this.verifier = new Verifier({
      maintainerOf: async (channel) => {
        const maintainer = (await this.meta(channel))?.[META_MAINTAINER];
        return typeof maintainer === "string" ? maintainer : undefined;
      },
      ...options,
    });
  }

  override async post(channel: string, input: PostInput): Promise<PostResult> {
    const signer =
      input.signer ?? (this.options.sign === false ? undefined : await this.signer(input.from));
    const meta = await this.meta(channel);
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
    readBy: (channel, agent, receipt) =>
      this.verifier.signedBy(
        agent,
        readReceiptText(channel, identity(agent), receipt.seq, receipt.at),
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
    const signature = signer.sign(readReceiptText(channel, identity(agent), seq, at));
    const sig = formatSigValue({ key: signer.key, signature });
    await this.inner.attestRead(channel, agent, { seq, at, sig });
  }

  /** Verified, then as the channel's policy delivers them to agents. */
  private async deliver(channel: string, messages: readonly Message[]): Promise<Message[]> {
    const checked = await this.verifier.check(messages);
    if (checked.length === 0) return checked;
    const meta = await this.meta(channel);
    return meta ? deliverable(channel, meta, checked, (w) => this.verifier.report(w)) : checked;
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
    const text = (p: Pause) => pauseText(channel, identity(from), p.since, p.reason);
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

  /** The channel's meta, or undefined when it cannot be read (the operation itself says why). */
  private async meta(channel: string): Promise<ChannelMeta | undefined> {
    try {
      return await this.inner.roster(channel);
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
