import type {
  JetStreamClient,
  JetStreamManager,
  JetStreamPublishOptions,
  PubAck,
  StoredMsg,
} from "@nats-io/jetstream";
import type { Payload } from "@nats-io/transport-node";
import type { NatsStore } from "../../src/store/nats/nats-store.js";

/**
 * A NATS store's cursor reads and writes as the tests see them, to give a store the answers a
 * cluster gives around a healed partition: a cut-off leader's stale read, its refusal of a write
 * the real leader stored, an answer lost. A store reads a cursor as the KV bucket's last entry
 * for the key (from the leader) and writes it as a checked publish to the key's subject.
 */
interface Internals {
  quick: { jsm: JetStreamManager };
  js: JetStreamClient;
}

/** A cursor's last entry as the store reads it; null: none. */
export type CursorEntry = StoredMsg | null;

function subjectOf(store: NatsStore, channel: string, agent: string): string {
  return `$KV.${store.bucketName}.cursor.${channel}.${agent}`;
}

/** `agent`'s cursor in `channel` as the store reads it now. */
export function cursorEntry(
  store: NatsStore,
  channel: string,
  agent: string,
): Promise<CursorEntry> {
  const { quick } = store as unknown as Internals;
  return quick.jsm.streams.getMessage(`KV_${store.bucketName}`, {
    last_by_subj: subjectOf(store, channel, agent),
  });
}

/**
 * The store's reads of that cursor answer what `lag` returns for them; undefined: the real
 * answer. `lag` is asked once a read.
 */
export function lagCursorReads(
  store: NatsStore,
  channel: string,
  agent: string,
  lag: () => CursorEntry | undefined,
): void {
  const { streams } = (store as unknown as Internals).quick.jsm;
  const real = streams.getMessage.bind(streams);
  const subject = subjectOf(store, channel, agent);
  streams.getMessage = (stream, query) => {
    const answer =
      (query as { last_by_subj?: string }).last_by_subj === subject ? lag() : undefined;
    return answer === undefined ? real(stream, query) : Promise.resolve(answer);
  };
}

/**
 * Each cursor write of the store (any channel, any agent) goes through `around`, which sends
 * it (`send`), or not, and answers as it likes. Undone by the returned function.
 */
export function aroundCursorWrites(
  store: NatsStore,
  around: (send: () => Promise<PubAck>) => Promise<PubAck>,
): () => void {
  const internals = store as unknown as Internals;
  const { js } = internals;
  const real = js.publish.bind(js);
  const prefix = `$KV.${store.bucketName}.cursor.`;
  js.publish = (subject: string, payload?: Payload, options?: Partial<JetStreamPublishOptions>) =>
    subject.startsWith(prefix)
      ? around(() => real(subject, payload, options))
      : real(subject, payload, options);
  return () => {
    js.publish = real;
  };
}
