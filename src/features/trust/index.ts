/**
 * Signatures and trust (docs/signatures.md): an agent signs what it posts with its own ed25519
 * key, and a reader tells a signed message from an unsigned or forged one by the keys it trusts,
 * never by what the root says. This folder is the whole feature: the key files (keys.ts), the
 * signature itself (ed25519.ts, loaded by the first signature), signing and verifying posts
 * (signing.ts), the trust a user keeps outside every root (user-trust.ts), the store that signs
 * and enforces a channel's policy (signed-store.ts), the identity lifecycle (identity.ts) and the
 * `id` commands (cli.ts). The line format of a signature is part of the message format
 * (src/core/signature.ts).
 */
export { createIdentity } from "./identity.js";
export { hasPrivateKey } from "./keys.js";
export { hasPinnedPolicy, type PinnedPolicyStore, signedStore } from "./signed-store.js";
export type { SignatureOptions } from "./signing.js";
export type { UserTrust } from "./user-trust.js";
