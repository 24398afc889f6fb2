import { AgentChatError } from "../core/errors.js";
import { META_MAINTAINER } from "../core/governance.js";
import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import { assertDistinctAgents, identity, sameAgent, validateName } from "../core/names.js";
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
} from "./types.js";

/** A name a channel declares, and how (for the refusal message). */
interface Known {
  name: string;
  how: string;
}

/** Key → the name declared with that key: the members, then the maintainer. */
type ChannelNames = Map<string, Known>;

/**
 * The one rule that keeps names that share a key apart, above every backend. The reference
 * names cursor files and claim markers by `slug(agent)`, so `bob_x`, `bob-x` and `bob.x` would
 * share a cursor, claims and relevance. A channel therefore admits one name per key: an agent
 * may not post, read, wait, claim, release or add a task in a channel that declares a different
 * name with its key, as a member or as its maintainer. `init` refuses members that collide with
 * each other or with the maintainer.
 *
 * Only declared names count. The senders of an open channel would need its messages read on
 * every command's first operation (500 of them cost a fresh CLI process ~50 ms): a team that
 * wants names kept apart declares its members.
 *
 * This is a guard against confusion, not authentication: any local user can still act under
 * any name that is not refused (see docs/governance.md, "Trust model").
 */
export function guardIdentities(store: Store): Store {
  return new IdentityGuard(store);
}

class IdentityGuard implements Store {
  private readonly names = new Map<string, ChannelNames>();
  readonly updateMeta?: Store["updateMeta"];
  readonly archive?: Store["archive"];
  readonly prune?: Store["prune"];
  readonly publishedKeys?: Store["publishedKeys"];

  constructor(private readonly inner: Store) {
    if (inner.updateMeta) this.updateMeta = inner.updateMeta.bind(inner);
    if (inner.archive) this.archive = inner.archive.bind(inner);
    if (inner.prune) this.prune = inner.prune.bind(inner);
    if (inner.publishedKeys) this.publishedKeys = inner.publishedKeys;
  }

  get capabilities(): Capabilities {
    return this.inner.capabilities;
  }

  get location(): string {
    return this.inner.location;
  }

  async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const members = [...(options.members ?? [])];
    const maintainer = options.extra?.[META_MAINTAINER];
    if (typeof maintainer === "string") members.push(maintainer);
    assertDistinctAgents(members, "members");
    return this.inner.init(channel, options);
  }

  channels(options?: ChannelsOptions): Promise<ChannelInfo[]> {
    return this.inner.channels(options);
  }

  roster(channel: string): Promise<ChannelMeta> {
    return this.inner.roster(channel);
  }

  async post(channel: string, input: PostInput): Promise<PostResult> {
    await this.admit(channel, input.from);
    return this.inner.post(channel, input);
  }

  async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    await this.admit(channel, options.as);
    return this.inner.read(channel, options);
  }

  peek(channel: string, count?: number, options?: PeekOptions): Promise<Message[]> {
    return this.inner.peek(channel, count, options);
  }

  cursor(channel: string, agent: string): Promise<number> {
    return this.inner.cursor(channel, agent);
  }

  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    for (const channel of new Set(channels)) await this.admit(channel, options.as);
    return this.inner.wait(channels, options);
  }

  watch(channels: readonly string[], options?: WatchOptions): AsyncIterable<Message> {
    return this.inner.watch(channels, options);
  }

  async addTask(channel: string, task: NewTask): Promise<TaskInfo> {
    await this.admit(channel, task.from);
    return this.inner.addTask(channel, task);
  }

  tasks(channel: string): Promise<TaskInfo[]> {
    return this.inner.tasks(channel);
  }

  async claim(
    channel: string,
    task: string,
    agent: string,
    options?: ClaimOptions,
  ): Promise<TaskInfo> {
    await this.admit(channel, agent);
    return this.inner.claim(channel, task, agent, options);
  }

  async renew(
    channel: string,
    task: string,
    agent: string,
    options?: RenewOptions,
  ): Promise<TaskInfo> {
    await this.admit(channel, agent);
    return this.inner.renew(channel, task, agent, options);
  }

  async done(
    channel: string,
    task: string,
    agent: string,
    options?: DoneOptions,
  ): Promise<TaskInfo> {
    await this.admit(channel, agent);
    return this.inner.done(channel, task, agent, options);
  }

  async release(
    channel: string,
    task: string,
    agent: string,
    options?: ReleaseOptions,
  ): Promise<TaskInfo> {
    await this.admit(channel, agent);
    return this.inner.release(channel, task, agent, options);
  }

  fence(channel: string, task: string, token: number): Promise<FenceResult> {
    return this.inner.fence(channel, task, token);
  }

  async addPathLease(
    channel: string,
    pattern: string,
    agent: string,
    options?: PathLeaseOptions,
  ): Promise<PathLeaseInfo> {
    await this.admit(channel, agent);
    return this.inner.addPathLease(channel, pattern, agent, options);
  }

  pathLeases(channel: string): Promise<PathLeaseInfo[]> {
    return this.inner.pathLeases(channel);
  }

  async renewPathLease(
    channel: string,
    lease: string,
    agent: string,
    options?: RenewOptions,
  ): Promise<PathLeaseInfo> {
    await this.admit(channel, agent);
    return this.inner.renewPathLease(channel, lease, agent, options);
  }

  async releasePathLease(
    channel: string,
    lease: string,
    agent: string,
    options?: ReleaseOptions,
  ): Promise<PathLeaseInfo> {
    await this.admit(channel, agent);
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

  async notify(channel: string, agent: string, seq: number): Promise<void> {
    await this.admit(channel, agent);
    return this.inner.notify(channel, agent, seq);
  }

  who(channel?: string, options?: WhoOptions): Promise<PresenceInfo[]> {
    return this.inner.who(channel, options);
  }

  async touch(agent: string): Promise<void> {
    return this.inner.touch?.(agent);
  }

  search(query: string, options?: SearchOptions): Promise<SearchResult> {
    return this.inner.search(query, options);
  }

  thread(channel: string, seq: number, options?: ThreadOptions): Promise<ThreadNode> {
    return this.inner.thread(channel, seq, options);
  }

  close(): Promise<void> {
    this.names.clear();
    return this.inner.close();
  }

  /**
   * Refuses `agent` (NOT_A_MEMBER) when the channel declares a different name with its key. Any
   * other problem (a bad name, a missing channel) is left to the backend, so that its errors
   * stay what they are without the guard.
   */
  private async admit(channel: string, agent: string): Promise<void> {
    try {
      validateName("channel", channel);
      validateName("agent", agent);
    } catch {
      return;
    }
    const cached = this.names.get(channel)?.get(identity(agent));
    // A name this process already knows as the one with its key needs no new look.
    if (cached && sameAgent(cached.name, agent)) return;
    let declared: ChannelNames;
    try {
      declared = declaredNames(await this.inner.roster(channel));
    } catch {
      return;
    }
    this.names.set(channel, declared);
    const first = declared.get(identity(agent));
    if (first && !sameAgent(first.name, agent)) {
      throw new AgentChatError(
        "NOT_A_MEMBER",
        `${agent} may not act in ${channel}: the name collides with ${first.name}, ${first.how} ` +
          `(both would use the cursor file .cursors/${identity(agent)}.txt and the same claims); ` +
          `use ${first.name} if that is you, else a name of your own`,
      );
    }
  }
}

function declaredNames(meta: ChannelMeta): ChannelNames {
  const declared: ChannelNames = new Map();
  const declare = (name: string, how: string) => {
    if (!declared.has(identity(name))) declared.set(identity(name), { name, how });
  };
  for (const member of meta.members) declare(member, "a member of the channel");
  const maintainer = meta[META_MAINTAINER];
  if (typeof maintainer === "string") declare(maintainer, "its maintainer");
  return declared;
}
