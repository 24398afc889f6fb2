import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import type { ThreadNode, ThreadOptions } from "../find-types.js";

/** What a thread needs from a backend. */
export interface ThreadSource {
  roster(channel: string): Promise<unknown>;
  /** One hot message by seq (undefined when there is none). */
  message(channel: string, seq: number): Promise<Message | undefined>;
  /** The well-formed hot messages after `after`, in seq order. */
  scan(channel: string, after: number): Promise<{ messages: Message[] }>;
  archived(channel: string): Promise<Message[]>;
}

/**
 * Replies nested deeper than this are listed flat under the message at this depth: a chain of
 * thousands of replies (or a planted one) must not overflow a stack when printed or sent as JSON.
 */
export const MAX_THREAD_DEPTH = 64;
/** A walk up `reply_to` links stops after this many: a planted chain cannot make it run on. */
const MAX_ANCESTORS = 100_000;

/**
 * The thread `seq` belongs to: up its `reply_to` links to the first message whose parent is
 * missing (or would close a cycle: the files are anyone's input), then down every reply. Replies
 * come after what they answer, so only the messages from the root on are read: a thread of
 * recent messages costs what they cost, however long the channel.
 */
export async function findThread(
  source: ThreadSource,
  channel: string,
  seq: number,
  options: ThreadOptions = {},
): Promise<ThreadNode> {
  if (!Number.isSafeInteger(seq) || seq < 1) {
    throw new AgentChatError("INVALID_ARGUMENT", `a message number is 1 or more (got ${seq})`);
  }
  await source.roster(channel);
  const archived = options.archived ? await source.archived(channel) : [];
  const old = new Map(archived.map((m) => [m.seq, m]));
  const lookup = async (n: number) => (await source.message(channel, n)) ?? old.get(n);
  const start = await lookup(seq);
  if (!start) {
    throw new AgentChatError(
      "NOT_FOUND",
      `no message ${seq} in ${channel}${options.archived ? "" : " (archived? try --archived)"}`,
    );
  }
  let root = start;
  const seen = new Set([root.seq]);
  let lowest = root.seq;
  for (let steps = 0; root.replyTo !== undefined && steps < MAX_ANCESTORS; steps++) {
    if (seen.has(root.replyTo)) break;
    const parent = await lookup(root.replyTo);
    if (!parent) break;
    seen.add(parent.seq);
    lowest = Math.min(lowest, parent.seq);
    root = parent;
  }
  // From the lowest number met on the way up: a cycle's members may come before its root.
  const hot = (await source.scan(channel, lowest - 1)).messages;
  const hotSeqs = new Set(hot.map((m) => m.seq));
  // A message hot and archived at once (a copy put back by hand) counts once: the hot one.
  const onlyArchived = archived.filter((m) => !hotSeqs.has(m.seq));
  return buildTree(root, hot.concat(onlyArchived), new Set(onlyArchived.map((m) => m.seq)));
}

/** The replies to each seq, in seq order. */
function repliesBySeq(root: Message, pool: Message[]): Map<number, Message[]> {
  const children = new Map<number, Message[]>();
  for (const m of pool.sort((a, b) => a.seq - b.seq)) {
    if (m.replyTo === undefined || m.seq === root.seq) continue;
    const list = children.get(m.replyTo);
    if (list) list.push(m);
    else children.set(m.replyTo, [m]);
  }
  return children;
}

/** The tree under `root`, each message once, replies in seq order, archived ones marked. */
function buildTree(root: Message, pool: Message[], archived: Set<number>): ThreadNode {
  const children = repliesBySeq(root, pool);
  const placed = new Set([root.seq]);
  const nodeOf = (message: Message): ThreadNode =>
    archived.has(message.seq) ? { message, replies: [], archived: true } : { message, replies: [] };
  const top = nodeOf(root);
  const stack: Array<{ node: ThreadNode; depth: number }> = [{ node: top, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth >= MAX_THREAD_DEPTH) {
      node.replies = descendants(node.message.seq, children, placed).map(nodeOf);
      continue;
    }
    for (const message of children.get(node.message.seq) ?? []) {
      if (placed.has(message.seq)) continue;
      placed.add(message.seq);
      const child = nodeOf(message);
      node.replies.push(child);
      stack.push({ node: child, depth: depth + 1 });
    }
  }
  return top;
}

/** Every message under `seq` not placed yet, in seq order. */
function descendants(
  seq: number,
  children: Map<number, Message[]>,
  placed: Set<number>,
): Message[] {
  const out: Message[] = [];
  const queue = [seq];
  while (queue.length > 0) {
    for (const message of children.get(queue.shift()!) ?? []) {
      if (placed.has(message.seq)) continue;
      placed.add(message.seq);
      out.push(message);
      queue.push(message.seq);
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** The thread's messages in reading order (each reply under its parent), with their depth. */
export function flattenThread(
  root: ThreadNode,
): Array<{ message: Message; depth: number; archived?: true }> {
  const out: Array<{ message: Message; depth: number; archived?: true }> = [];
  const stack = [{ node: root, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    out.push(
      node.archived
        ? { message: node.message, depth, archived: true }
        : { message: node.message, depth },
    );
    for (let i = node.replies.length - 1; i >= 0; i--) {
      stack.push({ node: node.replies[i]!, depth: depth + 1 });
    }
  }
  return out;
}
