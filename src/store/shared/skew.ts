import { SKEW_GRACE_MS } from "../types.js";

/**
 * Clock skew between hosts that share a root (docs/leases.md, "Clock skew"). A lease carries
 * its end as a time stamp, written by one host's clock and read by another's. A lease is taken
 * from its holder (a task claimed by another, a path leased over) only once its end is more
 * than this grace behind the reader's clock; the holder itself stops trusting it (`fence`) at
 * its end by its own clock. Clocks that differ by less than the grace therefore never see a
 * lease expire early for its holder, nor granted twice.
 */
export { SKEW_GRACE_MS } from "../types.js";

/** Whether a lease that ends at `expiresAt` may be taken from its holder at `now`. */
export function pastGrace(expiresAt: number, now: number): boolean {
  return now > expiresAt + SKEW_GRACE_MS;
}
