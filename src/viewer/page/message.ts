import type { MessageView } from "../api-types.js";
import { h, renderBlocks } from "./dom.js";
import { parseMarkdown } from "./markdown.js";
import { messageHref } from "./route.js";
import { formatTime } from "./time.js";

/** Sender and title of a message, for the link of a reply to it. */
export interface Summary {
  from: string;
  title: string;
}

export interface MessageContext {
  channel: string;
  /** What `m.replyTo` is, when it is known. */
  replied: Summary | undefined;
  onReply(m: MessageView): void;
}

/** One message of the list, `#m-<seq>`: header with its route, reply link, title, markdown body. */
export function messageNode(m: MessageView, context: MessageContext): HTMLElement {
  const { channel, replied } = context;
  return h(
    "article",
    { class: "message", id: `m-${m.seq}`, "data-seq": m.seq },
    headerNode(m, context),
    m.replyTo !== undefined
      ? h(
          "a",
          { class: "reply-link", href: messageHref(channel, m.replyTo) },
          `↪ in reply to #${m.replyTo}`,
          replied ? ` · ${replied.from}: ${replied.title}` : "",
        )
      : null,
    h("h3", { class: "title" }, m.title),
    h("div", { class: "body" }, renderBlocks(parseMarkdown(m.body))),
  );
}

/** `#seq from → to status time [Reply]`. */
function headerNode(m: MessageView, context: MessageContext): HTMLElement {
  const reply = h("button", { type: "button", class: "reply-button" }, "Reply");
  reply.addEventListener("click", () => context.onReply(m));
  return h(
    "header",
    {},
    h("a", { class: "seq", href: messageHref(context.channel, m.seq), title: m.file }, `#${m.seq}`),
    h(
      "span",
      { class: "route" },
      h("span", { class: "from" }, m.from),
      h("span", { class: "arrow", "aria-label": "to" }, " → "),
      h("span", { class: "to" }, recipients(m.to)),
    ),
    h("span", { class: "badge status", "data-status": m.status.toLowerCase() }, m.status),
    h("time", { datetime: m.ts, title: m.ts }, formatTime(m.ts)),
    reply,
  );
}

/** The `to` field as a reader says it: "everyone" for a broadcast, names with a space. */
function recipients(to: string): string {
  if (to.trim() === "" || /^(all|\*|\[\])$/i.test(to.trim())) return "everyone";
  return to
    .split(",")
    .map((name) => name.trim())
    .join(", ");
}
