import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import type { NoteStore } from "../../store/records/index.js";
import type { Actor } from "./presence.js";

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
