import { AgentChatError } from "../../core/errors.js";
import {
  formatTimestamp,
  formatTo,
  oneLine,
  parseTo,
  serializeMessage,
  titleFromBody,
} from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { slug, validateName } from "../../core/names.js";
import { checkReferenceEvent } from "../../core/reference-event.js";
import { SIG_KEY, withSigLine } from "../../core/signature.js";
import type { InitOptions, NewTask, PostInput, PostSigner } from "../types.js";

/** Limits every backend enforces alike, so that a post accepted by one is accepted by all. */
export const MAX_TITLE = 200;
export const MAX_STATUS = 40;
/**
 * What a message file may hold beyond its body: the frontmatter. A file larger than the body
 * limit plus this is no message of ours and is never read into memory.
 */
export const MAX_FRONTMATTER_BYTES = 64 * 1024;

/** A post that passed validation: what a backend serialises once it has a seq. */
export interface PostDraft {
  channel: string;
  from: string;
  to: string;
  title: string;
  body: string;
  status: string;
  replyTo: number | undefined;
  extra: Record<string, string>;
  signer?: PostSigner | undefined;
}

/** The text of a message file: the draft at its seq, signed when the poster has a key. */
export function renderMessage(draft: PostDraft, seq: number, ts: string): string {
  if (!draft.signer) return serializeMessage({ ...draft, seq, ts });
  // Readers see line ends as "\n" (the parser folds CR LF and CR): a signature over anything
  // else would never match what they check. An unsigned post keeps its bytes as given.
  const body = draft.body.replace(/\r\n?/g, "\n");
  const text = serializeMessage({ ...draft, body, seq, ts });
  return withSigLine(text, { key: draft.signer.key, signature: draft.signer.sign(text) });
}

/** The signature line is the signer's to write: one given as data would be a second, forged one. */
function assertNoSigKey(extra: Record<string, string> | undefined): void {
  if (Object.keys(extra ?? {}).some((key) => slug(key).replace(/-/g, "_") === SIG_KEY)) {
    throw new AgentChatError("INVALID_ARGUMENT", `frontmatter key "${SIG_KEY}" is reserved`);
  }
}

/**
 * Refuses what every reader (ours and chat.py) would skip as binary content: a NUL anywhere in
 * the file. Acknowledging such a post would lose it without a word.
 */
function refuseUnreadable(input: PostInput): void {
  const fields = { body: input.body, title: input.title, status: input.status, ...input.extra };
  for (const [field, value] of Object.entries(fields)) {
    if (typeof value === "string" && value.includes("\0")) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `message ${field} holds a NUL byte: readers skip a file with one as binary content; post text`,
      );
    }
  }
}

/** A post needs a body, or a title alone that says it all ("LGTM", status ack), as chat.py takes with `--body ''`. */
function refuseEmpty(input: PostInput): void {
  const titled = oneLine(input.title ?? "") !== "";
  if (typeof input.body !== "string" || (input.body.trim() === "" && !titled)) {
    throw new AgentChatError("INVALID_ARGUMENT", "message body is empty");
  }
}

/** Validates a post before any backend touches its storage. */
export function draftPost(channel: string, input: PostInput, maxBodyBytes: number): PostDraft {
  validateName("channel", channel);
  const from = validateName("agent", input.from);
  refuseEmpty(input);
  refuseUnreadable(input);
  const bytes = Buffer.byteLength(input.body);
  if (bytes > maxBodyBytes) {
    throw new AgentChatError(
      "TOO_LARGE",
      `message body is ${bytes} bytes; the limit is ${maxBodyBytes}`,
    );
  }
  const title = oneLine(input.title ?? "") || titleFromBody(input.body);
  if (title.length > MAX_TITLE) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `title is ${title.length} characters; at most ${MAX_TITLE}`,
    );
  }
  const to = formatTo(input.to);
  const recipients = parseTo(to);
  if (!recipients.broadcast) {
    for (const name of to.split(",")) validateName("agent", name.trim());
  }
  const status = oneLine(input.status ?? "");
  if (status.length > MAX_STATUS) {
    throw new AgentChatError("INVALID_ARGUMENT", `status is longer than ${MAX_STATUS} characters`);
  }
  checkReferenceEvent(status, input.body);
  if (input.replyTo !== undefined && !(Number.isSafeInteger(input.replyTo) && input.replyTo > 0)) {
    throw new AgentChatError("INVALID_ARGUMENT", "reply_to must be a positive message number");
  }
  assertNoSigKey(input.extra);
  const draft: PostDraft = {
    channel,
    from,
    to,
    title,
    body: input.body,
    status,
    replyTo: input.replyTo,
    extra: input.extra ?? {},
    signer: input.signer,
  };
  // Serialising once here rejects bad extra keys before any lock or network round trip.
  serializeMessage({ ...draft, seq: 0, ts: "" });
  return draft;
}

/**
 * A new channel's `_meta.json`. Keys of ours come after the reference's and never replace them:
 * an `extra` with `members: 5` (say, from a daemon client) would write a meta that no reader,
 * chat.py included, could use.
 */
export function draftMeta(channel: string, options: InitOptions): ChannelMeta {
  validateName("channel", channel);
  const members = (options.members ?? []).map((m) => validateName("agent", m));
  const { channel: _c, members: _m, topic: _t, created: _cr, ...extra } = options.extra ?? {};
  return {
    channel,
    members,
    topic: oneLine(options.topic ?? ""),
    created: formatTimestamp(),
    ...extra,
  };
}

/** Validates a new task's sender and title; returns them normalised. */
export function draftTask(task: NewTask): { from: string; title: string } {
  const from = validateName("agent", task.from);
  const title = oneLine(task.title);
  if (title === "") throw new AgentChatError("INVALID_ARGUMENT", "task title is empty");
  if (title.length > MAX_TITLE) {
    throw new AgentChatError("INVALID_ARGUMENT", `task title is longer than ${MAX_TITLE}`);
  }
  return { from, title };
}

/** Task ids sort numerically when both are numbers, else as strings. */
export function compareTaskIds(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  if (Number.isSafeInteger(na) && Number.isSafeInteger(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}
