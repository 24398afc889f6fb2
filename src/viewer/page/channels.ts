import type { ChannelView } from "../api-types.js";
import { append, byId, h } from "./dom.js";
import { panelSummary } from "./panels.js";
import { channelHref } from "./route.js";
import { currentChannel, type PageState, savedName } from "./state.js";

/** The channel list (`#channels`) and the open channel's heading (`#channel-head`). */

export function renderChannels(page: PageState): void {
  const list = byId("channels");
  const channels = page.data?.channels ?? [];
  byId("root").textContent = page.data?.root ?? "";
  if (channels.length === 0) {
    list.replaceChildren(
      h("p", { class: "empty" }, "No channels yet. Create one with: agent-chat init NAME"),
    );
    return;
  }
  const me = savedName().toLowerCase();
  list.replaceChildren(...channels.map((c) => channelLink(c, c.name === page.channel, me)));
}

/** A channel in the list, with what is unread for the reader `me` (lower case). */
function channelLink(c: ChannelView, selected: boolean, me: string): HTMLElement {
  const unread = c.members.find((m) => m.name.toLowerCase() === me)?.unread ?? 0;
  return h(
    "a",
    {
      class: selected ? "channel selected" : "channel",
      href: channelHref(c.name),
      "aria-current": selected ? "page" : undefined,
      "data-channel": c.name,
    },
    h(
      "span",
      { class: "channel-line" },
      h("span", { class: "channel-name" }, `#${c.name}`),
      unread > 0
        ? h("span", { class: "badge unread", title: "unread for you" }, String(unread))
        : null,
      h("span", { class: "count", title: "messages" }, String(c.messageCount)),
    ),
    c.topic ? h("span", { class: "channel-topic" }, c.topic) : null,
  );
}

export function renderHead(page: PageState): void {
  const c = currentChannel(page);
  const head = byId("channel-head");
  if (!c) {
    head.replaceChildren(h("h1", {}, page.data ? "No channel" : "Loading…"));
    return;
  }
  head.replaceChildren();
  append(head, [
    h("h1", {}, `#${c.name}`),
    c.topic ? h("p", { class: "topic" }, c.topic) : null,
    h(
      "p",
      { class: "meta" },
      `${c.messageCount} message${c.messageCount === 1 ? "" : "s"} · `,
      c.open ? "open to everyone" : `${c.members.length} members`,
    ),
    panelSummary(c),
  ]);
}
