import { isAgentChatError } from "../core/errors.js";
import { isRelevant, type Message, parseTo } from "../core/message.js";
import { identity } from "../core/names.js";
import { owedBy } from "../features/delivery/index.js";
import { policyOf } from "../features/governance/index.js";
import { wholeChannel } from "../store/paging.js";
import { flattenThread } from "../store/shared/index.js";
import type { ChannelInfo, PresenceInfo, Store } from "../store/types.js";
import {
  type ChannelView,
  MESSAGE_PAGE_DEFAULT,
  type MemberView,
  type MessagesPage,
  type MessageView,
  type PanelView,
  type PathLeaseView,
  type ReplyTarget,
  type StateView,
  type TaskView,
  type ThreadPage,
} from "./api-types.js";
import type { PanelProvider } from "./panels.js";

export type LiveEvent =
  | { type: "state"; state: StateView }
  | { type: "message"; channel: string; message: MessageView };

/** How often the channel list, cursors and tasks are looked at again (messages are pushed). */
const REFRESH_MS = 1000;

interface ChannelCache {
  messages: Map<number, Message>;
  /**
   * The channel's archived messages (`agent-chat archive`), below its first hot one when they
   * were read: read the first time a page reaches back past the hot messages.
   */
  archived?: { below: number; messages: Message[] };
}

/**
 * What the viewer shows, kept current: each channel's messages (read once, then extended by
 * `store.watch`, which sees files whoever wrote them), and a summary of channels, members,
 * cursors and tasks that is rebuilt every second and sent to the pages only when it changed.
 */
export class ViewerModel {
  private readonly caches = new Map<string, ChannelCache>();
  private readonly listeners = new Set<(event: LiveEvent) => void>();
  private readonly stop = new AbortController();
  private watchAbort: AbortController | undefined;
  private watched = "";
  private lastState: StateView | undefined;
  private lastStateJson = "";
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private watchLoop: Promise<void> = Promise.resolve();
  private readonly panelWatches = new Map<string, () => void>();

  constructor(
    private readonly store: Store,
    private readonly panelProviders: readonly PanelProvider[],
    /** The viewer's own poster (`view --as`), said in the state for the page. */
    private readonly as?: string,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => this.requestRefresh(), REFRESH_MS);
  }

  async close(): Promise<void> {
    this.stop.abort();
    clearInterval(this.timer);
    this.watchAbort?.abort();
    for (const stop of this.panelWatches.values()) stop();
    this.panelWatches.clear();
    await this.watchLoop.catch(() => {});
    await this.refreshing?.catch(() => {});
    this.listeners.clear();
  }

  subscribe(listener: (event: LiveEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async state(): Promise<StateView> {
    if (!this.lastState) await this.refresh();
    return this.lastState!;
  }

  /**
   * One page of a channel: the newest `limit` messages below `before` (the newest of the
   * channel without it). The page asks for more as the reader scrolls back, into the archived
   * messages once past the hot ones; counts in `state()` always cover the whole channel.
   */
  async messages(
    channel: string,
    { before, limit = MESSAGE_PAGE_DEFAULT }: { before?: number; limit?: number } = {},
  ): Promise<MessagesPage> {
    await this.store.roster(channel); // CHANNEL_NOT_FOUND for a channel that does not exist
    const cache = await this.cache(channel);
    const hot = sorted(cache);
    const firstHot = hot[0]?.seq ?? Number.POSITIVE_INFINITY;
    const hotEnd = before === undefined ? hot.length : firstIndexAtOrAbove(hot, before);
    const old =
      hotEnd < limit && firstHot > 1
        ? await this.archivedBelow(channel, cache, firstHot)
        : cache.archived?.below === firstHot
          ? cache.archived.messages
          : undefined;
    const all = old ? old.concat(hot) : hot;
    const end = before === undefined ? all.length : firstIndexAtOrAbove(all, before);
    const start = Math.max(0, end - limit);
    // Until the archive is read, the numbers below the first hot message stand for archived
    // messages (numbering is gapless); reading it makes the count exact.
    const unread = old ? 0 : firstHot - 1;
    const page = all.slice(start, end);
    return {
      channel,
      messages: page.map((m) => messageView(m, m.seq < firstHot)),
      hasEarlier: start > 0 || unread > 0,
      earlierCount: start + unread,
      total: all.length + unread,
      replyTargets: this.replyTargets(cache, page),
    };
  }

  /** The thread of message `seq`, flat in reading order with depths (archived ones included). */
  async thread(channel: string, seq: number): Promise<ThreadPage> {
    const tree = await this.store.thread(channel, seq, { archived: true });
    return {
      channel,
      seq,
      messages: flattenThread(tree).map(({ message, depth, archived }) => ({
        depth,
        message: messageView(message, archived === true),
      })),
    };
  }

  private async archivedBelow(
    channel: string,
    cache: ChannelCache,
    firstHot: number,
  ): Promise<Message[]> {
    if (cache.archived?.below !== firstHot) {
      const all = await wholeChannel(this.store, channel, { archived: true });
      cache.archived = { below: firstHot, messages: all.filter((m) => m.seq < firstHot) };
    }
    return cache.archived.messages;
  }

  /** Who wrote what a message of the page replies to, when that message is not on the page. */
  private replyTargets(cache: ChannelCache, page: Message[]): ReplyTarget[] {
    const onPage = new Set(page.map((m) => m.seq));
    const out: ReplyTarget[] = [];
    for (const m of page) {
      if (m.replyTo === undefined || onPage.has(m.replyTo)) continue;
      const target = cache.messages.get(m.replyTo);
      if (target && !out.some((t) => t.seq === target.seq)) {
        out.push({ seq: target.seq, from: target.from, title: target.title });
      }
    }
    return out;
  }

  /** A post made through the page shows at once, before the watch reports it. */
  noteMessage(message: Message): void {
    this.add(message.channel, message);
  }

  private emit(event: LiveEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // One broken connection must not stop the others.
      }
    }
  }

  private add(channel: string, message: Message): void {
    const cache = this.caches.get(channel);
    if (!cache || cache.messages.has(message.seq)) return;
    cache.messages.set(message.seq, message);
    this.emit({ type: "message", channel, message: messageView(message) });
    this.requestRefresh();
  }

  private async cache(channel: string): Promise<ChannelCache> {
    let cache = this.caches.get(channel);
    if (!cache) {
      cache = { messages: new Map() };
      this.caches.set(channel, cache);
      await this.load(channel, cache);
    }
    return cache;
  }

  private async load(channel: string, cache: ChannelCache): Promise<void> {
    const all = await wholeChannel(this.store, channel);
    const fresh = all.filter((m) => !cache.messages.has(m.seq));
    const replaced = cache.messages.size > 0;
    for (const m of all) cache.messages.set(m.seq, m);
    // Files deleted by hand disappear from the view too.
    // (Only up to what this read covered: the watch may have added newer ones meanwhile.)
    const present = new Set(all.map((m) => m.seq));
    const covered = all.at(-1)?.seq ?? 0;
    for (const seq of cache.messages.keys()) {
      if (seq <= covered && !present.has(seq)) cache.messages.delete(seq);
    }
    if (replaced) {
      for (const m of fresh) {
        this.emit({ type: "message", channel, message: messageView(m) });
      }
    }
  }

  private requestRefresh(): void {
    if (this.stop.signal.aborted) return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = this.refresh()
      .catch(() => {
        // A channel removed mid-way or a transient read error: the next tick tries again.
      })
      .finally(() => {
        this.refreshing = undefined;
        if (this.refreshAgain) {
          this.refreshAgain = false;
          this.requestRefresh();
        }
      });
  }

  private async refresh(): Promise<void> {
    const infos = await this.store.channels();
    this.rewatch(infos);
    const channels: ChannelView[] = [];
    for (const info of infos) {
      try {
        channels.push(await this.channelView(info));
      } catch (err) {
        if (isAgentChatError(err, "CHANNEL_NOT_FOUND")) continue; // removed meanwhile
        // One channel whose files cannot be read (a hand-edited task, an odd file) must not
        // take the whole list down: it is listed with what the store told about it, and
        // opening it shows the error.
        channels.push(brokenChannelView(info));
      }
    }
    const state: StateView = { root: this.store.location, channels };
    if (this.as !== undefined) state.as = this.as;
    const json = JSON.stringify(state);
    this.lastState = state;
    if (json !== this.lastStateJson) {
      this.lastStateJson = json;
      this.emit({ type: "state", state });
    }
  }

  /** The channel's live path leases; none when they cannot be read (the rest still shows). */
  private async liveLeases(channel: string): Promise<PathLeaseView[]> {
    const all = await this.store.pathLeases(channel).catch(() => []);
    return all
      .filter((l) => l.state === "live")
      .map(({ token, pattern, holder, exclusive, expiresAt, reason }) =>
        reason === undefined
          ? { token, pattern, holder, exclusive, expiresAt }
          : { token, pattern, holder, exclusive, expiresAt, reason },
      );
  }

  private async channelView(info: ChannelInfo): Promise<ChannelView> {
    const cache = await this.cache(info.name);
    const newest = maxSeq(cache);
    // A file still being written when the watch looked is waited for by the store's watch
    // itself; only a channel that shrank (messages deleted by hand) needs reading again.
    if (info.lastSeq < newest) await this.load(info.name, cache);
    const messages = sorted(cache);
    const members = await this.members(info, messages);
    const tasks: TaskView[] = (await this.store.tasks(info.name)).map((t) => {
      const view: TaskView = { id: t.id, state: t.state, title: t.title };
      if (t.holder !== undefined) view.holder = t.holder;
      if (t.token !== undefined) view.token = t.token;
      if (t.expiresAt !== undefined && t.state === "claimed") view.expiresAt = t.expiresAt;
      return view;
    });
    const leases = await this.liveLeases(info.name);
    const { signatures } = policyOf(await this.store.roster(info.name));
    const panels: PanelView[] = [];
    for (const provider of this.panelProviders) {
      try {
        const panel = await provider.load({ store: this.store, channel: info.name, messages });
        if (panel) panels.push(panel);
        this.watchPanel(provider, info.name, panel !== undefined);
      } catch {
        // A panel whose data cannot be read right now (a workspace mid-change, a hand-edited
        // _meta.json) is left out; the rest of the channel still shows, and the next refresh
        // tries again.
      }
    }
    return {
      name: info.name,
      topic: info.topic,
      created: info.created,
      open: info.members.length === 0,
      members,
      messageCount: messages.length,
      lastSeq: Math.max(info.lastSeq, maxSeq(cache)),
      leases,
      tasks,
      panels,
      signatures,
    };
  }

  /** Keeps a provider's own watch running while its panel is shown, and only then. */
  private watchPanel(provider: PanelProvider, channel: string, shown: boolean): void {
    if (!provider.watch || this.stop.signal.aborted) return;
    const key = `${provider.id}\n${channel}`;
    const running = this.panelWatches.get(key);
    if (shown && !running) {
      const stop = provider.watch(this.store, channel, () => this.requestRefresh());
      if (stop) this.panelWatches.set(key, stop);
    } else if (!shown && running) {
      running();
      this.panelWatches.delete(key);
    }
  }

  /** Declared members; in an open channel, everyone seen sending or addressed by name. */
  private async members(info: ChannelInfo, messages: Message[]): Promise<MemberView[]> {
    const names = new Map<string, { name: string; declared: boolean }>();
    for (const name of info.members) names.set(identity(name), { name, declared: true });
    if (info.members.length === 0) {
      for (const m of messages) {
        const candidates = [m.from, ...parseTo(m.to).names];
        for (const name of candidates) {
          const id = identity(name);
          if (!names.has(id)) names.set(id, { name, declared: false });
        }
      }
    }
    const presence = await this.presence();
    const out: MemberView[] = [];
    for (const { name, declared } of names.values()) {
      const cursor = await this.cursorOf(info.name, name);
      const unread = messages.filter((m) => m.seq > cursor && isRelevant(m, name)).length;
      const p = presence.get(identity(name));
      out.push({
        name,
        declared,
        cursor,
        unread,
        presence: p?.state ?? "never-seen",
        owes: owedBy(messages, name),
      });
    }
    return out;
  }

  private async cursorOf(channel: string, name: string): Promise<number> {
    try {
      return await this.store.cursor(channel, name);
    } catch {
      // A name the store cannot hold a cursor for (not a valid agent name) has read nothing.
      return 0;
    }
  }

  /**
   * Everyone's presence (the records alone: owed answers are counted here from the messages
   * already in memory, not by a scan of each channel every second); none when unreadable now.
   */
  private async presence(): Promise<Map<string, PresenceInfo>> {
    try {
      return new Map((await this.store.who()).map((p) => [identity(p.agent), p]));
    } catch {
      return new Map();
    }
  }

  /** Watches every channel; when channels come or go, starts again from where it was. */
  private rewatch(infos: ChannelInfo[]): void {
    const key = infos.map((i) => i.name).join("\n");
    if (key === this.watched || this.stop.signal.aborted) return;
    this.watched = key;
    this.watchAbort?.abort();
    const abort = new AbortController();
    this.watchAbort = abort;
    const after: Record<string, number> = {};
    for (const info of infos) {
      const cache = this.caches.get(info.name);
      after[info.name] = cache ? maxSeq(cache) : info.lastSeq;
    }
    const channels = infos.map((i) => i.name);
    const previous = this.watchLoop;
    this.watchLoop = previous.then(async () => {
      if (channels.length === 0 || abort.signal.aborted) return;
      try {
        for await (const message of this.store.watch(channels, {
          signal: abort.signal,
          after,
        })) {
          this.add(message.channel, message);
        }
      } catch {
        // A watched channel was removed: the next refresh sees a new list and watches again.
        if (!abort.signal.aborted) this.watched = "";
      }
    });
  }
}

function brokenChannelView(info: ChannelInfo): ChannelView {
  return {
    name: info.name,
    topic: info.topic,
    created: info.created,
    open: info.members.length === 0,
    members: [],
    messageCount: 0,
    lastSeq: info.lastSeq,
    tasks: [],
    leases: [],
    panels: [],
    signatures: "off",
  };
}

function sorted(cache: ChannelCache): Message[] {
  return [...cache.messages.values()].sort((a, b) => a.seq - b.seq);
}

/** Index of the first message whose seq is `seq` or more (`messages` sorted by seq). */
function firstIndexAtOrAbove(messages: Message[], seq: number): number {
  let low = 0;
  let high = messages.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (messages[mid]!.seq < seq) low = mid + 1;
    else high = mid;
  }
  return low;
}

function maxSeq(cache: ChannelCache): number {
  let max = 0;
  for (const seq of cache.messages.keys()) if (seq > max) max = seq;
  return max;
}

export function messageView(m: Message, archived = false): MessageView {
  const view: MessageView = {
    seq: m.seq,
    from: m.from,
    to: m.to,
    ts: m.ts,
    status: m.status,
    title: m.title,
    body: m.body,
    file: m.file,
    extra: m.extra,
  };
  if (m.replyTo !== undefined) view.replyTo = m.replyTo;
  if (m.trust !== undefined) view.trust = m.trust;
  if (m.trustNote !== undefined) view.trustNote = m.trustNote;
  if (archived) view.archived = true;
  return view;
}
