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
  /**
   * The channel requires signatures (`signatures: require`): what is not verified is struck
   * through, as agents are not given it.
   */
  required: boolean;
  onReply(m: MessageView): void;
  /** Opens the message's thread beside the channel; given for a message in a thread. */
  onThread?: ((m: MessageView) => void) | undefined;
  /** The node's id is `<idPrefix><seq>` (default `m-`: the channel's list). */
  idPrefix?: string;
}

/** One message of the list, `#m-<seq>`: header with its route, reply link, title, markdown body. */
export function messageNode(m: MessageView, context: MessageContext): HTMLElement {
  const { channel, replied } = context;
  const held = context.required && m.trust !== "verified";
  return h(
    "article",
    {
      class: held ? "message held" : "message",
      id: `${context.idPrefix ?? "m-"}${m.seq}`,
      "data-seq": m.seq,
      "data-trust": m.trust ?? "unsigned",
    },
    headerNode(m, context),
    m.trust === "forged"
      ? h("p", { class: "trust-note", role: "note" }, `Forged: ${m.trustNote ?? "bad signature"}`)
      : null,
    held
      ? h("p", { class: "held-note" }, "Not delivered to agents: this channel requires signatures.")
      : null,
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
  const onThread = context.onThread;
  const thread = onThread
    ? h("button", { type: "button", class: "thread-button" }, "Thread")
    : null;
  thread?.addEventListener("click", () => onThread?.(m));
  return h(
    "header",
    {},
    h("a", { class: "seq", href: messageHref(context.channel, m.seq), title: m.file }, `#${m.seq}`),
    h(
      "span",
      { class: "route" },
      h("span", { class: "from" }, m.from),
      h("span", { class: "arrow", "aria-label": "to" }, " → "),
      h("span", { class: "to", title: recipients(m.to) }, recipients(m.to)),
    ),
    h("span", { class: "badge status", "data-status": m.status.toLowerCase() }, m.status),
    trustBadge(m),
    m.archived
      ? h(
          "span",
          { class: "badge archived", title: "moved to the channel's archive (agent-chat archive)" },
          "archived",
        )
      : null,
    h("time", { datetime: m.ts, title: m.ts }, formatTime(m.ts)),
    thread,
    reply,
  );
}

/** Verified, unsigned or forged (docs/signatures.md), with what it means on hover. */
function trustBadge(m: MessageView): HTMLElement {
  const trust = m.trust ?? "unsigned";
  const title =
    trust === "verified"
      ? `signed by ${m.from}'s pinned key, unchanged since`
      : trust === "forged"
        ? `FORGED: ${m.trustNote ?? "bad signature"}`
        : "not signed: nothing proves who wrote it";
  const label = trust === "verified" ? "✓ verified" : trust === "forged" ? "✗ forged" : "unsigned";
  return h("span", { class: "badge trust", "data-trust": trust, title }, label);
}

/** The `to` field as a reader says it: "everyone" for a broadcast, names with a space. */
function recipients(to: string): string {
  if (to.trim() === "" || /^(all|\*|\[\])$/i.test(to.trim())) return "everyone";
  return to
    .split(",")
    .map((name) => name.trim())
    .join(", ");
}
