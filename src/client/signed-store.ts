import { META_MAINTAINER } from "../core/governance.js";
import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import type {
  Capabilities,
  ChannelInfo,
  ChannelsOptions,
  ClaimOptions,
  DoneOptions,
  FenceResult,
  InitOptions,
  NewTask,
  PathLeaseInfo,
  PathLeaseOptions,
  PeekOptions,
  PostInput,
  PostResult,
  PostSigner,
  PresenceInfo,
  ReadOptions,
  ReadResult,
  Receipts,
  ReleaseOptions,
  RenewOptions,
  SearchOptions,
  SearchResult,
  Store,
  TaskInfo,
  ThreadNode,
  ThreadOptions,
  WaitForOptions,
  WaitOptions,
  WaitResult,
  WatchOptions,
  WhoOptions,
} from "../store/types.js";
import { DEFAULT_WAIT_TIMEOUT_MS } from "../store/types.js";
import { guardPost } from "./loop-guard.js";
import { admitPost, deliverable } from "./policy.js";
import { type SignatureOptions, signerFor, Verifier } from "./signing.js";

/**
 * A store whose posts are signed when the poster's key is at hand and whose every message
 * says whether it is verified, unsigned or forged (docs/signatures.md). It sits above any
 * backend, so the folder store, NATS and the daemon (which serves a store wrapped so) agree.
 */
export function signedStore(inner: Store, options: SignatureOptions): Store {
  return new SignedStore(inner, options);
}

class SignedStore implements Store {
  readonly updateMeta?: Store["updateMeta"];
  readonly archive?: Store["archive"];
  readonly prune?: Store["prune"];
  readonly publishedKeys?: Store["publishedKeys"];
  private readonly verifier: Verifier;
  private readonly signers = new Map<string, PostSigner | undefined>();

  constructor(
    private readonly inner: Store,
    private readonly options: SignatureOptions,
  ) {
    if (inner.updateMeta) this.updateMeta = inner.updateMeta.bind(inner);
    if (inner.archive) this.archive = inner.archive.bind(inner);
    if (inner.prune) this.prune = inner.prune.bind(inner);
    if (inner.publishedKeys) this.publishedKeys = inner.publishedKeys;
    // A key a maintainer approved counts when the channel it names says so (its _meta.json).
    this.verifier = new Verifier({
      maintainerOf: async (channel) => {
        const maintainer = (await this.meta(channel))?.[META_MAINTAINER];
        return typeof maintainer === "string" ? maintainer : undefined;
      },
      ...options,
    });
  }

  get capabilities(): Capabilities {
    return this.inner.capabilities;
  }

  get location(): string {
    return this.inner.location;
  }

  init(channel: string, options?: InitOptions): Promise<ChannelMeta> {
    return this.inner.init(channel, options);
  }

  channels(options?: ChannelsOptions): Promise<ChannelInfo[]> {
    return this.inner.channels(options);
  }

  roster(channel: string): Promise<ChannelMeta> {
    return this.inner.roster(channel);
  }

  async post(channel: string, input: PostInput): Promise<PostResult> {
    const signer =
      input.signer ?? (this.options.sign === false ? undefined : await this.signer(input.from));
    const meta = await this.meta(channel);
    if (meta) {
      admitPost(channel, meta, input.from, signer !== undefined);
      await guardPost(this.inner, channel, meta, input.from);
    }
    return this.inner.post(channel, signer ? { ...input, signer } : input);
  }

  async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    const result = await this.inner.read(channel, options);
    const messages = await this.deliver(channel, result.messages);
    return { ...result, messages, warnings: [...result.warnings, ...this.verifier.takeWarnings()] };
  }

  async peek(channel: string, count?: number, options?: PeekOptions): Promise<Message[]> {
    return this.verifier.check(await this.inner.peek(channel, count, options));
  }

  cursor(channel: string, agent: string): Promise<number> {
    return this.inner.cursor(channel, agent);
  }

  /**
   * Waits again when the policy held back everything that woke it: an unsigned message in a
   * channel that requires signatures must not end an agent's wait (the cursor has moved past
   * it, so the next wait does not see it again).
   */
  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
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

  async *watch(channels: readonly string[], options?: WatchOptions): AsyncIterable<Message> {
    for await (const message of this.inner.watch(channels, options)) {
      yield* await this.verifier.check([message]);
    }
  }

  addTask(channel: string, task: NewTask): Promise<TaskInfo> {
    return this.inner.addTask(channel, task);
  }

  tasks(channel: string): Promise<TaskInfo[]> {
    return this.inner.tasks(channel);
  }

  claim(channel: string, task: string, agent: string, options?: ClaimOptions): Promise<TaskInfo> {
    return this.inner.claim(channel, task, agent, options);
  }

  renew(channel: string, task: string, agent: string, options?: RenewOptions): Promise<TaskInfo> {
    return this.inner.renew(channel, task, agent, options);
  }

  done(channel: string, task: string, agent: string, options?: DoneOptions): Promise<TaskInfo> {
    return this.inner.done(channel, task, agent, options);
  }

  release(
    channel: string,
    task: string,
    agent: string,
    options?: ReleaseOptions,
  ): Promise<TaskInfo> {
    return this.inner.release(channel, task, agent, options);
  }

  fence(channel: string, task: string, token: number): Promise<FenceResult> {
    return this.inner.fence(channel, task, token);
  }

  addPathLease(
    channel: string,
    pattern: string,
    agent: string,
    options?: PathLeaseOptions,
  ): Promise<PathLeaseInfo> {
    return this.inner.addPathLease(channel, pattern, agent, options);
  }

  pathLeases(channel: string): Promise<PathLeaseInfo[]> {
    return this.inner.pathLeases(channel);
  }

  renewPathLease(
    channel: string,
    lease: string,
    agent: string,
    options?: RenewOptions,
  ): Promise<PathLeaseInfo> {
    return this.inner.renewPathLease(channel, lease, agent, options);
  }

  releasePathLease(
    channel: string,
    lease: string,
    agent: string,
    options?: ReleaseOptions,
  ): Promise<PathLeaseInfo> {
    return this.inner.releasePathLease(channel, lease, agent, options);
  }

  receipts(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    return this.inner.receipts(channel, seq, options);
  }

  explain(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    return this.inner.explain(channel, seq, options);
  }

  waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    return this.inner.waitFor(channel, seq, options);
  }

  notify(channel: string, agent: string, seq: number): Promise<void> {
    return this.inner.notify(channel, agent, seq);
  }

  async touch(agent: string): Promise<void> {
    return this.inner.touch?.(agent);
  }

  who(channel?: string, options?: WhoOptions): Promise<PresenceInfo[]> {
    return this.inner.who(channel, options);
  }

  search(query: string, options?: SearchOptions): Promise<SearchResult> {
    return this.inner.search(query, options);
  }

  /** The thread, each message marked verified, unsigned or forged as a read marks it. */
  async thread(channel: string, seq: number, options?: ThreadOptions): Promise<ThreadNode> {
    const tree = await this.inner.thread(channel, seq, options);
    const nodes: ThreadNode[] = [];
    const walk = (node: ThreadNode) => {
      nodes.push(node);
      node.replies.forEach(walk);
    };
    walk(tree);
    const checked = await this.verifier.check(nodes.map((n) => n.message));
    const mark = (node: ThreadNode, index: { next: number }): ThreadNode => ({
      message: checked[index.next++] ?? node.message,
      replies: node.replies.map((r) => mark(r, index)),
    });
    return mark(tree, { next: 0 });
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Verified, then as the channel's policy delivers them to agents. */
  private async deliver(channel: string, messages: readonly Message[]): Promise<Message[]> {
    const checked = await this.verifier.check(messages);
    if (checked.length === 0) return checked;
    const meta = await this.meta(channel);
    return meta ? deliverable(channel, meta, checked, (w) => this.verifier.report(w)) : checked;
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
