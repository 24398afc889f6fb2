import { AgentChatError } from "../../core/errors.js";
import type { ChannelMeta } from "../../core/meta.js";
import { sameAgent } from "../../core/names.js";
import { MAX_TASK_TTL_MS, type Store, TASK_TTL_KEY } from "../../store/types.js";
import { governanceOf } from "./rules.js";

/**
 * Sets a channel's default lease (task claims and path leases without `--ttl`): `task_ttl`
 * seconds in `_meta.json`, a key of ours that chat.py ignores. As for the governance profile,
 * once the channel has a maintainer only they change it.
 */
export async function setTaskTtl(
  store: Store,
  channel: string,
  ttlMs: number,
  as?: string,
): Promise<ChannelMeta> {
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1000 || ttlMs > MAX_TASK_TTL_MS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `a channel's default lease is from 1 s to 7 days (got ${ttlMs} ms)`,
    );
  }
  if (!store.updateMeta) {
    throw new AgentChatError(
      "UNSUPPORTED",
      `this store (${store.location}) cannot change a channel after init; give --task-ttl to init instead`,
    );
  }
  return store.updateMeta(channel, (meta) => {
    const maintainer = governanceOf(meta)?.maintainer;
    if (maintainer !== undefined && (as === undefined || !sameAgent(as, maintainer))) {
      throw new AgentChatError(
        "NOT_MAINTAINER",
        `only ${channel}'s maintainer (${maintainer}) changes its default lease${as === undefined ? `: give --as ${maintainer}` : ""}`,
      );
    }
    return { ...meta, [TASK_TTL_KEY]: ttlMs / 1000 };
  });
}
