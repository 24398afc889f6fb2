/**
 * Where the reader is in the message list. The list scrolls on a computer; on a phone the window
 * does, so each move is made on both.
 */

export function isPhone(): boolean {
  return window.matchMedia("(max-width: 760px)").matches;
}

/** Whether the reader is at the newest message (so a new one should scroll into view). */
export function atEnd(list: HTMLElement): boolean {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 80 || isPhone();
}

export function scrollToEnd(list: HTMLElement): void {
  list.scrollTop = list.scrollHeight;
  if (isPhone()) list.lastElementChild?.scrollIntoView({ block: "end" });
}

/** Scrolls message `seq` to the middle of the screen and highlights it. */
export function jumpTo(seq: number): void {
  const el = document.getElementById(`m-${seq}`);
  if (!el) return;
  el.scrollIntoView({ block: "center" });
  el.classList.remove("flash");
  void el.offsetWidth; // restart the highlight animation
  el.classList.add("flash");
}

/**
 * Runs a change to the message list and scrolls so that the message on screen before it stays
 * at the same place.
 */
export function keepingPlace(list: HTMLElement, change: () => void): void {
  const anchor = firstVisibleMessage(list);
  const before = anchor?.getBoundingClientRect().top;
  change();
  if (!anchor || before === undefined || !anchor.isConnected) return;
  const shift = anchor.getBoundingClientRect().top - before;
  if (shift !== 0) list.scrollTop += shift;
  const left = anchor.getBoundingClientRect().top - before;
  if (Math.abs(left) >= 1) window.scrollBy(0, left);
}

/** The first message at least partly on screen (the one a reader is looking at). */
function firstVisibleMessage(list: HTMLElement): HTMLElement | undefined {
  const top = Math.max(list.getBoundingClientRect().top, 0);
  const items = list.querySelectorAll<HTMLElement>("article.message");
  let low = 0;
  let high = items.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (items[mid]!.getBoundingClientRect().bottom <= top) low = mid + 1;
    else high = mid;
  }
  return items[low];
}
