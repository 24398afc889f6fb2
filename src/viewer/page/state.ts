import type { ChannelView, StateView } from "../api-types.js";

/**
 * What the parts of the page share. Each part (message list, panels, compose, live stream) keeps
 * the rest of its state to itself and is handed this object by main.ts.
 */
export interface PageState {
  /** The last state the server sent (channels, members, tasks, panels); undefined until the first. */
  data: StateView | undefined;
  /** The channel on screen. */
  channel: string | undefined;
}

export function currentChannel(page: PageState): ChannelView | undefined {
  return page.data?.channels.find((c) => c.name === page.channel);
}

const NAME_KEY = "agent-chat-viewer:name";

/** The name this reader last posted or decided as, kept across visits (it marks their unread). */
export function savedName(): string {
  return (localStorage.getItem(NAME_KEY) ?? "").trim();
}

export function saveName(name: string): void {
  localStorage.setItem(NAME_KEY, name);
}
