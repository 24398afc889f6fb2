/** A timestamp as a reader wants it: the time today, the day before that, the year if not this one. */
export function formatTime(ts: string): string {
  const date = new Date(ts);
  // Not a time: a member wrote it, so it is not shown as one (the tooltip keeps the text).
  if (Number.isNaN(date.getTime())) return "?";
  const now = new Date();
  const sameDay = date.toDateString() === now.toDateString();
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (sameDay) return time;
  const day = date.toLocaleDateString([], {
    month: "short",
    day: "numeric",
    year: date.getFullYear() === now.getFullYear() ? undefined : "numeric",
  });
  return `${day}, ${time}`;
}
