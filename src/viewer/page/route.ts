/** The page's address: #/<channel> or #/<channel>/<seq>, so a message can be linked to. */

export interface Route {
  channel?: string;
  seq?: number;
}

export function route(): Route {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const out: Route = {};
  if (parts[0]) out.channel = decodeURIComponent(parts[0]);
  if (parts[1] && /^\d+$/.test(parts[1])) out.seq = Number(parts[1]);
  return out;
}

export function channelHref(channel: string): string {
  return `#/${encodeURIComponent(channel)}`;
}

export function messageHref(channel: string, seq: number): string {
  return `${channelHref(channel)}/${seq}`;
}
