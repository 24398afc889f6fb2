import {
  MESSAGE_PAGE_DEFAULT,
  MESSAGE_PAGE_MAX,
  type MessagesPage,
  type MessageView,
} from "../api-types.js";
import { byId, h } from "./dom.js";
import { fetchMessages, postNotified } from "./http.js";
import { messageNode, type Summary } from "./message.js";
import { receiptsText } from "./receipts.js";
import { atEnd, jumpTo, keepingPlace, scrollToEnd } from "./scroll.js";
import { currentChannel, type PageState, savedName } from "./state.js";

/**
 * The open channel's messages (`#messages`): it opens on the newest page, earlier pages are
 * loaded on request or to reach a linked message, and live messages are added at their place.
 */
export class MessageList {
  /** The loaded part of the channel, oldest first: the newest page, pages shown since, live ones. */
  private messages: MessageView[] = [];
  /** Messages of the channel older than `messages[0]` that are not loaded (as of the last page). */
  private earlierCount = 0;
  /** The load of the channel's newest page, when it was opened. */
  private opening: Promise<void> = Promise.resolve();
  /** A "Show earlier" load in progress (one at a time). */
  private earlierLoad: Promise<boolean> | undefined;
  private earlierError = "";
  /** Sender and title of loaded messages and of what they reply to, for the reply links. */
  private summaries = new Map<number, Summary>();
  private readonly list = byId("messages");
  /** What the person of the From box was last said to be shown, as `channel\nname\nseq`. */
  private told = "";

  constructor(
    private readonly page: PageState,
    private readonly onReply: (m: MessageView) => void,
    private readonly onThread: (m: MessageView) => void,
  ) {}

  /** Empties the list for the channel just opened (`page.channel`) and loads its newest page. */
  open(): void {
    this.messages = [];
    this.earlierCount = 0;
    this.earlierError = "";
    this.summaries = new Map();
    // Never show the previous channel's messages under this channel's name while loading.
    this.list.replaceChildren(h("p", { class: "empty" }, "Loading…"));
    this.opening = this.loadNewest();
  }

  /** Settles when the newest page of the channel last opened is shown (or could not be). */
  opened(): Promise<void> {
    return this.opening;
  }

  scrollToEnd(): void {
    scrollToEnd(this.list);
  }

  /**
   * Loads the page before the oldest loaded message and puts it above, leaving the message the
   * reader is looking at where it is on screen. Resolves to false when nothing could be loaded.
   */
  loadEarlier(limit = MESSAGE_PAGE_DEFAULT): Promise<boolean> {
    this.earlierLoad ??= this.fetchEarlier(limit).finally(() => {
      this.earlierLoad = undefined;
    });
    return this.earlierLoad;
  }

  /** Shows message `seq`, loading earlier pages until it is there (a link to an old message). */
  async reveal(seq: number): Promise<void> {
    const channel = this.page.channel;
    while (!document.getElementById(`m-${seq}`) && this.earlierCount > 0) {
      const oldest = this.messages[0]?.seq ?? 0;
      if (oldest <= seq) break; // not in this channel (deleted, or not written yet)
      // Seqs only grow, so this many messages reach back to `seq`, plus a few above it to read.
      const wanted = Math.min(MESSAGE_PAGE_MAX, Math.max(MESSAGE_PAGE_DEFAULT, oldest - seq + 10));
      if (!(await this.loadEarlier(wanted)) || channel !== this.page.channel) return;
    }
    jumpTo(seq);
  }

  /** Adds messages that arrived live (or were missed while the stream was down) at their place. */
  add(incoming: MessageView[]): void {
    const fresh = this.unseen(incoming);
    if (fresh.length === 0) return;
    const follow = atEnd(this.list);
    this.list.querySelector(":scope > .empty")?.remove();
    keepingPlace(this.list, () => {
      for (const m of fresh) this.insert(m);
    });
    if (follow) this.scrollToEnd();
    this.tellShown();
  }

  /**
   * The viewer open as a person (the From box has a name) shows them what waits: their
   * messages up to the newest shown are "notified" for them (docs/delivery.md).
   */
  private tellShown(): void {
    const channel = this.page.channel;
    const name = savedName();
    const seq = this.messages.at(-1)?.seq ?? 0;
    const key = `${channel}\n${name}\n${seq}`;
    if (!channel || !name || seq === 0 || key === this.told) return;
    this.told = key;
    postNotified(channel, name, seq).catch(() => {
      this.told = ""; // said again with the next messages shown
    });
  }

  /** After the stream was down: fetches what was missed, or starts again if that is a lot. */
  async catchUp(): Promise<void> {
    const channel = this.page.channel;
    if (!channel) return;
    const newest = this.messages.at(-1)?.seq ?? 0;
    try {
      const res = await fetchMessages(channel, `?limit=${MESSAGE_PAGE_MAX}`);
      if (channel !== this.page.channel) return;
      this.noteSummaries(res);
      const first = res.messages[0]?.seq ?? 0;
      if (this.messages.length === 0 || (res.hasEarlier && first > newest)) {
        this.messages = res.messages.slice(-MESSAGE_PAGE_DEFAULT);
        this.earlierCount = res.earlierCount + res.messages.length - this.messages.length;
        this.render();
        this.scrollToEnd();
      } else {
        this.add(res.messages);
      }
    } catch {
      // The stream is back but the request failed: the next reconnection tries again.
    }
  }

  /** Opens the channel on its newest page (older pages are loaded on request). */
  private async loadNewest(): Promise<void> {
    const channel = this.page.channel;
    if (!channel) return;
    try {
      const res = await fetchMessages(channel);
      if (channel !== this.page.channel) return;
      this.noteSummaries(res);
      // Live messages that arrived while the page was on its way are kept.
      const shown = new Set(res.messages.map((m) => m.seq));
      const newest = res.messages.at(-1)?.seq ?? 0;
      const live = this.messages.filter((m) => !shown.has(m.seq) && m.seq > newest);
      this.messages = [...res.messages, ...live];
      this.earlierCount = res.earlierCount;
      this.render();
    } catch (err) {
      this.list.replaceChildren(h("p", { class: "empty" }, (err as Error).message));
    }
  }

  private async fetchEarlier(limit: number): Promise<boolean> {
    const channel = this.page.channel;
    const oldest = this.messages[0]?.seq;
    if (!channel || oldest === undefined || this.earlierCount === 0) return false;
    this.earlierError = "";
    this.renderEarlier(true);
    try {
      const res = await fetchMessages(channel, `?before=${oldest}&limit=${limit}`);
      if (channel !== this.page.channel) return false;
      this.prepend(res, oldest);
      return res.messages.length > 0;
    } catch (err) {
      if (channel !== this.page.channel) return false;
      this.earlierError = (err as Error).message;
      this.renderEarlier(false);
      return false;
    }
  }

  /** Puts an earlier page above message `oldest`, keeping the reader's place. */
  private prepend(res: MessagesPage, oldest: number): void {
    this.noteSummaries(res);
    const firstShown = document.getElementById(`m-${oldest}`);
    keepingPlace(this.list, () => {
      this.messages = [...res.messages, ...this.messages];
      this.earlierCount = res.earlierCount;
      const nodes = document.createDocumentFragment();
      for (const m of res.messages) nodes.appendChild(this.node(m));
      this.list.insertBefore(nodes, firstShown);
      this.renderEarlier(false);
    });
  }

  /**
   * Those of `incoming` not loaded yet. One older than the loaded part is left to its page, so
   * the list never has a hole.
   */
  private unseen(incoming: MessageView[]): MessageView[] {
    const have = new Set(this.messages.map((m) => m.seq));
    const oldest = this.messages[0]?.seq;
    const beforeLoaded = (seq: number) =>
      this.earlierCount > 0 && oldest !== undefined && seq < oldest;
    return incoming.filter((m) => !have.has(m.seq) && !beforeLoaded(m.seq));
  }

  /** Puts `m` at its place by seq, in the loaded part and on screen. */
  private insert(m: MessageView): void {
    this.summaries.set(m.seq, m);
    let at = this.messages.length;
    while (at > 0 && this.messages[at - 1]!.seq > m.seq) at -= 1;
    this.messages.splice(at, 0, m);
    const next = this.messages[at + 1];
    this.list.insertBefore(this.node(m), next ? document.getElementById(`m-${next.seq}`) : null);
  }

  private noteSummaries(res: MessagesPage): void {
    for (const t of res.replyTargets) this.summaries.set(t.seq, t);
    for (const m of res.messages) this.summaries.set(m.seq, m);
  }

  private render(): void {
    if (this.messages.length === 0) {
      this.list.replaceChildren(h("p", { class: "empty" }, "No messages yet. Say hello below."));
      return;
    }
    this.list.replaceChildren(...this.messages.map((m) => this.node(m)));
    this.renderEarlier(false);
    this.tellShown();
  }

  /** The "Show earlier messages" control at the top of the list, while older messages exist. */
  private renderEarlier(loading: boolean): void {
    const existing = document.getElementById("earlier");
    if (this.earlierCount === 0 && !this.earlierError) {
      existing?.remove();
      return;
    }
    const button = h(
      "button",
      { type: "button", id: "show-earlier", disabled: loading },
      loading ? "Loading…" : "Show earlier messages",
    );
    button.addEventListener("click", () => void this.loadEarlier());
    const count = this.earlierCount;
    const control = h(
      "div",
      { class: "earlier", id: "earlier" },
      button,
      h("span", { class: "meta" }, `${count} earlier message${count === 1 ? "" : "s"}`),
      this.earlierError ? h("span", { class: "error", role: "alert" }, this.earlierError) : null,
    );
    if (existing) existing.replaceWith(control);
    else this.list.prepend(control);
  }

  private node(m: MessageView): HTMLElement {
    const replied = m.replyTo !== undefined ? this.summaries.get(m.replyTo) : undefined;
    const node = messageNode(m, {
      channel: this.page.channel ?? "",
      replied,
      required: currentChannel(this.page)?.signatures === "require",
      onReply: this.onReply,
      // A reply, or a message replied to among those loaded, opens its thread.
      onThread:
        m.replyTo !== undefined || this.messages.some((other) => other.replyTo === m.seq)
          ? this.onThread
          : undefined,
    });
    node.append(h("p", { class: "receipts" }, this.receipts(m)));
    return node;
  }

  /** Brings every message's receipts line up to the last state (cursors move, answers come). */
  refreshReceipts(): void {
    for (const m of this.messages) {
      const line = document.querySelector(`#m-${m.seq} > .receipts`);
      const text = this.receipts(m);
      if (line && line.textContent !== text) line.textContent = text;
    }
  }

  private receipts(m: MessageView): string {
    return receiptsText(m, currentChannel(this.page), this.messages);
  }
}
