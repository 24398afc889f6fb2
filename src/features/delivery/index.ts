/**
 * Delivery and presence (docs/delivery.md): per message and addressee, how far it got (notified,
 * read, answered) and why not; per agent, whether it is here, parked in a wait or gone. This
 * folder is the whole feature: the records (presence.ts, receipts.ts) and their writer
 * (delivery.ts), its hook into post, read and wait (extension.ts), the questions asked of them
 * (delivery-queries.ts, loaded by the first question), the actor a daemon records for its
 * clients (acting.ts), the `receipts`, `explain`, `who` commands (cli.ts) and the MCP part
 * (mcp.ts). A backend only stores the notes.
 */
export { actingFor, currentActor } from "./acting.js";
export { Delivery, defaultHost } from "./delivery.js";
export { pollReceipts } from "./delivery-queries.js";
export { deliveryExtension } from "./extension.js";
export type { DeliveryHost } from "./host.js";
export { type Actor, PARKED_SILENT_MS, parsePresence } from "./presence.js";
export { owedBy } from "./receipts.js";
