import { hostname } from "node:os";
import { identity, validateName } from "../../core/names.js";
import type {
  PresenceInfo,
  Receipts,
  SignedReadReceipt,
  WaitForOptions,
  WhoOptions,
} from "../../store/types.js";
import { currentActor } from "./acting.js";
import type { DeliveryQueries } from "./delivery-queries.js";
import { checkSeq, type DeliveryHost } from "./host.js";
import {
  type Actor,
  formatPresence,
  PARKED_HEARTBEAT_MS,
  type Parked,
  PRESENCE_THROTTLE_MS,
  type PresenceRecord,
  parsePresence,
} from "./presence.js";
import {
  addStep,
  emptyNote,
  formatReceiptNote,
  formatSignedReceipt,
  parseReceiptNote,
  parseSignedReceipt,
  type ReceiptNote,
} from "./receipts.js";

export function defaultHost(): string {
  try {
    return hostname();
  } catch {
    return "localhost";
  }
}

/** A revision-checked read-modify-write gives up after this many lost races. */
const WRITE_TRIES = 4;

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
        if (next && dropped && !next.parked) next.dropped = dropped;
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
    // Decided at each try, as a write may be tried again after another: a wait that ended (its
    // heartbeat late) is not put back, and one that parked since (the agent's next wait, while
    // the last one's end is written) stays, as does a wait parked by another process.
    const here = this.parkedHere.get(key);
    if (parked && here !== parked) return undefined;
    const next: PresenceRecord = { v: 1, agent, harness, host, pid, at: now };
    const keep = parked === null ? here : (parked ?? here ?? otherProcess(prev?.parked, actor));
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
      await this.touch(agent, null, actor, dropped);
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

  /**
   * Keeps the agent's latest signed read receipt in place of the one kept. The kept one is not
   * trusted to go further: anyone can write that file, and a planted receipt claiming a huge seq
   * would otherwise keep every real one out. (Two reads of the same agent racing may leave the
   * lower one kept until the next read.) A courtesy of the read it rides on, like every record
   * here: one that cannot be written is said once.
   */
  async attest(channel: string, agent: string, receipt: SignedReadReceipt): Promise<void> {
    validateName("agent", agent);
    checkSeq(receipt.seq);
    await this.host.roster(channel);
    const key = identity(agent);
    try {
      for (let i = 0; i < WRITE_TRIES; i++) {
        const current = await this.host.readNote(channel, "signed-receipts", key);
        const kept = parseSignedReceipt(current?.text);
        if (kept && kept.seq === receipt.seq && kept.sig === receipt.sig) return;
        const text = formatSignedReceipt(receipt);
        if (await this.host.writeNote(channel, "signed-receipts", key, text, current?.version)) {
          return;
        }
      }
    } catch (err) {
      this.host.warnOnce(
        `signed read receipt of ${agent} in ${channel} not recorded: ${(err as Error).message}`,
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

  // ---- Reading (features/delivery/delivery-queries.ts: loaded by the first question) ----

  private queries: Promise<DeliveryQueries> | undefined;

  private ask(): Promise<DeliveryQueries> {
    this.queries ??= import("./delivery-queries.js").then((m) => new m.DeliveryQueries(this.host));
    return this.queries;
  }

  async receipts(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    await this.host.written();
    return (await this.ask()).receipts(channel, seq, options);
  }

  async explain(channel: string, seq: number, options?: WhoOptions): Promise<Receipts> {
    await this.host.written();
    return (await this.ask()).explain(channel, seq, options);
  }

  async waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts> {
    await this.host.written();
    return (await this.ask()).waitFor(channel, seq, options);
  }

  async who(channel: string | undefined, options?: WhoOptions): Promise<PresenceInfo[]> {
    await this.host.written();
    return (await this.ask()).who(channel, options);
  }
}

function otherProcess(parked: Parked | undefined, actor: Actor): Parked | undefined {
  return parked && (parked.pid !== actor.pid || parked.host !== actor.host) ? parked : undefined;
}
