import { AgentChatError } from "../../core/errors.js";
import type { ArchiveOptions, PruneOptions } from "../../store/find-types.js";
import { PARKED_SILENT_MS, parsePresence } from "../delivery/index.js";

/** The options every backend's archive takes, checked once (docs/search.md). */
export function checkArchiveOptions(options: ArchiveOptions): void {
  const { before, olderThanMs } = options;
  if ((before === undefined) === (olderThanMs === undefined)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      "say which messages to archive: --before N or --older-than 30d (one of them)",
    );
  }
  if (before !== undefined && (!Number.isSafeInteger(before) || before < 1)) {
    throw new AgentChatError("INVALID_ARGUMENT", `--before is a message number (got ${before})`);
  }
  if (olderThanMs !== undefined && (!Number.isSafeInteger(olderThanMs) || olderThanMs < 0)) {
    throw new AgentChatError("INVALID_ARGUMENT", `--older-than is a duration (got ${olderThanMs})`);
  }
}

/** The options every backend's prune takes, checked once. */
export function checkPruneOptions(options: PruneOptions): void {
  if (!Number.isSafeInteger(options.olderThanMs) || options.olderThanMs < 0) {
    throw new AgentChatError("INVALID_ARGUMENT", "--older-than is a duration such as 30d");
  }
}

/** A presence record as prune finds it: its agent key, its text, when its entry was written. */
export interface PresenceEntry {
  key: string;
  text: string | undefined;
  writtenMs: number;
}

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
