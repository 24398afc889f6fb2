import type { ChannelMeta } from "../../core/meta.js";
import { sameAgent } from "../../core/names.js";
import { CHANNEL_ID_KEY, channelIdOf } from "../../core/signature.js";
import { META_MEMBERSHIP, META_SIGNATURES, policyOf } from "./policy-rules.js";
import { governanceOf, META_BANDS, META_MAINTAINER, META_VETO_WINDOW } from "./rules.js";

/**
 * The part of a channel's `_meta.json` that decides for people (docs/signatures.md, "Threat
 * model"): the signature and membership policy, the members of a strict channel, the maintainer,
 * the bands and the veto window. A reader pins the strictest it has seen; a `_meta.json` that is
 * weaker in any respect is reported and the pin applies. Pure: the pin's storage is the client's.
 */
export type PolicySnapshot = Record<string, unknown>;

/** A channel's pinned policy, as the user's trust keeps it (features/trust, never the root). */
export interface ChannelPin {
  policy: PolicySnapshot;
  /** The channel's last seq when the pin was set: only a signed change after it moves it. */
  asOf: number;
}

/** Where a reader keeps its pins: the user's trust file, or memory. */
export interface PinBook {
  channelPin(channel: string): ChannelPin | undefined;
  setChannelPin(channel: string, pin: ChannelPin): void;
}

const MEMBERS = "members";
const PINNED_KEYS = [
  META_SIGNATURES,
  META_MEMBERSHIP,
  MEMBERS,
  META_MAINTAINER,
  META_BANDS,
  META_VETO_WINDOW,
] as const;

/**
 * The pinned keys of a meta; the member list only where membership is strict, and the channel's
 * instance id (which signatures are bound to) when it is a well-formed one.
 */
export function policySnapshot(meta: ChannelMeta): PolicySnapshot {
  const out: PolicySnapshot = {};
  for (const key of PINNED_KEYS) {
    if (meta[key] !== undefined) out[key] = meta[key];
  }
  if (policyOf(meta).membership !== "strict") delete out[MEMBERS];
  const instance = channelIdOf(meta);
  if (instance !== undefined) out[CHANNEL_ID_KEY] = instance;
  return out;
}

/**
 * `policy` with the channel instance of `pin`: an instance id is the channel's identity, not
 * part of a policy a maintainer changes, so a signed change never moves it.
 */
export function keepInstance(policy: PolicySnapshot, pin: PolicySnapshot): PolicySnapshot {
  const { [CHANNEL_ID_KEY]: _theirs, ...rest } = policy;
  const instance = channelIdOf(pin);
  return instance === undefined ? rest : { ...rest, [CHANNEL_ID_KEY]: instance };
}

/** Whether a snapshot holds anything stricter than a channel made with no policy at all. */
export function pinsAnything(snapshot: PolicySnapshot): boolean {
  return weakenings(snapshot, asMeta({}, "")).length > 0;
}

/** `meta` with the pinned policy in place of the one it states (other keys untouched). */
export function withPinnedPolicy(meta: ChannelMeta, pinned: PolicySnapshot): ChannelMeta {
  const out: ChannelMeta = { ...meta };
  for (const key of [...PINNED_KEYS, CHANNEL_ID_KEY]) if (key !== MEMBERS) delete out[key];
  const { [MEMBERS]: members, ...rest } = pinned;
  Object.assign(out, rest);
  if (Array.isArray(members)) out.members = members as string[];
  return out;
}

/**
 * Each respect in which `current` is weaker than `pinned`, in words (empty: at least as
 * strict everywhere, so it may replace the pin).
 */
export function weakenings(pinned: PolicySnapshot, current: ChannelMeta): string[] {
  const before = asMeta(pinned, current.channel);
  const out = [...instanceChange(before, current), ...authorWeakenings(before, current)];
  const was = profileOf(before);
  if (was === undefined) return out;
  const now = profileOf(current);
  if (now === undefined) return [...out, `no governance profile (pinned: ${describe(was)})`];
  if (was.maintainer !== undefined && !sameAgent(was.maintainer, now.maintainer ?? "")) {
    out.push(`maintainer ${now.maintainer ?? "none"} (pinned: ${was.maintainer})`);
  }
  if (now.vetoWindowSeconds < was.vetoWindowSeconds) {
    out.push(`veto window ${now.vetoWindowSeconds} s (pinned: ${was.vetoWindowSeconds} s)`);
  }
  const actions = new Set([...Object.keys(was.bands), ...Object.keys(now.bands), "*"]);
  for (const action of actions) {
    const [a, b] = [bandFor(was.bands, action), bandFor(now.bands, action)];
    if (BAND_RANK.indexOf(b) < BAND_RANK.indexOf(a)) out.push(`${action} ${b} (pinned: ${a})`);
  }
  return out;
}

const SIGNATURE_RANK = ["off", "warn", "require"];
/** An action with no band and no `*` is refused (UNKNOWN_ACTION): stricter than any band. */
const BAND_RANK = ["auto", "notify", "approval", "refused"];

function authorWeakenings(before: ChannelMeta, current: ChannelMeta): string[] {
  const [was, now] = [policyOf(before), policyOf(current)];
  const out: string[] = [];
  if (SIGNATURE_RANK.indexOf(now.signatures) < SIGNATURE_RANK.indexOf(was.signatures)) {
    out.push(`signatures ${now.signatures} (pinned: ${was.signatures})`);
  }
  if (was.membership !== "strict") return out;
  if (now.membership !== "strict") return [...out, `membership ${now.membership} (pinned: strict)`];
  const added = current.members.filter((m) => !before.members.some((p) => sameAgent(p, m)));
  if (added.length > 0) out.push(`members ${added.join(", ")} added (pinned: strict)`);
  return out;
}

/**
 * Another instance id (or one added or taken away) is no policy of anyone's to weaken or
 * tighten: the pinned one stays, so that copies signed for another instance stay forged.
 */
function instanceChange(before: ChannelMeta, current: ChannelMeta): string[] {
  const [was, now] = [channelIdOf(before), channelIdOf(current)];
  return was === now ? [] : [`channel id ${now ?? "none"} (pinned: ${was ?? "none"})`];
}

function bandFor(bands: Record<string, string>, action: string): string {
  return bands[action] ?? bands["*"] ?? "refused";
}

/** The profile a meta states; a corrupt one counts as none (it decides nothing). */
function profileOf(meta: ChannelMeta) {
  try {
    return governanceOf(meta);
  } catch {
    return undefined;
  }
}

function describe(profile: NonNullable<ReturnType<typeof governanceOf>>): string {
  return profile.maintainer ? `maintainer ${profile.maintainer}` : "bands";
}

function asMeta(snapshot: PolicySnapshot, channel: string): ChannelMeta {
  const members = Array.isArray(snapshot[MEMBERS]) ? (snapshot[MEMBERS] as string[]) : [];
  return { ...snapshot, channel, members, topic: "", created: "" };
}

/**
 * A policy change as a message: `status: policy` with the whole new snapshot as JSON in the
 * `policy` key. It moves a reader's pin only when verified and from the pinned maintainer.
 */
export const POLICY_STATUS = "policy";
const POLICY_KEY = "policy";

export function policyChangeExtra(snapshot: PolicySnapshot): Record<string, string> {
  return { [POLICY_KEY]: JSON.stringify(snapshot) };
}

/** The snapshot a policy message carries, or undefined when it is none. */
export function policyChangeOf(message: {
  status: string;
  extra: Record<string, string>;
}): PolicySnapshot | undefined {
  const text = message.extra[POLICY_KEY];
  if (message.status !== POLICY_STATUS || text === undefined) return undefined;
  try {
    const data = JSON.parse(text) as unknown;
    if (typeof data !== "object" || data === null || Array.isArray(data)) return undefined;
    return policySnapshot(asMeta(data as PolicySnapshot, ""));
  } catch {
    return undefined;
  }
}
