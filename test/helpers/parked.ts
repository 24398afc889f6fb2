import { expect } from "vitest";
import type { Store } from "../../src/store/types.js";

/**
 * Resolves once `agent`'s wait on `channel` is parked, as its presence record says (`who` over
 * every channel: a waiter need not be a member). What a test waits for, instead of a fixed
 * sleep, before it posts what must wake that wait. The wait may not have made its first scan
 * yet, which then finds the post: the test is weaker on that run, never flaky.
 */
export async function waitParked(store: Store, channel: string, agent: string): Promise<void> {
  await expect
    .poll(() => parkedOn(store, agent), { timeout: 10_000, interval: 10 })
    .toContain(channel);
}

/** Resolves once `agent` has no wait parked on `channel` any more: its wait has ended. */
export async function waitNotParked(store: Store, channel: string, agent: string): Promise<void> {
  await expect
    .poll(() => parkedOn(store, agent), { timeout: 10_000, interval: 10 })
    .not.toContain(channel);
}

async function parkedOn(store: Store, agent: string): Promise<string[]> {
  const record = (await store.who()).find((p) => p.agent === agent && p.state === "waiting");
  return record?.parkedOn ?? [];
}
