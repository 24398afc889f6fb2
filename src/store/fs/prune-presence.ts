import { lstatSync } from "node:fs";
import { join } from "node:path";
import {
  entryKind,
  listRealDir,
  readOwnTextSync,
  removeFileEntry,
} from "../../fsutil/root-files.js";
import type { PrunedPresence, PruneOptions } from "../find-types.js";
import type { PresenceEntry } from "../records/index.js";

const SUFFIX = ".json";
/** A presence record is a few hundred bytes; a bigger file is not one of ours. */
const MAX_RECORD_BYTES = 64 * 1024;

interface PresenceFile extends PresenceEntry {
  path: string;
  name: string;
  mtimeMs: number;
}

/**
 * The presence records (`<root>/.presence/<agent>.json`, docs/delivery.md), each with its
 * text and mtime: each activity rewrites its agent's record (a parked wait every 30 s). A link
 * or anything but a regular file is left out, as among the cursors.
 */
export function presenceFiles(root: string): PresenceFile[] {
  const dir = join(root, ".presence");
  if (entryKind(dir) !== "dir") return [];
  const out: PresenceFile[] = [];
  for (const entry of listRealDir(dir)) {
    if (entry.kind !== "file" || !entry.name.endsWith(SUFFIX) || entry.name.startsWith(".")) {
      continue;
    }
    const path = join(dir, entry.name);
    const mtimeMs = lstatSync(path).mtimeMs;
    let text: string | undefined;
    try {
      text = readOwnTextSync(path, MAX_RECORD_BYTES);
    } catch {
      text = undefined; // judged by its mtime alone
    }
    const key = entry.name.slice(0, -SUFFIX.length);
    out.push({ path, name: entry.name, key, text, mtimeMs, writtenMs: mtimeMs });
  }
  return out;
}

/**
 * Removes the records of agents not seen for `olderThanMs` and not in `keep` (seen lately by
 * their record's own time, or parked: features/search/retention.ts), unless `dryRun`. `who` then
 * shows such an agent never seen.
 */
export function prunePresence(
  files: readonly PresenceFile[],
  options: PruneOptions,
  now: number,
  keep: ReadonlySet<string>,
): PrunedPresence[] {
  const out: PrunedPresence[] = [];
  for (const file of files) {
    if (keep.has(file.key) || now - file.mtimeMs <= options.olderThanMs) continue;
    if (!options.dryRun && !removeFileEntry(file.path)) continue;
    out.push({
      agent: file.key,
      file: `.presence/${file.name}`,
      lastSeen: new Date(file.mtimeMs).toISOString(),
    });
  }
  return out;
}
