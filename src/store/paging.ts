import type { Message } from "../core/message.js";
import type { Store } from "./types.js";

/**
 * Messages per page: small enough that a page of bodies near the 1 MiB default stays well below
 * what the daemon's client takes in one answer (256 MiB), large enough that a channel of
 * thousands of messages is a handful of requests.
 */
export const PAGE_SIZE = 200;

export interface WholeChannelOptions {
  /** Only messages numbered above this one (default: from the first). */
  after?: number;
  /**
   * Only messages numbered up to this one (default: to the last). With `after`, the first page
   * is no larger than the range: a caller that knows a few messages are new reads a few.
   */
  upTo?: number;
  /** Archived messages too, before the hot ones (`agent-chat archive`). */
  archived?: boolean;
}

/**
 * Every message of a channel (or every one after `after`), oldest first; moves no cursor. Read
 * page by page, newest first, each page the one before the last: no caller asks any store,
 * through the daemon least of all, for "everything" with one unbounded count.
 */
export async function wholeChannel(
  store: Store,
  channel: string,
  options: WholeChannelOptions = {},
): Promise<Message[]> {
  const after = options.after ?? 0;
  const pages: Message[][] = [];
  let before = options.upTo === undefined ? undefined : options.upTo + 1;
  let size =
    options.upTo === undefined ? PAGE_SIZE : Math.min(PAGE_SIZE, Math.max(1, options.upTo - after));
  for (;;) {
    const page = await store.peek(channel, size, {
      ...(options.archived ? { archived: true } : {}),
      ...(before === undefined ? {} : { before }),
    });
    const wanted = page.filter((m) => m.seq > after);
    pages.unshift(wanted);
    // A short page is the channel's first; a page reaching `after` is as far as asked.
    if (page.length < size || wanted.length < page.length) break;
    before = page[0]!.seq;
    size = PAGE_SIZE;
  }
  return pages.flat();
}
