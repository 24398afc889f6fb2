import type {
  ErrorView,
  MessagesPage,
  PanelAction,
  PanelActionRequest,
  PanelActionResponse,
  PostRequest,
  ThreadPage,
} from "../api-types.js";

/**
 * The viewer's JSON API (src/viewer/server.ts); a refusal rejects with the server's message.
 * Paths are relative to the page's address, whose secret prefix (`/s/<token>/`) is the credential.
 */

async function api<T>(path: string, init?: RequestInit): Promise<T> {
  // No cookie is ever needed (or set): the address carries the credential.
  const res = await fetch(path, { credentials: "omit", ...init });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const message =
      (body as ErrorView | undefined)?.error?.message ?? (text.trim() || `HTTP ${res.status}`);
    throw new Error(message);
  }
  return body as T;
}

function postJson<T>(path: string, body: unknown): Promise<T> {
  return api<T>(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

function channelPath(channel: string): string {
  return `api/channels/${encodeURIComponent(channel)}`;
}

/** A page of the channel's messages; `query` is empty (the newest page) or `?before=…&limit=…`. */
export function fetchMessages(channel: string, query = ""): Promise<MessagesPage> {
  return api<MessagesPage>(`${channelPath(channel)}/messages${query}`);
}

/** The thread message `seq` belongs to, in reading order with depths. */
export function fetchThread(channel: string, seq: number): Promise<ThreadPage> {
  return api<ThreadPage>(`${channelPath(channel)}/thread/${seq}`);
}

/** Tells the viewer that `as` was shown the channel up to `seq` (its "notified" step). */
export function postNotified(channel: string, as: string, seq: number): Promise<unknown> {
  return postJson(`${channelPath(channel)}/notified`, { as, seq });
}

export function postMessage(channel: string, request: PostRequest): Promise<unknown> {
  return postJson(`${channelPath(channel)}/messages`, request);
}

export function decidePanelItem(
  channel: string,
  panelId: string,
  itemId: string,
  action: PanelAction,
  request: PanelActionRequest,
): Promise<PanelActionResponse> {
  const item = `panels/${encodeURIComponent(panelId)}/items/${encodeURIComponent(itemId)}`;
  return postJson<PanelActionResponse>(`${channelPath(channel)}/${item}/${action}`, request);
}
