import type { MessageView, ThreadPage } from "../api-types.js";
import { byId, h } from "./dom.js";
import { fetchThread } from "./http.js";
import { messageNode } from "./message.js";
import { currentChannel, type PageState } from "./state.js";

/** Indentation stops growing here: a long chain of replies stays readable in a narrow column. */
const MAX_INDENT = 6;

/**
 * The thread panel beside the channel (`#thread`, in the details column while open): the root
 * of the thread a message belongs to and every reply under what it answers, archived messages
 * included (GET /api/channels/<ch>/thread/<seq>). Its messages are `#t-<seq>`, apart from the
 * channel's list.
 */
export class ThreadPanel {
  private readonly panel = byId("thread");
  /** The request last made: an answer to an earlier one, or for another channel, is dropped. */
  private asked = "";

  constructor(
    private readonly page: PageState,
    private readonly onReply: (m: MessageView) => void,
  ) {}

  async open(m: MessageView): Promise<void> {
    const channel = this.page.channel;
    if (!channel) return;
    const key = `${channel}\n${m.seq}`;
    this.asked = key;
    this.show(h("p", { class: "empty" }, "Loading…"), m.seq);
    try {
      const thread = await fetchThread(channel, m.seq);
      if (this.asked === key) this.show(this.list(thread), m.seq);
    } catch (err) {
      if (this.asked === key) this.show(h("p", { class: "error" }, (err as Error).message), m.seq);
    }
  }

  /** Closes the panel (its button, or another channel opened). */
  close(): void {
    this.asked = "";
    this.panel.hidden = true;
    this.panel.replaceChildren();
  }

  private show(content: HTMLElement, seq: number): void {
    const close = h(
      "button",
      { type: "button", class: "close-thread", "aria-label": "Close thread" },
      "×",
    );
    close.addEventListener("click", () => this.close());
    this.panel.replaceChildren(
      h("div", { class: "thread-head" }, h("h2", {}, `Thread of #${seq}`), close),
      content,
    );
    this.panel.hidden = false;
  }

  private list(thread: ThreadPage): HTMLElement {
    const required = currentChannel(this.page)?.signatures === "require";
    const nodes = thread.messages.map(({ depth, message }) => {
      const node = messageNode(message, {
        channel: thread.channel,
        replied: undefined,
        required,
        onReply: this.onReply,
        idPrefix: "t-",
      });
      node.style.setProperty("--depth", String(Math.min(depth, MAX_INDENT)));
      node.dataset.depth = String(depth);
      if (message.seq === thread.seq) node.classList.add("focus");
      return node;
    });
    return h("div", { class: "thread-messages" }, ...nodes);
  }
}
