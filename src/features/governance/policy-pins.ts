import type { Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { sameAgent } from "../../core/names.js";
import {
  type ChannelPin,
  keepInstance,
  type PinBook,
  type PolicySnapshot,
  pinsAnything,
  policyChangeOf,
  policySnapshot,
  weakenings,
  withPinnedPolicy,
} from "./policy-pin.js";

/**
 * How far the search for signed changes may run ahead of the pin saved before the pin is saved
 * again: saving on every call would write the user's trust file on every post and read (a
 * third of a fresh `post`'s time), and a search this long costs less than that write.
 */
const SEARCH_SAVED_EVERY = 64;

/** What a reader obeys in a channel, and why it differs from the `_meta.json` when it does. */
export interface PolicyStanding {
  /** The meta with the pinned policy in place of a weaker one. */
  meta: ChannelMeta;
  /** How the `_meta.json` is weaker than the pin (empty: it is obeyed). */
  weaker: string[];
  /** The warning that says so, naming the channel, when it is. */
  warning?: string;
}

/** What the pins need of the channel: its last seq and its verified policy changes after a seq. */
export interface PinSource {
  lastSeq(channel: string): Promise<number>;
  /** The `status: policy` messages after `seq` up to `last`, in order, each with `trust` set. */
  policyChangesAfter(channel: string, seq: number, last: number): Promise<Message[]>;
}

/**
 * Policy pins (docs/signatures.md, "Threat model"): a reader pins the first non-trivial policy
 * it sees for a channel, on first contact, with the user's trust. From then on the pin follows
 * what the pinned maintainer signs (a `status: policy` message after the pin), stricter or
 * weaker, whatever `_meta.json` says; a `_meta.json` at least as strict in every respect
 * replaces the pin, a weaker one is reported and the pin applies until the maintainer signs it
 * or the user accepts it ({@link accept}, their own act). The pin's `asOf` is how far the
 * channel was searched for signed changes, so each message is looked at once per reader.
 */
export class PolicyPins {
  /** @param report hears, once each, what could not be kept (a read-only config folder). */
  constructor(
    private readonly trust: PinBook,
    private readonly source: PinSource,
    private readonly report: (warning: string) => void = () => {},
  ) {}

  async standing(channel: string, meta: ChannelMeta): Promise<PolicyStanding> {
    const stated = policySnapshot(meta);
    const held = this.trust.channelPin(channel);
    if (held === undefined && !pinsAnything(stated)) return { meta, weaker: [] };
    // The channel's last seq costs a look at its folder: asked only when the pin needs it.
    let known: number | undefined;
    const last = async () => (known ??= await this.source.lastSeq(channel));
    let pin = held ?? { policy: stated, asOf: await last() };
    if (typeof pin.policy.maintainer === "string" && (await last()) > pin.asOf) {
      pin = await this.followSignedChanges(channel, pin, await last());
    }
    const weaker = weakenings(pin.policy, meta);
    // A stricter meta replaces the pin from now on: a change signed before it does not count.
    if (weaker.length === 0 && !samePolicy(stated, pin.policy)) {
      pin = { policy: stated, asOf: await last() };
    }
    const moved = held === undefined || !samePolicy(pin.policy, held.policy);
    if (moved || pin.asOf - held.asOf >= SEARCH_SAVED_EVERY) this.keep(channel, pin);
    return weaker.length > 0
      ? this.downgrade(channel, meta, pin.policy, weaker)
      : { meta, weaker: [] };
  }

  /**
   * Saves the pin as worked out. What this reader obeys now does not depend on it: a pin that
   * cannot be saved (a config folder a sandbox made read-only) is worked out again next time
   * from the one saved before, which only ever costs a longer search, never a weaker policy.
   */
  private keep(channel: string, pin: ChannelPin): void {
    try {
      this.trust.setChannelPin(channel, pin);
    } catch (err) {
      this.report(
        `${channel}: the channel's policy pin could not be saved: ${(err as Error).message}`,
      );
    }
  }

  /** Pins the policy `meta` states: what the user did or accepted themselves. */
  async accept(channel: string, meta: ChannelMeta): Promise<void> {
    const asOf = await this.source.lastSeq(channel);
    this.trust.setChannelPin(channel, { policy: policySnapshot(meta), asOf });
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
   * The pin moved along every change after it that the pinned maintainer of the moment signed
   * (one may hand the channel to another maintainer), searched up to `last`. Only after the
   * pin: an older change, or a newer one deleted from the root, cannot bring back what the pin
   * already moved past.
   */
  private async followSignedChanges(
    channel: string,
    pin: ChannelPin,
    last: number,
  ): Promise<ChannelPin> {
    let policy = pin.policy;
    for (const m of await this.source.policyChangesAfter(channel, pin.asOf, last)) {
      const maintainer = policy.maintainer;
      if (typeof maintainer !== "string" || m.trust !== "verified") continue;
      if (!sameAgent(m.from, maintainer)) continue;
      const change = policyChangeOf(m);
      if (change !== undefined) policy = keepInstance(change, policy);
    }
    return { policy, asOf: last };
  }
}

function samePolicy(a: PolicySnapshot, b: PolicySnapshot): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
