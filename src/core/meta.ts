import { AgentChatError } from "./errors.js";
import { sameAgent } from "./names.js";

/**
 * The governance profile's key in `_meta.json` for the channel's maintainer (docs/governance.md):
 * here, below the store, because a store's `init` counts the maintainer among the members.
 */
export const META_MAINTAINER = "maintainer";

/** `_meta.json`: the reference's keys first, in its order; keys of ours may follow. */
export interface ChannelMeta {
  channel: string;
  /** Declared members; empty means open membership. */
  members: string[];
  topic: string;
  created: string;
  [extra: string]: unknown;
}

export function serializeMeta(meta: ChannelMeta): string {
  const { channel, members, topic, created, ...rest } = meta;
  return JSON.stringify({ channel, members, topic, created, ...rest }, null, 2);
}

export function parseMeta(text: string, channel: string): ChannelMeta {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    // Never the parser's own message: newer engines quote the text, which may be anything.
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    const where = at === undefined ? "" : ` (at character ${at})`;
    throw new AgentChatError(
      "CORRUPT_META",
      `channel ${channel}: _meta.json is not valid JSON${where}`,
      { cause: err },
    );
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new AgentChatError("CORRUPT_META", `channel ${channel}: _meta.json is not a JSON object`);
  }
  const obj = data as Record<string, unknown>;
  const members = obj.members ?? [];
  if (!Array.isArray(members) || members.some((m) => typeof m !== "string")) {
    throw new AgentChatError(
      "CORRUPT_META",
      `channel ${channel}: _meta.json "members" must be an array of names`,
    );
  }
  return {
    ...obj,
    channel: typeof obj.channel === "string" ? obj.channel : channel,
    members: members as string[],
    topic: typeof obj.topic === "string" ? obj.topic : "",
    created: typeof obj.created === "string" ? obj.created : "",
  };
}

/**
 * Open channels (no members) admit everyone; otherwise the agent must be listed, case aside
 * (`bob.x` is not the member `bob_x`, though both have one cursor key).
 */
export function isMember(meta: ChannelMeta, agent: string): boolean {
  if (meta.members.length === 0) return true;
  return meta.members.some((m) => sameAgent(m, agent));
}

/**
 * The meta a change leaves: the keys of ours as `changed` has them, the reference's four
 * (`channel`, `members`, `topic`, `created`) as they were in `current` (`updateMeta`'s rule).
 */
export function withOurKeys(current: ChannelMeta, changed: ChannelMeta): ChannelMeta {
  const { channel: _c, members: _m, topic: _t, created: _cr, ...ours } = changed;
  return {
    channel: current.channel,
    members: current.members,
    topic: current.topic,
    created: current.created,
    ...ours,
  };
}

/** Whether two metas say the same, whatever the order of their keys. */
export function sameMeta(a: ChannelMeta, b: ChannelMeta): boolean {
  return sortedJson(a) === sortedJson(b);
}

function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(",")}}`;
}
