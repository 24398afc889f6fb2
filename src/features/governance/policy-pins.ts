import type { Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { sameAgent } from "../../core/names.js";
import type { ChannelPin, UserTrust } from "../trust/index.js";
import {
  type PolicySnapshot,
  pinsAnything,
  policyChangeOf,
  policySnapshot,
  weakenings,
  withPinnedPolicy,
} from "./policy-pin.js";

/** What a reader obeys in a channel, and why it differs from the `_meta.json` when it does. */
export interface PolicyStanding {
  /** The meta with the pinned policy in place of a weaker one. */
  meta: ChannelMeta;
  /** How the `_meta.json` is weaker than the pin (empty: it is obeyed). */
  weaker: string[];
  /** The warning that says so, naming the channel, when it is. */
  warning?: string;
}

/** What the pins need of the channel: its last seq and its verified messages after a seq. */
export interface PinSource {
  lastSeq(channel: string): Promise<number>;
  /** The messages after `seq`, each with its `trust` set. */
  checkedAfter(channel: string, seq: number): Promise<Message[]>;
}

/**
 * Policy pins (docs/signatures.md, "Threat model"): the first non-trivial policy a reader sees
 * for a channel is pinned with the user's trust; a `_meta.json` at least as strict in every
 * respect replaces the pin, a weaker one is reported and the pin applies. A weaker policy counts
 * only when the pinned maintainer signed it (a `status: policy` message after the pin) or when
 * the user accepts it ({@link accept}, their own act).
 */
export class PolicyPins {
  /** The standing last worked out per channel, valid while the meta and the last seq stay. */
  private readonly known = new Map<string, { key: string; standing: PolicyStanding }>();

  constructor(
    private readonly trust: UserTrust,
    private readonly source: PinSource,
  ) {}

  async standing(channel: string, meta: ChannelMeta): Promise<PolicyStanding> {
    let pin = this.trust.channelPin(channel);
    const stated = policySnapshot(meta);
    if (pin === undefined) {
      if (pinsAnything(stated)) await this.accept(channel, meta);
      return { meta, weaker: [] };
    }
    let weaker = weakenings(pin.policy, meta);
    if (weaker.length > 0) {
      const key = JSON.stringify([stated, pin, await this.source.lastSeq(channel)]);
      const known = this.known.get(channel);
      if (known?.key === key) return known.standing;
      const changed = await this.signedChange(channel, pin);
      if (changed !== undefined) {
        this.trust.setChannelPin(channel, changed);
        pin = changed;
        weaker = weakenings(pin.policy, meta);
      }
      if (weaker.length > 0) {
        const standing = this.downgrade(channel, meta, pin.policy, weaker);
        this.known.set(channel, { key, standing });
        return standing;
      }
    }
    if (JSON.stringify(stated) !== JSON.stringify(pin.policy)) await this.accept(channel, meta);
    return { meta, weaker: [] };
  }

  /** Pins the policy `meta` states: what the user did or accepted themselves. */
  async accept(channel: string, meta: ChannelMeta): Promise<void> {
    const asOf = await this.source.lastSeq(channel);
    this.trust.setChannelPin(channel, { policy: policySnapshot(meta), asOf });
    this.known.delete(channel);
  }

  private downgrade(
    channel: string,
    meta: ChannelMeta,
    pinned: PolicySnapshot,
    weaker: string[],
  ): PolicyStanding {
    const maintainer = typeof pinned.maintainer === "string" ? pinned.maintainer : undefined;
    const who = maintainer ? `${maintainer} signs a change or you` : "you";
    return {
      meta: withPinnedPolicy(meta, pinned),
      weaker,
      warning:
        `${channel}: _meta.json states a weaker policy than the one pinned here ` +
        `(${weaker.join("; ")}); the pinned policy applies until ${who} accept it ` +
        `(agent-chat policy ${channel} --accept)`,
    };
  }

  /**
   * The last policy change after the pin that the pinned maintainer signed, as the new pin at
   * its seq. Only after the pin: an older change, or a newer one deleted from the root, cannot
   * bring back what the pin already moved past.
   */
  private async signedChange(channel: string, pin: ChannelPin): Promise<ChannelPin | undefined> {
    const maintainer = pin.policy.maintainer;
    if (typeof maintainer !== "string") return undefined;
    const after = await this.source.checkedAfter(channel, pin.asOf);
    for (const m of after.reverse()) {
      if (m.trust !== "verified" || !sameAgent(m.from, maintainer)) continue;
      const policy = policyChangeOf(m);
      if (policy !== undefined) return { policy, asOf: m.seq };
    }
    return undefined;
  }
}
