import { AgentChatError } from "../../core/errors.js";
import { isRelevant, type Message, parseTo } from "../../core/message.js";
import { identity } from "../../core/names.js";
import { abortError, Wakeup } from "../../store/shared/index.js";
import {
  DEFAULT_WAIT_TIMEOUT_MS,
  DELIVERY_STATES,
  type DeliveryProof,
  type DeliveryState,
  type PresenceInfo,
  type Receipt,
  type Receipts,
  type SignedReadReceipt,
  type Store,
  type WaitForOptions,
  type WhoOptions,
} from "../../store/types.js";
import { checkSeq, type DeliveryHost } from "./host.js";
import { parsePresence, presenceInfo } from "./presence.js";
import {
  addressees,
  answerOf,
  emptyNote,
  owedBy,
  parseReceiptNote,
  parseSignedReceipt,
  type ReceiptNote,
  reached,
  receiptFor,
  whyNot,
} from "./receipts.js";

/** Cursors move without a message: a receipt wait looks this often (a few small reads). */
const DEFAULT_RECEIPTS_POLL_MS = 100;

/**
 * What delivery records answer (docs/delivery.md): receipts, why one is short, waits on them,
 * who is there. Apart from {@link Delivery}, which records them on every post and read: only
 * `receipts`, `who` and their MCP tools ask, so a hot command never reads this code.
 */
export class DeliveryQueries {
  constructor(private readonly host: DeliveryHost) {}

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
    const replies = later.filter((m) => m.seq > seq);
    const authored = options.proof ? await options.proof.authored(replies) : replies;
    const addressees_: Receipt[] = [];
    for (const agent of addressees(message, meta, seen)) {
      const cursor = await this.host.loadCursor(channel, agent);
      const note = notes.get(identity(agent)) ?? emptyNote();
      const claimed = receiptFor(message, agent, cursor, note, answerOf(message, replies, agent));
      if (!options.proof) {
        addressees_.push(claimed);
        continue;
      }
      const signed = await this.signedReceipt(channel, agent);
      const proven = await provenReceipt(
        options.proof,
        channel,
        message,
        agent,
        note,
        signed,
        authored,
      );
      if (!reached(proven.state, claimed.state)) proven.unproven = claimed.state;
      addressees_.push(proven);
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
    const asked: WhoOptions = options.proof ? { proof: options.proof } : {};
    let receipts = await this.receipts(channel, seq, asked);
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
          throw timedOut(await this.explain(channel, seq, asked), options.state, timeoutMs);
        }
        receipts = await this.receipts(channel, seq, asked);
      }
      return receipts;
    } finally {
      off();
      clearInterval(poll);
      clearTimeout(deadline);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The agent's signed read receipt in the channel, if one of that shape is kept. */
  private async signedReceipt(
    channel: string,
    agent: string,
  ): Promise<SignedReadReceipt | undefined> {
    return parseSignedReceipt(
      (await this.host.readNote(channel, "signed-receipts", identity(agent)))?.text,
    );
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
    const all = await this.host.messages(channel, 0);
    // Where signatures are required, only what was verifiably written is owed or answers.
    const messages = options.proof ? await options.proof.authored(all) : all;
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
 * An addressee's receipt from what it signed only: `read` from its signed read receipt (a
 * cursor anyone may move proves nothing), `answered` from a reply it verifiably wrote.
 */
async function provenReceipt(
  proof: DeliveryProof,
  channel: string,
  message: Message,
  agent: string,
  note: ReceiptNote,
  signed: SignedReadReceipt | undefined,
  authored: readonly Message[],
): Promise<Receipt> {
  const readBy = signed !== undefined && (await proof.readBy(channel, agent, signed));
  const read: Array<[number, number]> = readBy ? [[signed.seq, signed.at]] : [];
  const cursor = readBy ? signed.seq : 0;
  const answer = answerOf(message, authored, agent);
  return receiptFor(message, agent, cursor, { notified: note.notified, read }, answer);
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

function byAgent(a: PresenceInfo, b: PresenceInfo): number {
  return a.agent.localeCompare(b.agent);
}
