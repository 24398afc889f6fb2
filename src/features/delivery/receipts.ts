import { type Message, parseTo } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { identity } from "../../core/names.js";
import { isStoredCount, storedJson } from "../../store/shared/index.js";
import type { DeliveryState, PresenceInfo, Receipt, SignedReadReceipt } from "../../store/types.js";

/**
 * What is not derivable from messages and cursors, per agent and channel (the folder store:
 * `<channel>/.receipts/<agent>.json`; NATS: `receipt.<channel>.<agent>`): when the agent's
 * session was told messages up to a seq wait (notified), and when its cursor moved (read).
 * Each is a short list of `[seq, ms]`, seq increasing, so that a time can be given per message.
 */
export interface ReceiptNote {
  notified: Array<[number, number]>;
  read: Array<[number, number]>;
}

export const RECEIPT_VERSION = 1;
/** Steps kept per kind: enough for the messages an agent has not yet answered. */
const MAX_STEPS = 64;
/** `ed25519:` and a key and a signature in base64url are 139 characters. */
const MAX_SIG_CHARS = 200;

export function emptyNote(): ReceiptNote {
  return { notified: [], read: [] };
}

export function formatReceiptNote(note: ReceiptNote): string {
  return `${JSON.stringify({ v: RECEIPT_VERSION, notified: note.notified, read: note.read })}\n`;
}

/**
 * An agent's latest signed read receipt in a channel (the folder store:
 * `<channel>/.signed-receipts/<agent>.json`; NATS: `signed-receipts.<channel>.<agent>`), apart
 * from its receipt note so that no writer of one ever drops the other.
 */
export function formatSignedReceipt(receipt: SignedReadReceipt): string {
  const { seq, at, sig } = receipt;
  return `${JSON.stringify({ v: RECEIPT_VERSION, seq, at, sig })}\n`;
}

/** A signed receipt's shape (its signature is for the reader to check), else undefined. */
export function parseSignedReceipt(raw: string | undefined): SignedReadReceipt | undefined {
  let r: Record<string, unknown>;
  try {
    const value: unknown = JSON.parse(raw ?? "");
    r = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { v, seq, at, sig } = r;
  if (v !== RECEIPT_VERSION || !isStoredCount(seq) || !isStoredCount(at)) return undefined;
  if (typeof sig !== "string" || sig.length > MAX_SIG_CHARS) return undefined;
  return { seq, at, sig };
}

/** A stored note, or why it is ignored (a stored note is untrusted input). */
export function parseReceiptNote(raw: string): { note?: ReceiptNote; problem?: string } {
  const parsed = storedJson(raw);
  if (!parsed) return { problem: "is not JSON; ignored" };
  const { value } = parsed;
  const v = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof v.v === "number" && v.v > RECEIPT_VERSION) {
    return { problem: `was written by a newer version (v${v.v}); ignored` };
  }
  if (v.v !== RECEIPT_VERSION) return { problem: "is not a receipt record of ours; ignored" };
  return { note: { notified: steps(v.notified), read: steps(v.read) } };
}

function steps(value: unknown): Array<[number, number]> {
  if (!Array.isArray(value)) return [];
  const out: Array<[number, number]> = [];
  for (const step of value.slice(-MAX_STEPS)) {
    if (!Array.isArray(step)) continue;
    const [seq, at] = step as unknown[];
    if (!isStoredCount(seq) || !isStoredCount(at)) continue;
    if (out.length === 0 || seq > out[out.length - 1]![0]) out.push([seq, at]);
  }
  return out;
}

/** Adds a step when it goes further than the last one; false when it changes nothing. */
export function addStep(list: Array<[number, number]>, seq: number, at: number): boolean {
  const last = list[list.length - 1];
  if (last && last[0] >= seq) return false;
  list.push([seq, at]);
  if (list.length > MAX_STEPS) list.splice(0, list.length - MAX_STEPS);
  return true;
}

/** When the first step reaching `seq` was taken. */
function reachedAt(list: Array<[number, number]>, seq: number): number | undefined {
  return list.find(([s]) => s >= seq)?.[1];
}

/**
 * Who a message is for: its named recipients; a broadcast's are the channel's members, or in
 * an open channel everyone seen in it (`seen`). Never its sender.
 */
export function addressees(message: Message, meta: ChannelMeta, seen: Iterable<string>): string[] {
  const to = parseTo(message.to);
  const names = to.broadcast ? (meta.members.length > 0 ? meta.members : [...seen]) : to.names;
  const sender = identity(message.from);
  const out = new Map<string, string>();
  for (const name of names) {
    const key = identity(name);
    if (key !== sender && key !== "" && !out.has(key)) out.set(key, name);
  }
  return [...out.values()];
}

/** The first message after `seq` by `agent` that answers it: a reply to it, or an `ack`. */
export function answerOf(
  message: Message,
  later: readonly Message[],
  agent: string,
): Message | undefined {
  const me = identity(agent);
  return later.find(
    (m) =>
      m.seq > message.seq &&
      identity(m.from) === me &&
      (m.replyTo === message.seq ||
        (m.replyTo === undefined && m.status === "ack" && isFor(m, message.from))),
  );
}

function isFor(message: Message, agent: string): boolean {
  const to = parseTo(message.to);
  return to.broadcast || to.names.includes(identity(agent));
}

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** One addressee's receipt, from its cursor, its note and what it posted. */
export function receiptFor(
  message: Message,
  agent: string,
  cursor: number,
  note: ReceiptNote,
  answer: Message | undefined,
): Receipt {
  const receipt: Receipt = { agent, state: "stored" };
  const notifiedAt = iso(reachedAt(note.notified, message.seq));
  const readAt = iso(reachedAt(note.read, message.seq));
  if (notifiedAt) {
    receipt.state = "notified";
    receipt.notifiedAt = notifiedAt;
  }
  if (cursor >= message.seq) {
    receipt.state = "read";
    if (readAt) receipt.readAt = readAt;
  }
  if (answer) {
    receipt.state = "answered";
    receipt.answer = answer.seq;
    const ms = answeredMs(answer.ts, [receipt.readAt, receipt.notifiedAt]);
    if (ms !== undefined) receipt.answeredAt = new Date(ms).toISOString();
  }
  return receipt;
}

/**
 * When the answer was posted. Its `ts` is in whole seconds (SPEC), the steps before it in
 * milliseconds: an answer stamped 10:00:05 may have been written at 10:00:05.900, after a read
 * at 10:00:05.400. Within its second it is placed no earlier than the steps recorded in that
 * second, so that a receipt never shows "read" after "answered" when the read came first.
 */
function answeredMs(ts: string, before: Array<string | undefined>): number | undefined {
  const stamped = Date.parse(ts);
  if (!Number.isFinite(stamped)) return undefined;
  let at = stamped;
  for (const step of before) {
    const ms = step === undefined ? Number.NaN : Date.parse(step);
    if (ms > at && ms < stamped + 1000) at = ms;
  }
  return at;
}

export function reached(state: DeliveryState, goal: DeliveryState): boolean {
  const order: DeliveryState[] = ["stored", "notified", "read", "answered"];
  return order.indexOf(state) >= order.indexOf(goal);
}

/** What is known of why an addressee is not further, in one line (`explain`). */
export function whyNot(
  receipt: Receipt,
  presence: PresenceInfo | undefined,
  channel: string,
): string {
  const why = provenWhy(receipt, presence, channel);
  if (receipt.unproven === undefined) return why;
  const claim =
    receipt.unproven === "answered"
      ? `a reply not signed by ${receipt.agent}`
      : `its cursor or receipt record`;
  return `${why}; ${claim} says ${receipt.unproven}, but nothing ${receipt.agent} signed proves it (signatures: require)`;
}

function provenWhy(receipt: Receipt, presence: PresenceInfo | undefined, channel: string): string {
  if (receipt.state === "answered")
    return `answered with #${receipt.answer} at ${receipt.answeredAt ?? "?"}`;
  if (receipt.state === "read") {
    return `read${receipt.readAt ? ` at ${receipt.readAt}` : " (by a client that keeps no time)"}, not answered`;
  }
  const seen = presenceLine(presence, channel);
  if (receipt.state === "notified")
    return `notified at ${receipt.notifiedAt} but not read; ${seen}`;
  return `never notified; ${seen}`;
}

function presenceLine(presence: PresenceInfo | undefined, channel: string): string {
  if (!presence || presence.state === "never-seen") return `never seen in this store`;
  const since = `last activity at ${presence.lastActive}`;
  switch (presence.state) {
    case "gone":
      return `gone (${presence.why})`;
    case "waiting":
      return presence.parkedOn?.includes(channel)
        ? `waiting on this channel now; ${since}`
        : `parked on other channels (${presence.parkedOn?.join(", ")}); ${since}`;
    default:
      return since;
  }
}

/**
 * The messages `agent` owes an answer, in seq order: addressed to it by name (not a broadcast),
 * asking for an answer ({@link asksForAnswer}), and with no reply from it (`reply_to`).
 */
export function owedBy(messages: readonly Message[], agent: string): number[] {
  const me = identity(agent);
  const replied = new Set<number>();
  for (const m of messages) {
    if (m.replyTo !== undefined && identity(m.from) === me) replied.add(m.replyTo);
  }
  return messages
    .filter((m) => identity(m.from) !== me && !replied.has(m.seq) && asksForAnswer(m))
    .filter((m) => parseTo(m.to).names.includes(me))
    .map((m) => m.seq);
}

/** A message that asks its addressees for an answer. */
export function asksForAnswer(message: Message): boolean {
  return (
    ["question", "proposal", "request"].includes(message.status) ||
    message.title.trim().endsWith("?")
  );
}
