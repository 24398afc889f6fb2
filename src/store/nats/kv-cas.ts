import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { isWrongLastSequence } from "./nats-store.js";

/** What a compare-and-set sees of a key: its revision while it holds a value. */
export type KeyState = { revision: number } | undefined;

/**
 * A KV create or revision-checked update that holds on a nats-server 2.9 cluster. There the
 * KV's own checks (expected last subject sequence) are made against what the stream leader has
 * applied, not what is in flight, so two concurrent claims could both win (nats-server#4320).
 * The stream's last sequence is checked against what was proposed: read it first, then the key
 * (from the leader, never a replica's direct get, which may lag), and write only if no write of
 * the bucket came after it. A write to another key makes it look again; `accept` says whether
 * the key is still as the caller expects (false: it lost, `undefined` is returned).
 */
export async function compareAndSet(
  js: JetStreamClient,
  jsm: JetStreamManager,
  bucket: string,
  key: string,
  value: string,
  accept: (state: KeyState) => boolean,
): Promise<number | undefined> {
  const stream = `KV_${bucket}`;
  const subject = `$KV.${bucket}.${key}`;
  for (let attempt = 0; ; attempt++) {
    const last = (await jsm.streams.info(stream)).state.last_seq;
    const stored = await jsm.streams
      .getMessage(stream, { last_by_subj: subject })
      .catch((err: unknown) => {
        if (/no message found|not found/i.test((err as Error)?.message ?? "")) return undefined;
        throw err;
      });
    const operation = stored?.header?.get("KV-Operation");
    const state = stored && !operation ? { revision: stored.seq } : undefined;
    if (!accept(state)) return undefined;
    try {
      const ack = await js.publish(subject, value, { expect: { lastSequence: last } });
      return ack.seq;
    } catch (err) {
      if (!isWrongLastSequence(err)) throw err;
      if (attempt > 3)
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 2)));
    }
  }
}
