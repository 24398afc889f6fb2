import type { PresenceEntry } from "../../store/records/index.js";
import { PARKED_SILENT_MS, parsePresence } from "../delivery/index.js";

/**
 * The agents (by key) whose cursors and presence prune keeps however old their cursors are:
 * seen within `olderThanMs` (the later of the record's own time and its entry's), or parked on
 * a wait whose heartbeat is not yet silent. A cursor moves only when something is read, so an
 * agent parked for weeks on a quiet channel has an old cursor and a fresh record; removing its
 * cursor would hand it every message again. A record anyone wrote can only keep state longer.
 */
export function agentsToKeep(
  entries: readonly PresenceEntry[],
  now: number,
  olderThanMs: number,
): Set<string> {
  const keep = new Set<string>();
  for (const entry of entries) {
    const record = entry.text === undefined ? undefined : parsePresence(entry.text).record;
    const seen = Math.max(entry.writtenMs, record?.at ?? 0);
    const parked = record?.parked !== undefined && now - seen <= PARKED_SILENT_MS;
    if (parked || now - seen <= olderThanMs) keep.add(entry.key);
  }
  return keep;
}
