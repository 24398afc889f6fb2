/** The NATS JetStream backend (docs/design.md §6): loaded only when a root is a nats:// URL. */
export { ingestEnvelopes, publishEnvelope, sendEnvelope } from "./b00t.js";
export { type ChannelDump, NatsStore } from "./nats-store.js";
export type { NatsStoreOptions } from "./options.js";
