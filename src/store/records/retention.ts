import { AgentChatError } from "../../core/errors.js";
import type { ArchiveOptions, PruneOptions } from "../find-types.js";

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
