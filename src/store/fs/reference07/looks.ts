import { join } from "node:path";
import { entryKind } from "../../../fsutil/root-files.js";
import { CLAIMS_DIR, REFERENCE_ID, TASKS_DIR } from "./records.js";

/*
 * Cheap first looks at a channel folder for chat.py 0.7's task files, apart from the board
 * (board.ts) that reads and changes them: the board is loaded only by a channel that has them,
 * so a post or a `tasks` in a channel without any never reads its code.
 */

/** Whether the channel folder `dir` has a chat.py 0.7 task record `id`. */
export function hasStructuredTask(dir: string, id: string): boolean {
  return REFERENCE_ID.test(id) && entryKind(join(dir, TASKS_DIR, `${id}.json`)) !== undefined;
}

/** Whether the channel folder `dir` has chat.py 0.7 task leases at all. */
export function hasClaims(dir: string): boolean {
  return entryKind(join(dir, CLAIMS_DIR)) === "dir";
}

/** Whether the channel folder `dir` has chat.py 0.7 task records at all (a `tasks/` folder). */
export function hasTaskRecords(dir: string): boolean {
  return entryKind(join(dir, TASKS_DIR)) === "dir";
}
