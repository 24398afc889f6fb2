import { storedCount, storedJson } from "../../store/shared/index.js";
import type { Harness, PresenceInfo } from "../../store/types.js";
import { HARNESSES } from "../../store/types.js";

/**
 * Presence: one record per agent and store (the folder store: `.presence/<agent>.json` at the
 * root; NATS: the KV key `presence.<agent>`), rewritten by each operation as that agent. The
 * record is shared input like every file in a root (docs/design.md §10): a corrupt one, one written by
 * a newer version or by hand is ignored, with one warning.
 */
export const PRESENCE_VERSION = 1;

/** A wait in progress: which process parks, on what, since when. */
export interface Parked {
  channels: string[];
  since: number;
  pid: number;
  host: string;
}

export interface PresenceRecord {
  v: number;
  agent: string;
  harness: Harness;
  host: string;
  pid: number;
  /** Last activity, ms since the epoch. */
  at: number;
  parked?: Parked;
  /**
   * A wait run for another process (a daemon's client) that ended because that process's
   * connection closed: if its pid is dead, the agent is gone; if it lives, it just left.
   */
  dropped?: Parked;
}

/** Who this process acts as, besides the agent's name. */
export interface Actor {
  harness: Harness;
  host: string;
  pid: number;
}

/** Activity closer together than this is one write: a burst of posts costs one record. */
export const PRESENCE_THROTTLE_MS = 5_000;
/** A parked wait rewrites its record this often, so that another host can tell it lives. */
export const PARKED_HEARTBEAT_MS = 30_000;
/** A parked record not refreshed for this long belongs to a process that died (any host). */
export const PARKED_SILENT_MS = 3 * PARKED_HEARTBEAT_MS;
/** Activity within this is "active N s ago"; older is "idle since". */
export const ACTIVE_MS = 5 * 60_000;
/** Silent for this long: gone. */
export const SILENT_GONE_MS = 24 * 3_600_000;

const NAME = /^[^\0-\x1f]{1,200}$/;
const CHANNEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function text(value: unknown): string | undefined {
  return typeof value === "string" && NAME.test(value) ? value : undefined;
}

export function formatPresence(record: PresenceRecord): string {
  const { v, agent, harness, host, pid, at, parked, dropped } = record;
  return `${JSON.stringify({ v, agent, harness, host, pid, at, parked, dropped })}\n`;
}

/** A stored record, or why it is ignored. */
export function parsePresence(raw: string): { record?: PresenceRecord; problem?: string } {
  const parsed = storedJson(raw);
  if (!parsed) return { problem: "is not JSON; ignored" };
  const { value } = parsed;
  if (typeof value !== "object" || value === null) return { problem: "is not a record; ignored" };
  const v = value as Record<string, unknown>;
  if (typeof v.v === "number" && v.v > PRESENCE_VERSION) {
    return { problem: `was written by a newer version (v${v.v}); ignored` };
  }
  const agent = text(v.agent);
  const host = text(v.host);
  const pid = storedCount(v.pid);
  const at = storedCount(v.at);
  const harness = HARNESSES.find((h) => h === v.harness);
  if (v.v !== PRESENCE_VERSION || !agent || !host || pid === undefined || at === undefined) {
    return { problem: "is not a presence record of ours (written by hand?); ignored" };
  }
  if (!harness) return { problem: `names no known harness (${String(v.harness)}); ignored` };
  const record: PresenceRecord = { v: PRESENCE_VERSION, agent, harness, host, pid, at };
  if (v.parked !== undefined) {
    const parked = parseParked(v.parked);
    if (!parked) return { problem: "has an invalid parked wait; ignored" };
    record.parked = parked;
  }
  if (v.dropped !== undefined) {
    const dropped = parseParked(v.dropped);
    if (!dropped) return { problem: "has an invalid dropped wait; ignored" };
    record.dropped = dropped;
  }
  return { record };
}

function parseParked(value: unknown): Parked | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const p = value as Record<string, unknown>;
  const since = storedCount(p.since);
  const pid = storedCount(p.pid);
  const host = text(p.host);
  const channels = Array.isArray(p.channels) ? p.channels : [];
  if (since === undefined || pid === undefined || !host || channels.length > 100) return undefined;
  if (!channels.every((c) => typeof c === "string" && CHANNEL.test(c))) return undefined;
  return { channels: channels as string[], since, pid, host };
}

/** Whether process `pid` of this host is alive (EPERM: alive, someone else's). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** What a record says at `now`, seen from `host`. */
export function presenceInfo(
  record: PresenceRecord,
  now: number,
  host: string,
  alive: (pid: number) => boolean = pidAlive,
): PresenceInfo {
  const info: PresenceInfo = {
    agent: record.agent,
    state: "idle",
    harness: record.harness,
    host: record.host,
    pid: record.pid,
    lastActive: new Date(record.at).toISOString(),
  };
  const parked = record.parked;
  if (parked) {
    info.parkedOn = parked.channels;
    info.pid = parked.pid;
    if (parked.host === host && !alive(parked.pid)) {
      return { ...info, state: "gone", why: `its waiting process ${parked.pid} died` };
    }
    if (now - record.at > PARKED_SILENT_MS) {
      const s = Math.round((now - record.at) / 1000);
      return { ...info, state: "gone", why: `its wait on ${parked.host} is silent for ${s} s` };
    }
    return { ...info, state: "waiting" };
  }
  const dropped = record.dropped;
  if (dropped && dropped.host === host && !alive(dropped.pid)) {
    return {
      ...info,
      pid: dropped.pid,
      state: "gone",
      why: `its waiting process ${dropped.pid} died`,
    };
  }
  if (now - record.at > SILENT_GONE_MS) {
    return { ...info, state: "gone", why: "silent for more than a day" };
  }
  return { ...info, state: now - record.at <= ACTIVE_MS ? "active" : "idle" };
}
