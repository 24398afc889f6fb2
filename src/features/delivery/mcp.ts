import { isMember } from "../../core/meta.js";
import type { Store } from "../../store/types.js";

/**
 * What a session was told (the MCP footer, a hook's notice) becomes the *notified* step of the
 * messages it covered (docs/delivery.md). Remembers what it recorded, so that a footer repeated
 * on every tool call writes only when it tells of something new. Never fails its caller.
 */
export class NotifiedRecorder {
  private readonly recorded = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly agent: string,
  ) {}

  async told(upTo: ReadonlyMap<string, number>): Promise<void> {
    for (const [channel, seq] of upTo) {
      if ((this.recorded.get(channel) ?? 0) >= seq) continue;
      try {
        await this.store.notify(channel, this.agent, seq);
        this.recorded.set(channel, seq);
      } catch {
        // A courtesy of the notice: the notice itself has been given.
      }
    }
  }
}

/**
 * How many messages the agent owes an answer, across its channels: counted again only for a
 * channel whose last seq moved (an answer is a new message too).
 */
export class OwedCounter {
  private readonly memo = new Map<string, { lastSeq: number; owes: number[] }>();

  constructor(
    private readonly store: Store,
    private readonly agent: string,
  ) {}

  /** The seqs owed, by channel (only channels with some). */
  async owed(): Promise<Record<string, number[]>> {
    const out: Record<string, number[]> = {};
    for (const info of await this.store.channels()) {
      if (!isMember({ ...info, channel: info.name }, this.agent)) continue;
      let memo = this.memo.get(info.name);
      if (memo?.lastSeq !== info.lastSeq) {
        const me = (await this.store.who(info.name)).find(
          (p) => p.agent.toLowerCase() === this.agent.trim().toLowerCase(),
        );
        memo = { lastSeq: info.lastSeq, owes: me?.owes ?? [] };
        this.memo.set(info.name, memo);
      }
      if (memo.owes.length > 0) out[info.name] = memo.owes;
    }
    return out;
  }

  async total(): Promise<number> {
    return Object.values(await this.owed()).reduce((n, list) => n + list.length, 0);
  }
}

/**
 * A channel's members with their presence, and what `agent` owes there, for chat_channels:
 * `alice (waiting), bob (active), carol (never seen) · you owe #3, #5`.
 */
export async function presenceLine(store: Store, channel: string, agent: string): Promise<string> {
  const who = await store.who(channel);
  const me = agent.trim().toLowerCase();
  const members = who.map((p) => `${p.agent} (${p.state.replace("-", " ")})`).join(", ");
  const owes = who.find((p) => p.agent.toLowerCase() === me)?.owes ?? [];
  const owed =
    owes.length > 0 ? ` · you owe an answer to ${owes.map((s) => `#${s}`).join(", ")}` : "";
  return `${members || "open"}${owed}`;
}
