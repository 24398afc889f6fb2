import { renewWhileParked, type StoreExtension } from "../../store/shared/index.js";
import type { PathLeaseBook } from "./path-leases.js";

/**
 * Path leases' hook into the message operations: renewal by activity. An agent that posts,
 * reads or waits in a channel keeps the path leases it holds there alive (docs/leases.md).
 */
export function pathLeaseExtension(book: PathLeaseBook): StoreExtension {
  return {
    afterPost: (channel, agent) => book.keepAlive(channel, agent),
    afterRead: (channel, agent) => book.keepAlive(channel, agent),
    duringWait: async (wait) =>
      renewWhileParked(wait, (channel) => book.keepAlive(channel, wait.agent)),
  };
}
