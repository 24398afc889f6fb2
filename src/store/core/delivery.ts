import { AgentChatError } from "../../core/errors.js";
import { isRelevant, type Message, parseTo } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { identity, validateName } from "../../core/names.js";
import {
  DEFAULT_WAIT_TIMEOUT_MS,
  DELIVERY_STATES,
  type DeliveryState,
  type PresenceInfo,
  type Receipt,
  type Receipts,
  type Store,
  type WaitForOptions,
  type WhoOptions,
} from "../types.js";
import { currentActor } from "./acting.js";
import {
  type Actor,
  formatPresence,
  PARKED_HEARTBEAT_MS,
  type Parked,
  PRESENCE_THROTTLE_MS,
  type PresenceRecord,
  parsePresence,
  presenceInfo,
} from "./presence.js";
import {
  addressees,
  addStep,
  answerOf,
  emptyNote,
  formatReceiptNote,
  owedBy,
  parseReceiptNote,
  type ReceiptNote,
  reached,
  receiptFor,
  whyNot,
} from "./receipts.js";
import { abortError, Wakeup } from "./wakeup.js";

/** A small JSON record a backend keeps beside the messages, in a name chat.py ignores. */
export interface Note {
  name: string;
  /** Undefined when the entry cannot be read (a link, a FIFO, too large): see `problem`. */
  text?: string;
  problem?: string;
  /** What a revision-checked write compares (a KV revision); undefined: none yet. */
  version?: string | number;
}

/** Presence is kept store-wide (scope ""), receipts per channel. */
export type NoteKind = "presence" | "receipts";

/** What the delivery logic needs from the store it runs in. */
export interface DeliveryHost {
  readonly location: string;
  now(): number;
  actor: Actor;
  roster(channel: string): Promise<ChannelMeta>;
  /** Every well-formed message after `after`. */
  messages(channel: string, after: number): Promise<Message[]>;
  loadCursor(channel: string, agent: string): Promise<number>;
  /** Calls `listener` when new messages may have appeared in the channel; returns the off. */
  onChange(channel: string, listener: () => void): Promise<() => void>;
  listNotes(scope: string, kind: NoteKind): Promise<Note[]>;
  readNote(scope: string, kind: NoteKind, name: string): Promise<Note | undefined>;
  /** Writes `text` unless the note changed since `version` was read; false then. */
  writeNote(
    scope: string,
    kind: NoteKind,
    name: string,
    text: string,
    version: Note["version"],
  ): Promise<boolean>;
  warnOnce(warning: string, report: ((w: string) => void) | undefined, scope?: string): void;
  onWarning?: (warning: string) => void;
  /** False: this store records no presence (receipts are still kept). */
  recordPresence: boolean;
}

/** A revision-checked read-modify-write gives up after this many lost races. */
const WRITE_TRIES = 4;
/** Cursors move without a message: a receipt wait looks this often (a few small reads). */
const DEFAULT_RECEIPTS_POLL_MS = 100;

/**
 * Delivery states, receipts and presence, written once above the backends (docs/delivery.md).
 * Everything here that records is a courtesy of the operation it rides on: it never fails it.
 */
export class Delivery {
  /** The parked waits of this process, by agent key: its own activity keeps them. */
  private readonly parkedHere = new Map<string, Parked>();
  /** When this store last wrote each agent's presence (by agent key): within the throttle, a
   * plain touch has nothing to write and skips the read (a post's one request then). */
  private readonly wroteAt = new Map<string, number>();

  constructor(private readonly host: DeliveryHost) {}

  // ---- Recording ----

  /**
   * Records activity as `agent` (and, given `parked`, starts or ends a parked wait: null ends
   * it). Plain activity within {@link PRESENCE_THROTTLE_MS} of the last record is not written.
   */
  async touch(
    agent: string,
    parked?: Parked | null,
    actor = this.actor(),
    dropped?: Parked,
  ): Promise<void> {
    if (!this.host.recordPresence) return;
    try {
      const key = identity(agent);
      if (parked === undefined && this.wroteLately(key)) return;
      for (let i = 0; i < WRITE_TRIES; i++) {
        const current = await this.host.readNote("", "presence", key);
        const prev = current?.text === undefined ? undefined : parsePresence(current.text).record;
        const next = this.nextPresence(agent, key, prev, parked, actor);
        if (next && dropped) next.dropped = dropped;
        if (!next) return;
        const text = formatPresence(next);
        if (await this.host.writeNote("", "presence", key, text, current?.version)) {
          this.wroteAt.set(key, next.at);
          return;
        }
      }
    } catch (err) {
      this.host.warnOnce(
        `presence of ${agent} not recorded: ${(err as Error).message}`,
        this.host.onWarning,
      );
    }
  }

  private wroteLately(key: string): boolean {
    const at = this.wroteAt.get(key);
    if (at === undefined) return false;
    const since = this.host.now() - at;
    return since >= 0 && since < PRESENCE_THROTTLE_MS;
  }

  private nextPresence(
    agent: string,
    key: string,
    prev: PresenceRecord | undefined,
    parked: Parked | null | undefined,
    actor: Actor,
  ): PresenceRecord | undefined {
    const { harness, host, pid } = actor;
    const now = this.host.now();
    if (parked === undefined && prev && prev.harness === harness && prev.host === host) {
      if (now - prev.at >= 0 && now - prev.at < PRESENCE_THROTTLE_MS) return undefined;
    }
    const next: PresenceRecord = { v: 1, agent, harness, host, pid, at: now };
    // A wait parked by another process (or by this one, still running) stays on the record.
    const keep =
      parked === null
        ? undefined
        : (parked ?? this.parkedHere.get(key) ?? otherProcess(prev?.parked, actor));
    if (keep) next.parked = keep;
    return next;
  }

  /** The process this operation is done for: a daemon's client, else this process. */
  private actor(): Actor {
    return currentActor() ?? this.host.actor;
  }

  /**
   * Parks `agent` on `channels` until the returned function is called; heartbeats meanwhile.
   * Ended with `abandoned` (its caller went away), a wait run for another process leaves
   * a `dropped` mark: that process dead, the agent is gone, not merely no longer waiting.
   * Calling it again does nothing.
   */
  async park(agent: string, channels: string[]): Promise<(abandoned?: boolean) => Promise<void>> {
    const key = identity(agent);
    const actor = this.actor();
    const parked: Parked = { channels, since: this.host.now(), pid: actor.pid, host: actor.host };
    this.parkedHere.set(key, parked);
    await this.touch(agent, parked, actor);
    const timer = setInterval(() => void this.touch(agent, parked, actor), PARKED_HEARTBEAT_MS);
    timer.unref();
    let ended = false;
    return async (abandoned = false) => {
      if (ended) return;
      ended = true;
      clearInterval(timer);
      if (this.parkedHere.get(key) === parked) this.parkedHere.delete(key);
      const forOther = otherProcess(parked, this.host.actor);
      const dropped = abandoned && forOther ? parked : undefined;
      await this.touch(agent, this.parkedHere.get(key) ?? null, actor, dropped);
    };
  }

  /** Adds a step to the agent's receipt note in the channel (notified or read up to `seq`). */
  async step(channel: string, agent: string, kind: keyof ReceiptNote, seq: number): Promise<void> {
    try {
      const key = identity(agent);
      for (let i = 0; i < WRITE_TRIES; i++) {
        const current = await this.host.readNote(channel, "receipts", key);
        const note =
          (current?.text === undefined ? undefined : parseReceiptNote(current.text).note) ??
          emptyNote();
        if (!addStep(note[kind], seq, this.host.now())) return;
        const text = formatReceiptNote(note);
        if (await this.host.writeNote(channel, "receipts", key, text, current?.version)) return;
      }
    } catch (err) {
      this.host.warnOnce(
        `${kind} receipt of ${agent} in ${channel} not recorded: ${(err as Error).message}`,
        this.host.onWarning,
      );
    }
  }

  async notify(channel: string, agent: string, seq: number): Promise<void> {
    validateName("agent", agent);
    checkSeq(seq);
    await this.host.roster(channel);
    await this.step(channel, agent, "notified", seq);
    await this.touch(agent);
  }

  // ---- Reading ----

  async receipts(channel: string, seq: number, options: WhoOptions = {}): Promise<Receipts> {
    checkSeq(seq);
    const meta = await this.host.roster(channel);
    const later = await this.host.messages(channel, seq - 1);
    const message = later.find((m) => m.seq === seq);
    if (!message) {
      throw new AgentChatError("NOT_FOUND", `no message #${seq} in ${channel}`);
    }
    const notes = await this.receiptNotes(channel, options);
    const seen = meta.members.length > 0 ? [] : await this.seenIn(channel, notes);
    const addressees_: Receipt[] = [];
    for (const agent of addressees(message, meta, seen)) {
      const cursor = await this.host.loadCursor(channel, agent);
      const note = notes.get(identity(agent)) ?? emptyNote();
      addressees_.push(receiptFor(message, agent, cursor, note, answerOf(message, later, agent)));
    }
    return { channel, seq, from: message.from, title: message.title, addressees: addressees_ };
  }

  /** Receipts with, for each addressee short of answered, what is known of why. */
  async explain(channel: string, seq: number, options: WhoOptions = {}): Promise<Receipts> {
    const receipts = await this.receipts(channel, seq, options);
    const presence = await this.presence(options);
    for (const r of receipts.addressees) {
      r.why = whyNot(r, presence.get(identity(r.agent)), channel);
    }
    return receipts;
  }

  async waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    checkState(options.state);
    let receipts = await this.receipts(channel, seq);
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    const wake = new Wakeup();
    const off = await this.host.onChange(channel, () => wake.kick());
    const poll = setInterval(() => wake.kick(), options.intervalMs ?? DEFAULT_RECEIPTS_POLL_MS);
    const deadline = setTimeout(() => wake.fail(new AgentChatError("TIMEOUT", "")), timeoutMs);
    const onAbort = () => wake.fail(abortError());
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      if (options.signal?.aborted) throw abortError();
      while (!receipts.addressees.every((r) => reached(r.state, options.state))) {
        try {
          await wake.next();
        } catch (err) {
          if ((err as AgentChatError).code !== "TIMEOUT") throw err;
          throw timedOut(await this.explain(channel, seq), options.state, timeoutMs);
        }
        receipts = await this.receipts(channel, seq);
      }
      return receipts;
    } finally {
      off();
      clearInterval(poll);
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Every valid presence record, by agent key; bad ones are reported once. */
  async presence(options: WhoOptions = {}): Promise<Map<string, PresenceInfo>> {
    const out = new Map<string, PresenceInfo>();
    const now = this.host.now();
    for (const note of await this.host.listNotes("", "presence")) {
      const parsed = note.text === undefined ? { problem: note.problem } : parsePresence(note.text);
      if (!parsed.record) {
        this.host.warnOnce(
          `presence record ${note.name} ${parsed.problem}`,
          options.onWarning,
          "presence",
        );
        continue;
      }
      out.set(
        identity(parsed.record.agent),
        presenceInfo(parsed.record, now, this.host.actor.host),
      );
    }
    return out;
  }

  async who(channel: string | undefined, options: WhoOptions = {}): Promise<PresenceInfo[]> {
    const presence = await this.presence(options);
    if (channel === undefined) return [...presence.values()].sort(byAgent);
    const meta = await this.host.roster(channel);
    const messages = await this.host.messages(channel, 0);
    const notes = await this.receiptNotes(channel, options);
    const names = new Map<string, string>();
    for (const name of meta.members.length > 0
      ? meta.members
      : await this.seenIn(channel, notes, messages)) {
      names.set(identity(name), name);
    }
    const out: PresenceInfo[] = [];
    for (const [key, name] of names) {
      const info: PresenceInfo = { ...(presence.get(key) ?? { agent: name, state: "never-seen" }) };
      Object.assign(info, await this.owed(channel, name, messages));
      out.push(info);
    }
    return out.sort(byAgent);
  }

  /** Unread count, the oldest unread's time, and what the agent owes an answer. */
  private async owed(channel: string, agent: string, messages: Message[]) {
    const cursor = await this.host.loadCursor(channel, agent);
    const unread = messages.filter((m) => m.seq > cursor && isRelevant(m, agent));
    const owes = owedBy(messages, agent);
    const result: Pick<PresenceInfo, "unread" | "oldestUnread" | "owes"> = {
      unread: unread.length,
      owes,
    };
    const oldest = unread[0] && Date.parse(unread[0].ts);
    if (oldest !== undefined && Number.isFinite(oldest))
      result.oldestUnread = new Date(oldest).toISOString();
    return result;
  }

  private async receiptNotes(
    channel: string,
    options: WhoOptions,
  ): Promise<Map<string, ReceiptNote>> {
    const out = new Map<string, ReceiptNote>();
    for (const n of await this.host.listNotes(channel, "receipts")) {
      const parsed = n.text === undefined ? { problem: n.problem } : parseReceiptNote(n.text);
      if (parsed.note) out.set(n.name, parsed.note);
      else
        this.host.warnOnce(
          `receipt record ${n.name} in ${channel} ${parsed.problem}`,
          options.onWarning,
          channel,
        );
    }
    return out;
  }

  /** An open channel's people: who posted in it, who was named in it, who has a receipt there. */
  private async seenIn(
    channel: string,
    notes: Map<string, ReceiptNote>,
    messages?: Message[],
  ): Promise<string[]> {
    const names = new Map<string, string>();
    const all = messages ?? (await this.host.messages(channel, 0));
    for (const m of all) names.set(identity(m.from), m.from);
    for (const m of all)
      for (const key of parseTo(m.to).names) if (!names.has(key)) names.set(key, key);
    for (const key of notes.keys()) if (!names.has(key)) names.set(key, key);
    return [...names.values()];
  }
}

/**
 * {@link Delivery.waitFor} for a store that cannot park on receipts itself (the daemon client):
 * it asks for them every `intervalMs`.
 */
export async function pollReceipts(
  store: Pick<Store, "receipts" | "explain">,
  channel: string,
  seq: number,
  options: WaitForOptions,
): Promise<Receipts> {
  checkState(options.state);
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS);
  for (;;) {
    if (options.signal?.aborted) throw abortError();
    const receipts = await store.receipts(channel, seq);
    if (receipts.addressees.every((r) => reached(r.state, options.state))) return receipts;
    if (Date.now() >= deadline) {
      throw timedOut(await store.explain(channel, seq), options.state, options.timeoutMs);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? DEFAULT_RECEIPTS_POLL_MS));
  }
}

function checkState(state: DeliveryState): void {
  if (!DELIVERY_STATES.includes(state)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `unknown delivery state ${JSON.stringify(state)} (one of ${DELIVERY_STATES.join(", ")})`,
    );
  }
}

/** `TIMEOUT`, naming each addressee short of `state` and what is known of why. */
function timedOut(
  explained: Receipts,
  state: DeliveryState,
  ms: number | undefined,
): AgentChatError {
  const short = explained.addressees.filter((r) => !reached(r.state, state));
  const lines = short.map((r) => `${r.agent}: ${r.why}`).join("; ");
  const within = ms === undefined ? "" : ` within ${ms / 1000} s`;
  const error = new AgentChatError(
    "TIMEOUT",
    `#${explained.seq} in ${explained.channel} not ${state} by ${short.map((r) => r.agent).join(", ")}${within}: ${lines}`,
  );
  return Object.assign(error, { receipts: explained });
}

function otherProcess(parked: Parked | undefined, actor: Actor): Parked | undefined {
  return parked && (parked.pid !== actor.pid || parked.host !== actor.host) ? parked : undefined;
}

function checkSeq(seq: number): void {
  if (!Number.isSafeInteger(seq) || seq <= 0) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `a message number is a positive integer (got ${seq})`,
    );
  }
}

function byAgent(a: PresenceInfo, b: PresenceInfo): number {
  return a.agent.localeCompare(b.agent);
}
