import type { StoreExtension } from "../../store/shared/index.js";
import type { Delivery } from "./delivery.js";

/**
 * Delivery's hooks into the message operations: a post, a read and a parked wait are the
 * agent's presence, and a read or a woken wait that moves the cursor is a read receipt.
 */
export function deliveryExtension(delivery: Delivery): StoreExtension {
  return {
    afterPost: (_channel, agent) => delivery.touch(agent),
    async afterRead(channel, agent, movedTo) {
      if (movedTo !== undefined) await delivery.step(channel, agent, "read", movedTo);
      await delivery.touch(agent);
    },
    async duringWait({ agent, channels, activity }) {
      const unpark = await delivery.park(agent, channels);
      // A caller that stopped talking is not waiting any more, though its wait runs on.
      const left = () => void unpark(true);
      activity?.addEventListener("abort", left, { once: true });
      return {
        moved: (channel, seq) => delivery.step(channel, agent, "read", seq),
        // A wait its caller abandoned (a daemon client's connection closed) may belong to a
        // dead process: its record says so, for `who` to look.
        async ended({ abandoned }) {
          activity?.removeEventListener("abort", left);
          await unpark(abandoned);
        },
      };
    },
  };
}
