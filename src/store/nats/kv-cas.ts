import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";

/** JetStream's error code for a failed expected-last-(subject-)sequence check. */
const WRONG_LAST_SEQUENCE = 10071;

/** A write refused because the key (or subject) moved on since it was read: a lost race. */
export function isWrongLastSequence(err: unknown): boolean {
  const e = err as { code?: unknown; message?: string };
  return e?.code === WRONG_LAST_SEQUENCE || /wrong last sequence/i.test(e?.message ?? "");
}

/** What a compare-and-set sees of a key: its revision while it holds a value. */
export type KeyState = { revision: number } | undefined;

/** A key as read for a write: its state, and the stream seq of its last entry (0: none). */
interface KeyRead {
  state: KeyState;
  /** The key's last entry, a deletion marker too: the write expects it to be still the last. */
  lastSeq: number;
}

/** One compare-and-set waiting for its turn. */
interface Op {
  key: string;
  value: string;
  accept: (state: KeyState) => boolean;
  resolve: (seq: number | undefined) => void;
  reject: (err: unknown) => void;
}

/** Rounds in a row that stored nothing before the writer starts pausing between them. */
const PATIENT_ROUNDS = 3;

/**
 * KV creates and revision-checked updates that hold on a nats-server 2.9 cluster. There the
 * KV's own checks (expected last subject sequence) are made against what the stream leader has
 * applied, not what is in flight, so two concurrent claims could both win (nats-server#4320).
 * The stream's last sequence is checked against what was proposed, so every write expects the
 * bucket's last sequence: read first, then the key (from the leader, never a replica's direct
 * get, which may lag), and the write lands only if no write of the bucket came after it.
 * It expects the key's own last entry too: the two reads are two requests, and around a healed
 * partition each may be answered by another leader, a cut-off one from its stale copy; a fresh
 * bucket sequence beside a stale key would pass the bucket's check alone (a claim won twice).
 *
 * As every write of the bucket is checked against every other, writes made at once from one
 * connection (a thousand woken agents recording their receipts) would each undo the others' basis
 * and retry without end. So one connection's writes go in rounds: one look at the bucket's last
 * sequence (none when this writer's own last acknowledged write is still the last), the keys of
 * the round read together, then each write expecting the one before it. A write whose check
 * passes had only this round's writes, to other keys, since its key was read, so its check holds.
 * When another connection's write comes between, the rest of the round is read again.
 */
export class CasWriter {
  private queue: Op[] = [];
  private running = false;
  /** The bucket's last sequence as of this writer's last acknowledged write; -1: unknown. */
  private lastAcked = -1;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly bucket: string,
  ) {}

  private get stream(): string {
    return `KV_${this.bucket}`;
  }

  /**
   * Writes `value` under `key` when `accept` says the key is as the caller expects (false: it
   * lost, `undefined` is returned); else the write's revision.
   */
  set(
    key: string,
    value: string,
    accept: (state: KeyState) => boolean,
  ): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ key, value, accept, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  /**
   * Another write of this connection to the bucket was acknowledged at `seq`. The leader applied
   * it before answering, so keys read after it show every write up to it: the next round may
   * expect it instead of looking (a cursor saved before a receipt).
   */
  acked(seq: number): void {
    this.lastAcked = Math.max(this.lastAcked, seq);
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let idle = 0; this.queue.length > 0; ) {
        // A key once per round: its second write must read what the first one wrote.
        const round: Op[] = [];
        const later: Op[] = [];
        const keys = new Set<string>();
        for (const op of this.queue) {
          if (keys.has(op.key)) later.push(op);
          else {
            keys.add(op.key);
            round.push(op);
          }
        }
        this.queue = later;
        const { left, stored } = await this.round(round);
        this.queue = left.concat(this.queue);
        idle = stored ? 0 : idle + 1;
        if (idle > PATIENT_ROUNDS) {
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, idle * 2)));
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** One round: the ops it settled stay settled; `left` go again after a fresh look. */
  private async round(ops: Op[]): Promise<{ left: Op[]; stored: boolean }> {
    let last = this.lastAcked;
    try {
      if (last < 0) last = (await this.jsm.streams.info(this.stream)).state.last_seq;
    } catch (err) {
      for (const op of ops) op.reject(err);
      return { left: [], stored: false };
    }
    const states = await Promise.all(
      ops.map((op) =>
        this.state(op.key).then(
          (read) => ({ read }),
          (err: unknown) => ({ err }),
        ),
      ),
    );
    let stored = false;
    for (const [i, op] of ops.entries()) {
      const outcome = states[i]!;
      if ("err" in outcome) {
        op.reject(outcome.err);
        continue;
      }
      const { read } = outcome;
      if (!op.accept(read.state)) {
        op.resolve(undefined);
        continue;
      }
      try {
        const ack = await this.js.publish(`$KV.${this.bucket}.${op.key}`, op.value, {
          expect: { lastSequence: last, lastSubjectSequence: read.lastSeq },
        });
        last = ack.seq;
        this.lastAcked = ack.seq;
        stored = true;
        op.resolve(ack.seq);
      } catch (err) {
        this.lastAcked = -1;
        if (isWrongLastSequence(err)) return { left: ops.slice(i), stored };
        // Whether it landed is unknown: the rest are read again, after a fresh look.
        op.reject(err);
        return { left: ops.slice(i + 1), stored };
      }
    }
    return { left: [], stored };
  }

  private async state(key: string): Promise<KeyRead> {
    const stored = await this.jsm.streams
      .getMessage(this.stream, { last_by_subj: `$KV.${this.bucket}.${key}` })
      .catch((err: unknown) => {
        if (/no message found|not found/i.test((err as Error)?.message ?? "")) return undefined;
        throw err;
      });
    const operation = stored?.header?.get("KV-Operation");
    const state = stored && !operation ? { revision: stored.seq } : undefined;
    return { state, lastSeq: stored?.seq ?? 0 };
  }
}
