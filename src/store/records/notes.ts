import type { Harness } from "../types.js";

/*
 * The records a backend keeps for the features (src/features/), declared here, below them: a
 * backend stores them in its own form without importing a feature.
 */

/** A small JSON record a backend keeps beside the messages, in a name chat.py ignores. */
export interface Note {
  name: string;
  /** Undefined when the entry cannot be read (a link, a FIFO, too large): see `problem`. */
  text?: string;
  problem?: string;
  /** What a revision-checked write compares (a KV revision); undefined: none yet. */
  version?: string | number;
}

/** Presence is kept store-wide (scope ""), receipts and signed read receipts per channel. */
export type NoteKind = "presence" | "receipts" | "signed-receipts";

/**
 * Where delivery keeps its records: small JSON notes in names chat.py ignores, `scope` a channel
 * or "" for the store. Each backend implements it once (a folder of files, KV keys).
 */
export interface NoteStore {
  listNotes(scope: string, kind: NoteKind): Promise<Note[]>;
  readNote(scope: string, kind: NoteKind, name: string): Promise<Note | undefined>;
  /**
   * Writes a note atomically; on a backend with revisions, only if it is still at `version`
   * (undefined: only if absent), false otherwise.
   */
  writeNote(
    scope: string,
    kind: NoteKind,
    name: string,
    text: string,
    version: Note["version"],
  ): Promise<boolean>;
}

/** Who the process recording presence is, beyond the agent's name (defaults: cli, this host). */
export interface PresenceOptions {
  harness?: Harness;
  host?: string;
  pid?: number;
  /** Hears, once, that a presence or receipt record could not be written. */
  onWarning?: (warning: string) => void;
  /** False: record no presence (a bench's baseline, or a user who wants none shared). */
  recordPresence?: boolean;
}
