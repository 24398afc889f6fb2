import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import { type ChannelMeta, isMember } from "../../core/meta.js";
import { sameAgent } from "../../core/names.js";
import type { Store } from "../../store/types.js";
import { POLICY_STATUS, policyChangeExtra, policySnapshot } from "./policy-pin.js";
import { type ChannelPolicy, type PolicyChange, policyMetaKeys, policyOf } from "./policy-rules.js";
import { META_MAINTAINER } from "./rules.js";

/**
 * Applies a channel's policy on authors (src/core/policy.ts) to what our tools post and what
 * they deliver to agents. Peek, tail and the viewer show everything, marked: people judge.
 */

/** Refuses a post the channel's policy does not admit (NOT_A_MEMBER, POLICY). */
export function admitPost(channel: string, meta: ChannelMeta, from: string, signed: boolean): void {
  const policy = policyOf(meta);
  if (policy.membership === "strict" && !isMember(meta, from)) {
    throw new AgentChatError(
      "NOT_A_MEMBER",
      `${from} is not a member of ${channel}, whose membership is strict ` +
        `(members: ${meta.members.join(", ") || "none"})`,
    );
  }
  if (policy.signatures === "require" && !signed) {
    throw new AgentChatError(
      "POLICY",
      `${channel} requires signed messages and ${from} has no key here; ` +
        `make one with: agent-chat id new --as ${from}`,
    );
  }
}

/**
 * The messages an agent gets under the channel's policy, each problem reported through `warn`
 * (which says each one once): under `require` unsigned and forged ones are held back, under
 * `warn` they are delivered and reported; under `strict` a non-member's message is flagged.
 */
export function deliverable(
  channel: string,
  meta: ChannelMeta,
  messages: Message[],
  warn: (warning: string) => void,
): Message[] {
  const policy = policyOf(meta);
  const out: Message[] = [];
  for (const m of messages) {
    const flagged = flagOutsider(policy, meta, m);
    if (flagged.nonMember) warn(`${channel} #${m.seq}: ${m.from} is not a member (strict)`);
    if (policy.signatures !== "off" && flagged.trust !== "verified") {
      const what = flagged.trust === "forged" ? `forged (${flagged.trustNote})` : "unsigned";
      const held = policy.signatures === "require";
      warn(`${channel} #${m.seq} from ${m.from} is ${what}${held ? ": not delivered" : ""}`);
      if (held) continue;
    }
    out.push(flagged);
  }
  return out;
}

function flagOutsider(policy: ChannelPolicy, meta: ChannelMeta, m: Message): Message {
  return policy.membership === "strict" && !isMember(meta, m.from) ? { ...m, nonMember: true } : m;
}

/** Whether only verified messages count in the channel (governance verdicts among them). */
export function signaturesRequired(meta: ChannelMeta): boolean {
  return policyOf(meta).signatures === "require";
}

export interface PolicyUpdate {
  change: PolicyChange;
  /** Who changes it: must be the maintainer when the channel has one. */
  as: string | undefined;
  /** Whether `as` holds its key here: required of the maintainer under `require`. */
  holdsKey: (name: string) => boolean;
}

/**
 * Changes a channel's policy atomically. A channel with a maintainer takes changes from the
 * maintainer only, and under `require` only from one who holds the maintainer's key: a name
 * typed on the command line proves nothing where signatures are required.
 */
export async function setPolicy(
  store: Store,
  channel: string,
  update: PolicyUpdate,
): Promise<ChannelPolicy> {
  if (!store.updateMeta) {
    throw new AgentChatError("UNSUPPORTED", `this store cannot change ${channel}'s policy`);
  }
  const keys = policyMetaKeys(update.change);
  const meta = await store.updateMeta(channel, (current) => {
    const maintainer = current[META_MAINTAINER];
    if (typeof maintainer === "string") {
      if (update.as === undefined || !sameAgent(update.as, maintainer)) {
        throw new AgentChatError(
          "NOT_MAINTAINER",
          `only ${channel}'s maintainer (${maintainer}) changes its policy; give --as ${maintainer}`,
        );
      }
      if (signaturesRequired(current) && !update.holdsKey(maintainer)) {
        throw new AgentChatError(
          "NOT_MAINTAINER",
          `${channel} requires signatures: its policy changes only where ${maintainer}'s key is`,
        );
      }
    }
    return { ...current, ...keys };
  });
  return policyOf(meta);
}

/**
 * Says a change of the channel's policy in a message from `as`, when `as` was its maintainer:
 * signed (the caller passes a store that signs for `as`), it is what moves the pins of readers
 * who pinned the stricter policy before (src/client/policy-pins.ts). Posted after `_meta.json`
 * was written, so that a reader who pinned the old policy did so before the message's seq.
 * Returns the message's seq, or undefined when `as` is not the maintainer (nothing to sign for).
 */
export async function announcePolicy(
  store: Store,
  channel: string,
  as: string,
  before: ChannelMeta,
  after: ChannelMeta,
): Promise<number | undefined> {
  const maintainer = before[META_MAINTAINER];
  if (typeof maintainer !== "string" || !sameAgent(maintainer, as)) return undefined;
  const snapshot = policySnapshot(after);
  const lines = Object.entries(snapshot).map(
    ([key, value]) => `- ${key}: ${JSON.stringify(value)}`,
  );
  const posted = await store.post(channel, {
    from: as,
    status: POLICY_STATUS,
    title: `${channel}'s policy changed`,
    body: `${as}, the maintainer, changed ${channel}'s policy to:\n\n${lines.join("\n")}`,
    extra: policyChangeExtra(snapshot),
  });
  return posted.seq;
}
