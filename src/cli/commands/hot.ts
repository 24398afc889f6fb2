import { basename, join } from "node:path";
import { AgentChatError } from "../../core/errors.js";
import { type Message, parseTo } from "../../core/message.js";
import { isMember } from "../../core/meta.js";
import { safeLine, shownSender } from "../../core/safe-text.js";
import { isUrlRoot } from "../../store/roots.js";
import {
  type ChannelInfo,
  DEFAULT_WAIT_TIMEOUT_MS,
  DELIVERY_STATES,
  type DeliveryState,
  type Receipts,
  SKEW_GRACE_MS,
  type Store,
  type TaskInfo,
  type WaitResult,
} from "../../store/types.js";
import { readBody } from "../body.js";
import {
  type CliContext,
  formatDuration,
  parsePositiveInt,
  parseSeconds,
  parseTtl,
  splitList,
  UsageError,
} from "../context.js";
import { exitCodeFor } from "../exit-codes.js";
import type { HotCommand } from "../hot-line.js";
import { formatMessageHuman, messagesJson, messagesJsonNow } from "../output.js";
import { oneOf } from "../usage.js";

/**
 * The actions of the commands agents run all the time, shared by their commander definitions
 * (commands/core.ts) and the lean entry (hot-entry.ts). This file must not import commander or
 * anything heavy: it is bundled into `dist/hot.cjs`.
 */
export type HotOptions = Record<string, string | boolean | undefined>;

const text = (value: string | boolean | undefined): string | undefined =>
  typeof value === "string" ? value : undefined;

export const HOT_ACTIONS: Record<
  HotCommand,
  (ctx: CliContext, operands: string[], opts: HotOptions) => Promise<void>
> = {
  async post(ctx, [channel], opts) {
    const from = ctx.agent(text(opts.from), "--from");
    // Checked before anything is posted: a bad state or timeout leaves the channel as it was.
    const waitFor = deliveryGoal(opts);
    const body = await readBody(
      { body: text(opts.body), bodyFile: text(opts.bodyFile) },
      ctx.maxBodyBytes,
      opts.title !== undefined,
    );
    const store = await ctx.openFor(from);
    const input: Parameters<typeof store.post>[1] = { from, body, status: text(opts.status)! };
    if (opts.title !== undefined) input.title = text(opts.title)!;
    if (opts.to !== undefined) input.to = text(opts.to)!;
    if (opts.reply !== undefined) input.replyTo = parsePositiveInt(text(opts.reply)!, "--reply");
    const result = await store.post(channel!, input);
    if (opts.to !== undefined) await warnNonMembers(ctx, store, channel!, text(opts.to)!);
    const path = locate(store.location, channel!, result.file);
    // chat.py's line (`posted #3 -> review/0003-….md`, relative to the root, a NATS root's too),
    // which scripts written for it parse; `--json` has the whole path.
    const line = `posted #${result.seq} -> ${channel}/${result.file}\n`;
    if (!waitFor) {
      if (ctx.json) return ctx.printJson({ ...result, path });
      return ctx.out(line);
    }
    if (!ctx.json) ctx.out(line);
    let receipts: Receipts;
    try {
      receipts = await store.waitFor(channel!, result.seq, {
        ...waitFor,
        signal: ctx.abort.signal,
      });
    } catch (err) {
      if (!ctx.json || !(err instanceof AgentChatError)) throw err;
      // The post is made: a script told only of the timeout would post it again.
      const now = await store.receipts(channel!, result.seq).catch(() => undefined);
      ctx.printJson({
        ...result,
        path,
        receipts: now,
        error: { code: err.code, message: err.message },
      });
      ctx.err(`agent-chat: ${err.message}\n`);
      ctx.exitCode = exitCodeFor(err.code);
      return;
    }
    if (ctx.json) return ctx.printJson({ ...result, path, receipts });
    const who = receipts.addressees.map((r) => r.agent).join(", ") || "nobody (no addressee)";
    ctx.out(`${waitFor.state} by ${who}\n`);
  },

  async read(ctx, [channel], opts) {
    if (opts.thread !== undefined) return readThread(ctx, channel!, text(opts.thread)!);
    const as = ctx.agent(text(opts.as));
    // The reader's key, when here, signs its read receipt (what proves `read` under require).
    const store = await ctx.openFor(as);
    const result = await store.read(channel!, {
      as,
      all: opts.all === true,
      everyone: opts.all === true,
      peek: opts.peek === true,
    });
    for (const w of result.warnings) ctx.warn(`${channel}: ${w}`);
    if (ctx.json) {
      return ctx.printJson({
        channel,
        cursor: result.cursor,
        messages: await messagesJson(result.messages),
        warnings: result.warnings,
      });
    }
    // chat.py's line, on stdout as its own, which scripts written for it look for.
    if (result.messages.length === 0) {
      return ctx.out(`(no new messages for ${as} in '${channel}'; cursor at #${result.cursor})\n`);
    }
    printMessages(ctx, result.messages, "");
  },

  async wait(ctx, [channels], opts) {
    const as = ctx.agent(text(opts.as));
    const list = splitList(channels);
    if (list.length === 0) throw new UsageError("name at least one channel");
    const store = await ctx.openFor(as);
    // Told while parked (a file passed over), and kept for --json's answer.
    const early: string[] = [];
    const timeoutMs = parseSeconds(text(opts.timeout)!, "--timeout");
    // A person at a terminal sees why nothing happens; a pipe (an agent, a script) gets nothing.
    if (process.stderr.isTTY) {
      const limit = `up to ${formatDuration(timeoutMs)}`;
      ctx.err(
        `agent-chat: waiting for a message for ${as} in ${list.join(", ")} (${limit}; Ctrl-C stops)\n`,
      );
    }
    // The answer is printed as soon as the store hands it over: on a folder before the cursor
    // is saved, the receipts and presence after it (at least once: docs/guarantees.md).
    const answer = answerPrinter(ctx, early);
    const result = await store.wait(list, {
      as,
      timeoutMs,
      intervalMs: Math.max(10, parseSeconds(text(opts.interval)!, "--interval")),
      signal: ctx.abort.signal,
      onWarning: (w) => {
        early.push(w);
        ctx.warn(w);
      },
      onAnswer: (found) => answer(found),
    });
    if (!answer.printed) answer(result, await messagesJson(result.messages));
  },

  async peek(ctx, [channel], opts) {
    const store = await ctx.open();
    // chat.py's `peek -n 0` shows nothing (and still requires the channel).
    const count = text(opts.count) === "0" ? 0 : parsePositiveInt(text(opts.count)!, "-n");
    if (count === 0) {
      await store.roster(channel!);
      if (ctx.json) ctx.printJson({ channel, messages: [] });
      return;
    }
    const messages = await store.peek(channel!, count, { archived: opts.archived === true });
    if (ctx.json) return ctx.printJson({ channel, messages: await messagesJson(messages) });
    printMessages(ctx, messages, "(no messages)");
  },

  async channels(ctx) {
    const store = await ctx.open();
    const warnings: string[] = [];
    const list = await store.channels({ onWarning: (w) => warnings.push(w) });
    if (ctx.json) return ctx.printJson({ root: store.location, channels: list, warnings });
    for (const warning of warnings) ctx.warn(warning);
    if (list.length === 0) {
      ctx.err(`no channels in ${store.location} (create one with: agent-chat init NAME)\n`);
      return;
    }
    ctx.out(await channelsTable(store, list));
  },

  async tasks(ctx, [channel]) {
    const warnings: string[] = [];
    const list = await (await ctx.open()).tasks(channel!, { onWarning: (w) => warnings.push(w) });
    for (const t of list) if (t.warning !== undefined) warnings.push(t.warning);
    for (const w of warnings) ctx.err(`agent-chat: ${w}\n`);
    if (ctx.json)
      return ctx.printJson({ channel, tasks: list, ...(warnings.length ? { warnings } : {}) });
    if (list.length === 0) ctx.err(`no tasks in ${channel}\n`);
    for (const t of list) ctx.out(`${formatTask(t)}\n`);
  },

  async claim(ctx, [channel, task], opts) {
    const as = ctx.agent(text(opts.as));
    const ttl = text(opts.ttl);
    const options = ttl === undefined ? {} : { ttlMs: parseTtl(ttl) };
    const info = await (await ctx.open()).claim(channel!, task!, as, options);
    if (ctx.json) return ctx.printJson(info);
    // A chat.py 0.7 task record has no line in chat.py's `claim` (its `task claim` has one).
    if (info.structured) {
      return ctx.out(
        `claimed ${taskName(info)} in ${channel} as ${info.holder} (${leaseText(info)})\n`,
      );
    }
    // chat.py's line on stdout (scripts written for it parse it), our lease beside it on stderr.
    ctx.out(`claimed ${task} -> ${basename(info.file)}\n`);
    ctx.err(`${taskName(info)} in ${channel}: ${info.holder}'s, ${leaseText(info)}\n`);
  },
};

/**
 * Prints a wait's answer once, however often it is handed over (first by `onAnswer`, then as the
 * wait's result). Under --json a body that may carry a command waits for the slash parser: it is
 * printed from the result, with `messages` made by {@link messagesJson}.
 */
function answerPrinter(ctx: CliContext, early: readonly string[]) {
  const answer = (result: WaitResult, messages = messagesJsonNow(result.messages)): void => {
    if (answer.printed || (ctx.json && !messages)) return;
    answer.printed = true;
    for (const w of result.warnings) ctx.warn(w);
    if (ctx.json) {
      ctx.printJson({
        cursors: result.cursors,
        messages,
        warnings: [...early, ...result.warnings],
      });
    } else printMessages(ctx, result.messages, "");
  };
  answer.printed = false;
  return answer;
}

/** `--wait-for STATE [--timeout 30s]`, refused (exit 64) before anything is posted. */
function deliveryGoal(opts: HotOptions): { state: DeliveryState; timeoutMs: number } | undefined {
  const timeout = text(opts.timeout);
  if (text(opts.waitFor) === undefined) {
    if (timeout !== undefined) throw new UsageError("--timeout goes with --wait-for");
    return undefined;
  }
  const state = oneOf(text(opts.waitFor)!, DELIVERY_STATES, "--wait-for");
  return {
    state,
    timeoutMs: timeout === undefined ? DEFAULT_WAIT_TIMEOUT_MS : parseTtl(timeout, "--timeout"),
  };
}

/** `read --thread N`: the thread's messages in the reference's form, in seq order. */
async function readThread(ctx: CliContext, channel: string, seq: string): Promise<void> {
  const store = await ctx.open();
  const tree = await store.thread(channel, parsePositiveInt(seq, "--thread"));
  const messages: Message[] = [];
  const stack = [tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    messages.push(node.message);
    stack.push(...node.replies);
  }
  messages.sort((a, b) => a.seq - b.seq);
  if (ctx.json)
    return ctx.printJson({
      channel,
      thread: tree.message.seq,
      messages: await messagesJson(messages),
    });
  printMessages(ctx, messages, "");
}

function printMessages(ctx: CliContext, messages: Message[], empty: string): void {
  if (messages.length === 0 && empty) ctx.err(`${empty}\n`);
  for (const message of messages) ctx.out(formatMessageHuman(message));
}

/**
 * `task-1<TAB>claimed by bob<TAB>title`, as before leases, then the lease in a fourth column:
 * a script that cuts the first three keeps working.
 */
function formatTask(t: TaskInfo): string {
  const line = `${taskName(t)}\t${stateText(t)}\t${t.title}`;
  return t.state === "open" ? line : `${line}\t${leaseText(t)}`;
}

/** `task-12` (our marker, `task-12.md`), or `tasks/T1` (chat.py 0.7's `tasks/T1.json`). */
export function taskName(t: TaskInfo): string {
  return t.structured ? `tasks/${t.id}` : `task-${t.id}`;
}

export function stateText(t: TaskInfo): string {
  const status = t.structured?.status;
  if (status === "blocked" || status === "cancelled") return status;
  if (t.state === "open") return "open";
  if (t.state === "expired") return `expired, held by ${t.holder}`;
  return t.holder === undefined ? t.state : `${t.state} by ${t.holder}`;
}

/**
 * `token 3, 29m 59s left`; `no lease (claimed by chat.py)`; a done task's note. A claimed task
 * past its lease's end is still its holder's for the clock-skew grace: said so, for the claim
 * that others see refused meanwhile.
 */
export function leaseText(t: TaskInfo, now = Date.now()): string {
  if (t.token === undefined && (t.expiresAt === undefined || t.state === "done")) {
    if (t.structured)
      return t.state === "done" ? "no token" : "no lease (set in_progress by chat.py)";
    return "no lease: claimed by chat.py, never expires";
  }
  // A lease chat.py granted has no fencing token of ours.
  const token = t.token === undefined ? "chat.py lease, no token" : `token ${t.token}`;
  if (t.state === "done") return t.note === undefined ? token : `${token}, note: ${t.note}`;
  if (t.expiresAt === undefined) return token;
  const end = Date.parse(t.expiresAt);
  if (end >= now) return `${token}, ${formatDuration(end - now)} left`;
  if (t.state !== "claimed") return `${token}, expired ${formatDuration(now - end)} ago`;
  const claimable = formatDuration(Math.max(1000, end + SKEW_GRACE_MS - now));
  return (
    `${token}, lease ended ${formatDuration(now - end)} ago; claimable by others in ${claimable} ` +
    `(the ${SKEW_GRACE_MS / 1000} s clock-skew grace)`
  );
}

/** Where something lives, for messages: a path under a folder root, or a URL under a NATS root. */
export function locate(location: string, ...parts: string[]): string {
  return isUrlRoot(location) ? [location, ...parts].join("/") : join(location, ...parts);
}

/**
 * Addressees of a post who are not members of its closed channel: the post lands (chat.py
 * takes it too), but a misspelt or wrong name is likely, and no member reads it as theirs.
 */
async function warnNonMembers(
  ctx: CliContext,
  store: Store,
  channel: string,
  to: string,
): Promise<void> {
  const { broadcast, names } = parseTo(to);
  if (broadcast) return;
  const meta = await store.roster(channel).catch(() => undefined);
  const strangers = meta ? names.filter((name) => !isMember(meta, name)) : [];
  if (strangers.length === 0 || !meta) return;
  const are = strangers.length === 1 ? "is not a member" : "are not members";
  ctx.warn(
    `${strangers.join(", ")} ${are} of ${channel} (${meta.members.join(", ")}); posted anyway`,
  );
}

/** chat.py's width for a member list or a title in `channels`, cut to 37 and `...` beyond it. */
const CHANNELS_TEXT_WIDTH = 40;

/**
 * `channels` as chat.py prints it, which scripts written for it parse: a header, then per
 * channel its name, message count and members, and a `last: #N from: title` line (`-` when
 * empty). The count is the highest number where a backend does not know it at no cost.
 */
async function channelsTable(store: Store, list: readonly ChannelInfo[]): Promise<string> {
  const width = Math.max("CHANNEL".length, ...list.map((ch) => ch.name.length));
  let out = `${"CHANNEL".padEnd(width)}  MSGS  MEMBERS / LAST\n`;
  for (const ch of list) {
    const members = cut(safeLine(ch.members.join(", ")) || "(open)");
    const count = String(ch.messages ?? ch.lastSeq).padStart(4);
    out += `${ch.name.padEnd(width)}  ${count}  ${members}\n`;
    out += `${" ".repeat(width)}        last: ${await lastLine(store, ch)}\n`;
  }
  return out;
}

async function lastLine(store: Store, ch: ChannelInfo): Promise<string> {
  if (ch.lastSeq === 0) return "-";
  const [last] = await store.peek(ch.name, 1);
  // Both from a file anyone can write: a sender only when it is a name, a title on one line.
  return last ? `#${last.seq} ${shownSender(last.from) ?? "?"}: ${cut(safeLine(last.title))}` : "-";
}

function cut(text: string): string {
  return text.length > CHANNELS_TEXT_WIDTH ? `${text.slice(0, CHANNELS_TEXT_WIDTH - 3)}...` : text;
}
