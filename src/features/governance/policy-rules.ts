import { AgentChatError } from "../../core/errors.js";
import type { ChannelMeta } from "../../core/meta.js";

/**
 * A channel's policy on authors (docs/signatures.md), keys of ours in `_meta.json` after the
 * reference's (which it ignores):
 *
 * - `signatures`: `off` (marks only), `warn` (unsigned and forged messages are reported) or
 *   `require` (our tools refuse unsigned posts; unsigned and forged messages are not delivered
 *   to agents, and governance counts only verified verdicts);
 * - `membership`: `open` or `strict` (posts by non-members are refused by our tools, and
 *   flagged when written by others). Not `members`: that key is the reference's list of names.
 * - `post_rate_limit`: posts per agent per minute before the loop guard pauses it;
 *   `ping_pong_limit`: messages alternating between the same two agents, with no one else,
 *   before it pauses the next one. 0 or absent = off; `--loop-guard` writes the defaults (30,
 *   20). Absent means off so that a channel made before the guard (or by chat.py, or a script
 *   that posts hundreds of messages) keeps working as it did.
 */
export type SignaturePolicy = "off" | "warn" | "require";
export type MembershipPolicy = "open" | "strict";

export const META_SIGNATURES = "signatures";
export const META_MEMBERSHIP = "membership";
const META_RATE_LIMIT = "post_rate_limit";
const META_PING_PONG = "ping_pong_limit";

export const DEFAULT_RATE_LIMIT = 30;
export const DEFAULT_PING_PONG = 20;

export interface ChannelPolicy {
  signatures: SignaturePolicy;
  membership: MembershipPolicy;
  rateLimit: number;
  pingPong: number;
}

const SIGNATURES: readonly SignaturePolicy[] = ["off", "warn", "require"];
const MEMBERSHIP: readonly MembershipPolicy[] = ["open", "strict"];

/**
 * The policy a `_meta.json` states. A value that is not one of the allowed ones is read as the
 * strictest (a typo must not open a channel that meant to be closed).
 */
export function policyOf(meta: ChannelMeta): ChannelPolicy {
  const sig = meta[META_SIGNATURES];
  const mem = meta[META_MEMBERSHIP];
  return {
    signatures:
      sig === undefined
        ? "off"
        : SIGNATURES.includes(sig as never)
          ? (sig as SignaturePolicy)
          : "require",
    membership:
      mem === undefined
        ? "open"
        : MEMBERSHIP.includes(mem as never)
          ? (mem as MembershipPolicy)
          : "strict",
    rateLimit: count(meta[META_RATE_LIMIT]),
    pingPong: count(meta[META_PING_PONG]),
  };
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

export interface PolicyChange {
  signatures?: string;
  membership?: string;
  rateLimit?: number;
  pingPong?: number;
}

/** The `_meta.json` keys a change sets, validated. */
export function policyMetaKeys(change: PolicyChange): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (change.signatures !== undefined) {
    out[META_SIGNATURES] = oneOf(change.signatures, SIGNATURES, "signatures");
  }
  if (change.membership !== undefined) {
    out[META_MEMBERSHIP] = oneOf(change.membership, MEMBERSHIP, "membership");
  }
  if (change.rateLimit !== undefined) out[META_RATE_LIMIT] = nonNegative(change.rateLimit);
  if (change.pingPong !== undefined) out[META_PING_PONG] = nonNegative(change.pingPong);
  return out;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  if (!allowed.includes(value as T)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `${what} must be one of ${allowed.join(", ")} (got ${JSON.stringify(value)})`,
    );
  }
  return value as T;
}

function nonNegative(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new AgentChatError("INVALID_ARGUMENT", "a limit is a whole number, 0 for off");
  }
  return n;
}
