import { AgentChatError } from "../core/errors.js";
import { META_MAINTAINER } from "../core/governance.js";
import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import { assertDistinctAgents, identity, sameAgent, validateName } from "../core/names.js";
import type {
  Capabilities,
  ChannelInfo,
  InitOptions,
  NewTask,
  PostInput,
  PostResult,
  ReadOptions,
  ReadResult,
  Store,
  TaskInfo,
  WaitOptions,
  WaitResult,
  WatchOptions,
} from "./types.js";

/**
 * How many of a channel's newest messages name its senders for the collision rule. Reading them
 * costs one parse per message in a fresh process (every CLI command is one), so the window is
 * bounded: a sender whose last message is older than this is no longer known by name.
 */
export const KNOWN_SENDERS_WINDOW = 500;

/** A name a channel already knows, and how it came to know it (for the refusal message). */
interface Known {
  name: string;
  how: string;
}

/** Per channel: key → the name known with that key, and the newest seq scanned for senders. */
interface ChannelNames {
  /** Members and maintainer, from the channel's `_meta.json` as last read. */
  declared: Map<string, Known>;
  /** The first sender of each key, oldest message first. */
  senders: Map<string, Known>;
  scanned: number;
}

function lookup(known: ChannelNames | undefined, agent: string): Known | undefined {
  const key = identity(agent);
  return known?.declared.get(key) ?? known?.senders.get(key);
}

/**
 * The one rule that keeps names that share a key apart, above every backend. The reference
 * names cursor files and claim markers by `slug(agent)`, so `bob_x`, `bob-x` and `bob.x` would
 * share a cursor, claims and relevance. A channel therefore admits one name per key: an agent
 * may not post, read, wait, claim, release or add a task in a channel that already knows a
 * different name with its key. Known, in this order: the declared members, the maintainer, the
 * senders of the channel's last {@link KNOWN_SENDERS_WINDOW} messages (oldest first). `init`
 * refuses members that collide with each other or with the maintainer.
 *
 * This is a guard against confusion, not authentication: any local user can still act under
 * any name that is not refused (see docs/governance.md, "Trust model"). Two processes that use
 * two colliding names for the first time at the same moment can both pass it.
 */
export function guardIdentities(store: Store): Store {
  return new IdentityGuard(store);
}

class IdentityGuard implements Store {
  private readonly names = new Map<string, ChannelNames>();
  readonly updateMeta?: Store["updateMeta"];

  constructor(private readonly inner: Store) {
    if (inner.updateMeta) this.updateMeta = inner.updateMeta.bind(inner);
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

  channels(): Promise<ChannelInfo[]> {
    return this.inner.channels();
  }

  roster(channel: string): Promise<ChannelMeta> {
    return this.inner.roster(channel);
  }

  async post(channel: string, input: PostInput): Promise<PostResult> {
    await this.admit(channel, input.from);
    const result = await this.inner.post(channel, input);
    this.learn(channel, input.from, `who posted #${result.seq}`);
    return result;
  }

  async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    await this.admit(channel, options.as);
    return this.inner.read(channel, options);
  }

  peek(channel: string, count?: number): Promise<Message[]> {
    return this.inner.peek(channel, count);
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

  async claim(channel: string, task: string, agent: string): Promise<TaskInfo> {
    await this.admit(channel, agent);
    return this.inner.claim(channel, task, agent);
  }

  async release(channel: string, task: string, agent: string): Promise<TaskInfo> {
    await this.admit(channel, agent);
    return this.inner.release(channel, task, agent);
  }

  close(): Promise<void> {
    this.names.clear();
    return this.inner.close();
  }

  /**
   * Refuses `agent` (NOT_A_MEMBER) when the channel knows a different name with its key. Any
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
    const cached = lookup(this.names.get(channel), agent);
    // A name this process already knows as the one with its key needs no new look.
    if (cached && sameAgent(cached.name, agent)) return;
    let known: ChannelNames;
    try {
      known = await this.refresh(channel, agent);
    } catch {
      return;
    }
    const first = lookup(known, agent);
    if (first && !sameAgent(first.name, agent)) {
      throw new AgentChatError(
        "NOT_A_MEMBER",
        `${agent} may not act in ${channel}: the name collides with ${first.name}, ${first.how} ` +
          `(both would use the cursor file .cursors/${identity(agent)}.txt and the same claims); ` +
          `use ${first.name} if that is you, else a name of your own`,
      );
    }
  }

  /**
   * Reads the declared names from `_meta.json`, then, unless they decide `agent` already, the
   * senders of the messages not yet scanned.
   */
  private async refresh(channel: string, agent: string): Promise<ChannelNames> {
    const meta = await this.inner.roster(channel);
    let known = this.names.get(channel);
    if (!known) {
      known = { declared: new Map(), senders: new Map(), scanned: 0 };
      this.names.set(channel, known);
    }
    const declared = new Map<string, Known>();
    const declare = (name: string, how: string) => {
      if (!declared.has(identity(name))) declared.set(identity(name), { name, how });
    };
    for (const member of meta.members) declare(member, "a member of the channel");
    const maintainer = meta[META_MAINTAINER];
    if (typeof maintainer === "string") declare(maintainer, "its maintainer");
    known.declared = declared;
    if (declared.has(identity(agent))) return known;
    const newest = (await this.inner.peek(channel, 1))[0]?.seq ?? 0;
    if (newest > known.scanned) {
      const count = Math.min(KNOWN_SENDERS_WINDOW, newest - known.scanned);
      for (const message of await this.inner.peek(channel, count)) {
        if (message.seq <= known.scanned) continue;
        this.learn(channel, message.from, `who posted #${message.seq}`);
      }
      known.scanned = newest;
    }
    return known;
  }

  /** Records a sender unless its key is known already (the first name keeps it). */
  private learn(channel: string, name: string, how: string): void {
    const known = this.names.get(channel);
    if (!known || known.senders.has(identity(name))) return;
    known.senders.set(identity(name), { name, how });
  }
}
