import { join } from "node:path";
import {
  ensureRealDir,
  entryKind,
  listRealDir,
  readOwnTextSync,
  replaceFileSync,
} from "../../fsutil/root-files.js";
import type { Note, NoteKind, NoteStore } from "../records/index.js";

/** Presence and receipt records: a few hundred bytes each. */
const MAX_NOTE_BYTES = 16 * 1024;
const NOTE_SUFFIX = ".json";

/**
 * Delivery's notes in the folder: `<root>/.presence/<agent>.json` for the store,
 * `<channel>/.receipts/<agent>.json` for a channel, names chat.py ignores. The folder has no
 * revisions, so a write replaces the file atomically and the last writer wins.
 */
export function folderNotes(root: string): NoteStore {
  const notesDir = (scope: string, kind: NoteKind) =>
    scope === "" ? join(root, `.${kind}`) : join(root, scope, `.${kind}`);
  return {
    async listNotes(scope, kind) {
      const dir = notesDir(scope, kind);
      if (entryKind(dir) === undefined) return [];
      const out: Note[] = [];
      for (const entry of listRealDir(dir)) {
        if (!entry.name.endsWith(NOTE_SUFFIX) || entry.name.startsWith(".")) continue;
        out.push(noteAt(dir, entry.name.slice(0, -NOTE_SUFFIX.length)));
      }
      return out;
    },
    async readNote(scope, kind, name) {
      // No look before the read (a call more on every post): a missing note is the read's ENOENT.
      try {
        return noteText(notesDir(scope, kind), name);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        return code === "ENOENT" || code === "ENOTDIR" ? undefined : unreadableNote(name, err);
      }
    },
    async writeNote(scope, kind, name, text) {
      const dir = notesDir(scope, kind);
      ensureRealDir(dir);
      replaceFileSync(dir, `${name}${NOTE_SUFFIX}`, text);
      return true;
    },
  };
}

/** A note file; one that is a link, a FIFO, too large or not ours comes back with a problem. */
function noteAt(dir: string, name: string): Note {
  try {
    return noteText(dir, name);
  } catch (err) {
    return unreadableNote(name, err);
  }
}

function noteText(dir: string, name: string): Note {
  return { name, text: readOwnTextSync(join(dir, `${name}${NOTE_SUFFIX}`), MAX_NOTE_BYTES) };
}

function unreadableNote(name: string, err: unknown): Note {
  return { name, problem: `cannot be read (${(err as Error).message}); ignored` };
}
