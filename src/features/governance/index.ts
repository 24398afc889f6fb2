/**
 * Governance (docs/governance.md): a channel's maintainer, its bands of who may do what, requests
 * and vetoes, the channel's signature and membership policy, pinned so that a root cannot weaken
 * it behind a reader's back, and the loop guard that pauses two agents answering each other
 * forever. This folder is the whole feature: the profile's rules (rules.ts) and the client that
 * reads and changes it over any Store (governance.ts), the policy (policy-rules.ts, policy.ts) and
 * its pins (policy-pin.ts, policy-pins.ts), the loop guard (loop-guard.ts), a channel's task TTL
 * (task-ttl.ts), and the `govern`, `request`, `approve`, `pending` (cli.ts), `policy` and `unpause`
 * (cli-policy.ts) commands.
 */
export {
  type DecideInput,
  type DecideResult,
  decide,
  type GovernanceEvent,
  govern,
  pendingRequests,
  profileOf,
  type RequestInput,
  type RequestOutcome,
  requestAction,
  requestDigest,
} from "./governance.js";
export { type GuardTrust, guardPost, type Pause } from "./loop-guard.js";
export { admitPost, deliverable, signaturesRequired } from "./policy.js";
export {
  type ChannelPin,
  type PinBook,
  POLICY_STATUS,
  type PolicySnapshot,
  weakenings,
  withPinnedPolicy,
} from "./policy-pin.js";
export { PolicyPins, type PolicyStanding } from "./policy-pins.js";
export { policyMetaKeys, policyOf } from "./policy-rules.js";
export {
  type Band,
  type GovernanceChange,
  type GovernanceProfile,
  type GovernanceRequest,
  governanceOf,
  lookupBand,
  META_MAINTAINER,
  openRequests,
  parseBandAssignment,
  type Verdict,
} from "./rules.js";
