import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import type { Actor } from "./presence.js";

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

/** What the delivery logic needs from the store it runs in. */
export interface DeliveryHost extends NoteStore {
  readonly location: string;
  now(): number;
  actor: Actor;
  roster(channel: string): Promise<ChannelMeta>;
  /** Every well-formed message after `after`. */
  messages(channel: string, after: number): Promise<Message[]>;
  loadCursor(channel: string, agent: string): Promise<number>;
  /** Calls `listener` when new messages may have appeared in the channel; returns the off. */
  onChange(channel: string, listener: () => void): Promise<() => void>;
  warnOnce(warning: string, report: ((w: string) => void) | undefined, scope?: string): void;
  onWarning?: (warning: string) => void;
  /** False: this store records no presence (receipts are still kept). */
  recordPresence: boolean;
  /** Resolves once the records the store's operations left to finish are written (LateWork). */
  written(): Promise<void>;
}

export function checkSeq(seq: number): void {
  if (!Number.isSafeInteger(seq) || seq <= 0) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `a message number is a positive integer (got ${seq})`,
    );
  }
}
