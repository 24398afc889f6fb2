import { oneLine } from "../../core/message.js";
import type { TaskInfo } from "../types.js";

/**
 * Task markers: `task-<id>.md` while open, `task-<id>.CLAIMED-<holder>.md` once claimed, as the
 * reference names them. Neither starts with digits, so neither is ever taken for a message.
 */
export const TASK_FILE = /^task-([A-Za-z0-9][A-Za-z0-9_-]*)(?:\.CLAIMED-([a-z0-9-]+))?\.md$/;

export interface TaskFields {
  id: string;
  from: string;
  title: string;
  ts: string;
  body: string;
}

export function formatTask(task: TaskFields): string {
  return (
    `---\nid: ${task.id}\nfrom: ${oneLine(task.from)}\nts: ${task.ts}\n` +
    `title: ${oneLine(task.title)}\n---\n${task.body.trimEnd()}\n`
  );
}

/** A task's title: its `title:` field, or for a marker written by hand, its first line. */
export function parseTaskFile(text: string): { title: string } {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trim() === "---") {
    for (const line of lines.slice(1)) {
      if (line.trim() === "---") break;
      const colon = line.indexOf(":");
      if (colon > 0 && line.slice(0, colon).trim() === "title") {
        return { title: line.slice(colon + 1).trim() };
      }
    }
  }
  const first = lines.find((l) => l.trim() !== "" && l.trim() !== "---") ?? "";
  return { title: oneLine(first.replace(/^#+\s*/, "")).slice(0, 200) };
}

/**
 * A task marker as a backend keeps it: the SPEC marker's text, its holder once claimed, and the
 * version a swap compares (a file name on the folder store, a KV revision on NATS).
 */
export interface TaskRecord {
  id: string;
  text: string;
  holder?: string;
  version: string | number;
}

/** The SPEC file name of a task marker in a given state. */
export function taskFileName(id: string, holder?: string): string {
  return holder === undefined ? `task-${id}.md` : `task-${id}.CLAIMED-${holder}.md`;
}

export function taskInfo(channel: string, record: TaskRecord): TaskInfo {
  const { id, holder } = record;
  const title = parseTaskFile(record.text).title;
  const file = taskFileName(id, holder);
  if (holder === undefined) return { id, channel, state: "open", title, file };
  return { id, channel, state: "claimed", holder, title, file };
}

/** The id a new task gets: one more than the largest numeric id, and at least `floor`. */
export function nextTaskId(existing: readonly TaskRecord[], floor = 1): string {
  const numbers = existing.map((t) => Number(t.id)).filter(Number.isSafeInteger);
  return String(Math.max(floor, Math.max(0, ...numbers) + 1));
}
