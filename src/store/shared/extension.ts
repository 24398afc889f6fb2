import type { ChannelMeta } from "../../core/meta.js";
import { channelTtl, LEASE_LOOK_MS } from "./tasks.js";

/**
 * The one way a feature hooks into the message operations (docs/architecture.md, "Features and
 * the extension point"). The message core (BackendStore) runs the extensions registered on it,
 * in the order they were registered, after each post and read and around each wait, and knows
 * nothing of what they keep: task leases, path leases and presence all ride on it.
 *
 * A hook is a courtesy of the operation it rides on, which has succeeded: it never throws, and it
 * is awaited (after a wait answered, its `moved` and `ended` run on, and the store's close waits
 * for them).
 */
export interface StoreExtension {
  /** `agent` posted to `channel`: the message is stored. */
  afterPost?(channel: string, agent: string): Promise<void>;
  /** `agent` read `channel`; `movedTo` is where the read moved its cursor, if it moved it. */
  afterRead?(channel: string, agent: string, movedTo: number | undefined): Promise<void>;
  /** A wait of `agent` is parking: what it is to be told while parked and once it ends. */
  duringWait?(wait: ParkingWait): Promise<WaitHooks>;
}

/** A wait as its extensions see it, from the moment it parks. */
export interface ParkingWait {
  agent: string;
  channels: string[];
  /** Each channel's meta, in the order of `channels`. */
  metas: ChannelMeta[];
  /**
   * Aborted once the caller stopped talking (a daemon client that shut its side, or died): it is
   * no longer active, even while its wait runs on to answer a half-closed socket.
   */
  activity?: AbortSignal;
}

/** What one extension is told of one wait. */
export interface WaitHooks {
  /** The wait moved the agent's cursor in `channel` to `seq`, on its way to answering. */
  moved?(channel: string, seq: number): Promise<void>;
  /** The wait is over. */
  ended?(end: WaitEnd): Promise<void>;
}

export interface WaitEnd {
  /** It returned messages to a caller still there. */
  answered: boolean;
  /** Its caller went away (the wait's signal aborted). */
  abandoned: boolean;
}

/**
 * A parked wait is activity too, for leases renewed by activity: `renew` runs for each channel
 * every third of the shortest channel TTL (but at least every 30 s, and never more than once a
 * second) while the caller is there, and once more when the wait answered.
 */
export function renewWhileParked(
  wait: ParkingWait,
  renew: (channel: string) => Promise<void>,
): WaitHooks {
  const every = Math.min(...wait.metas.map((meta) => channelTtl(meta) / 3), LEASE_LOOK_MS);
  const timer = setInterval(
    () => {
      for (const channel of wait.channels) void renew(channel);
    },
    Math.max(every, 1_000),
  );
  timer.unref();
  const stop = () => clearInterval(timer);
  wait.activity?.addEventListener("abort", stop, { once: true });
  return {
    async ended({ answered }) {
      stop();
      wait.activity?.removeEventListener("abort", stop);
      if (answered) for (const channel of wait.channels) await renew(channel);
    },
  };
}
