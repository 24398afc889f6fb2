import { AsyncLocalStorage } from "node:async_hooks";
import type { Actor } from "./presence.js";

/**
 * Who an operation is done for when the process running it is not the agent's own: a daemon
 * runs its clients' requests, and their presence must name the client's harness, host and pid
 * (the daemon's pid would tell nothing of the client's liveness). Carried through the async
 * calls of one request, so the store's signature stays the same for every caller.
 */
const acting = new AsyncLocalStorage<Actor>();

/** Runs `fn` with `actor` as the process every presence record of it names. */
export function actingFor<T>(actor: Actor, fn: () => T): T {
  return acting.run(actor, fn);
}

/** The actor set by {@link actingFor} around this call, if any. */
export function currentActor(): Actor | undefined {
  return acting.getStore();
}
