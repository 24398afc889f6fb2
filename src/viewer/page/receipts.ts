import type { ChannelView, MessageView } from "../api-types.js";

/**
 * A message's receipts as the page can tell them (docs/delivery.md): its addressees (the names
 * in `to`, or for a broadcast every member but the sender), who of them has read it (their
 * cursor is past it, as the last state said) and who answered it (a loaded message of theirs
 * replies to it). "" when it has no addressee.
 */
export function receiptsText(
  m: MessageView,
  channel: ChannelView | undefined,
  loaded: readonly MessageView[],
): string {
  const members = channel?.members ?? [];
  const sender = key(m.from);
  const named = /^(|all|\*|\[\])$/i.test(m.to.trim())
    ? members.map((p) => p.name)
    : m.to.split(",").map((n) => n.trim());
  const addressees = [...new Set(named.filter((n) => n !== "" && key(n) !== sender))];
  if (addressees.length === 0) return "";
  const cursor = new Map(members.map((p) => [key(p.name), p.cursor]));
  const answered = addressees.filter((n) =>
    loaded.some((r) => r.replyTo === m.seq && key(r.from) === key(n)),
  );
  const read = addressees.filter((n) => (cursor.get(key(n)) ?? 0) >= m.seq);
  const parts: string[] = [];
  parts.push(read.length > 0 ? `read by ${read.join(", ")}` : "not read yet");
  if (answered.length > 0) parts.push(`answered by ${answered.join(", ")}`);
  const waiting = addressees.filter((n) => !read.includes(n));
  if (read.length > 0 && waiting.length > 0) parts.push(`not read by ${waiting.join(", ")}`);
  return parts.join(" · ");
}

function key(name: string): string {
  return name.trim().toLowerCase();
}
