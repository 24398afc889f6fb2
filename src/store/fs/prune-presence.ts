import { lstatSync } from "node:fs";
import { join } from "node:path";
import { entryKind, listRealDir, removeFileEntry } from "../../fsutil/root-files.js";
import type { PrunedPresence, PruneOptions } from "../find-types.js";

const SUFFIX = ".json";

/**
 * The presence records (`<root>/.presence/<agent>.json`, docs/delivery.md) of agents not seen
 * for `olderThanMs`: each activity rewrites its agent's record (a parked wait every 30 s), so
 * its time is when the agent was last seen. Removed unless `dryRun`; a link or anything but a
 * regular file is left alone, as among the cursors. `who` then shows such an agent never seen.
 */
export function prunePresence(root: string, options: PruneOptions, now: number): PrunedPresence[] {
  const dir = join(root, ".presence");
  if (entryKind(dir) !== "dir") return [];
  const out: PrunedPresence[] = [];
  for (const entry of listRealDir(dir)) {
    if (entry.kind !== "file" || !entry.name.endsWith(SUFFIX) || entry.name.startsWith(".")) {
      continue;
    }
    const path = join(dir, entry.name);
    const mtimeMs = lstatSync(path).mtimeMs;
    if (now - mtimeMs <= options.olderThanMs) continue;
    if (!options.dryRun && !removeFileEntry(path)) continue;
    out.push({
      agent: entry.name.slice(0, -SUFFIX.length),
      file: `.presence/${entry.name}`,
      lastSeen: new Date(mtimeMs).toISOString(),
    });
  }
  return out;
}
