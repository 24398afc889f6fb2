import { AgentChatError } from "../core/errors.js";
import { type ChannelMeta, META_MAINTAINER } from "../core/meta.js";
import { assertDistinctAgents, identity, sameAgent, validateName } from "../core/names.js";
import { ForwardingStore } from "./forwarding.js";
import { actingOf, callOperation, defineOperations, OPERATIONS } from "./operations.js";
import type { InitOptions, Store } from "./types.js";

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

class IdentityGuard extends ForwardingStore {
  private readonly names = new Map<string, ChannelNames>();
  declare readonly chatpy07?: Store["chatpy07"];

  constructor(inner: Store) {
    super(inner);
    const chatpy = inner.chatpy07;
    if (!chatpy) return;
    this.chatpy07 = {
      // Saving the summary posts `state.compacted` as its actor: that name is admitted first.
      channelState: async (channel, options = {}) => {
        if (options.write && options.audit !== false && options.actor) {
          await this.admit(channel, options.actor);
        }
        return chatpy.channelState(channel, options);
      },
      recoverPending: async (channel, options) => {
        await this.admit(channel, options.agent);
        return chatpy.recoverPending(channel, options);
      },
      refuseWhilePathLocksPending: (channel) => chatpy.refuseWhilePathLocksPending(channel),
    };
  }

  override async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const members = [...(options.members ?? [])];
    const maintainer = options.extra?.[META_MAINTAINER];
    if (typeof maintainer === "string") members.push(maintainer);
    assertDistinctAgents(members, "members");
    return this.inner.init(channel, options);
  }

  override close(): Promise<void> {
    this.names.clear();
    return this.inner.close();
  }

  // Every operation that acts as an agent (its row's `actsAs`) admits that name first.
  static {
    const acting = OPERATIONS.filter((row) => row.actsAs);
    defineOperations(IdentityGuard.prototype, acting, async function (row, args) {
      const [channels, agent] = actingOf(row, args)!;
      for (const channel of typeof channels === "string" ? [channels] : new Set(channels)) {
        await this.admit(channel, agent);
      }
      return callOperation(this.inner, row.method, args);
    });
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
