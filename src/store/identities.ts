import { AgentChatError } from "../core/errors.js";
import type { ChannelMeta } from "../core/meta.js";
import { assertDistinctAgents, identity, sameAgent, validateName } from "../core/names.js";
import { META_MAINTAINER } from "../features/governance/index.js";
import { ForwardingStore } from "./forwarding.js";
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

  override async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const members = [...(options.members ?? [])];
    const maintainer = options.extra?.[META_MAINTAINER];
    if (typeof maintainer === "string") members.push(maintainer);
    assertDistinctAgents(members, "members");
    return this.inner.init(channel, options);
  }

  override async post(...a: Parameters<Store["post"]>) {
    await this.admit(a[0], a[1].from);
    return this.inner.post(...a);
  }

  override async read(...a: Parameters<Store["read"]>) {
    await this.admit(a[0], a[1].as);
    return this.inner.read(...a);
  }

  override async wait(...a: Parameters<Store["wait"]>) {
    for (const channel of new Set(a[0])) await this.admit(channel, a[1].as);
    return this.inner.wait(...a);
  }

  override async addTask(...a: Parameters<Store["addTask"]>) {
    await this.admit(a[0], a[1].from);
    return this.inner.addTask(...a);
  }

  // Each of these acts as its third argument, the agent.
  override async claim(...a: Parameters<Store["claim"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.claim(...a);
  }

  override async renew(...a: Parameters<Store["renew"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.renew(...a);
  }

  override async done(...a: Parameters<Store["done"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.done(...a);
  }

  override async release(...a: Parameters<Store["release"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.release(...a);
  }

  override async createStructuredTask(...a: Parameters<Store["createStructuredTask"]>) {
    await this.admit(a[0], a[1].from);
    return this.inner.createStructuredTask(...a);
  }

  override async changeStructuredTask(...a: Parameters<Store["changeStructuredTask"]>) {
    await this.admit(a[0], a[2].agent);
    return this.inner.changeStructuredTask(...a);
  }

  override async addPathLease(...a: Parameters<Store["addPathLease"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.addPathLease(...a);
  }

  override async renewPathLease(...a: Parameters<Store["renewPathLease"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.renewPathLease(...a);
  }

  override async releasePathLease(...a: Parameters<Store["releasePathLease"]>) {
    await this.admit(a[0], a[2]);
    return this.inner.releasePathLease(...a);
  }

  override async notify(...a: Parameters<Store["notify"]>) {
    await this.admit(a[0], a[1]);
    return this.inner.notify(...a);
  }

  override close(): Promise<void> {
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
