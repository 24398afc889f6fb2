import { promises as fsp, lstatSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AgentChatError, isAgentChatError, wrapIoError } from "../../core/errors.js";
import {
  formatTimestamp,
  isRelevant,
  MAX_SEQ,
  type Message,
  messageFileName,
  parseMessage,
  parseSeqText,
  serializeMessage,
} from "../../core/message.js";
import { type ChannelMeta, parseMeta, serializeMeta } from "../../core/meta.js";
import { identity, parseTaskId, validateName } from "../../core/names.js";
import {
  compareTaskIds,
  draftMeta,
  draftPost,
  draftTask,
  MAX_FRONTMATTER_BYTES,
  type PostDraft,
} from "../draft.js";
import {
  assertRealDir,
  createFileExclusive,
  ensureRealDir,
  entryKind,
  overwriteOwnFileSync,
  publishExclusiveSync,
  type RootFile,
  readOwnTextSync,
  readRootFileSync,
  readRootTextSync,
  removeFileEntry,
  removeOwnDir,
  replaceFile,
  replaceFileSync,
  tempName,
} from "../root-files.js";
import {
  type Capabilities,
  type ChannelInfo,
  type ChannelsOptions,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_WAIT_TIMEOUT_MS,
  type InitOptions,
  type NewTask,
  type PostInput,
  type PostResult,
  type ReadOptions,
  type ReadResult,
  type Store,
  type TaskInfo,
  type WaitOptions,
  type WaitResult,
  type WatchOptions,
} from "../types.js";
import { abortError, timeoutError, Wakeup } from "../wakeup.js";
import { ChannelIndex } from "./channel-index.js";
import {
  abandonedLockLeftover,
  acquireSeqLock,
  clearDeadOwnerLock,
  LOCK_DIR,
  LOCK_LEFTOVER_PREFIX,
  type LockOptions,
  referenceLockHeld,
} from "./seq-lock.js";
import { formatTask, parseTaskFile, TASK_FILE } from "./tasks.js";

export interface FsStoreOptions extends LockOptions {
  /** Keep an OS file watch per channel (default true). Without it every operation re-reads. */
  watch?: boolean;
  /** Largest accepted message body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
}

const META = "_meta.json";
const CURSORS = ".cursors";
/** The high-water mark: the largest seq ever allocated here, so deleting the newest message
 *  never re-issues its number. The reference does not know it, hence the reconciliation with
 *  the largest well-formed message file in {@link FsStore.allocateSeq}. */
const HIGH_WATER = ".seq";
/**
 * A file that does not parse and changed less than this long ago may still be being written in
 * place; scans stop before it and look again (the watch or the poll wakes them).
 */
const IN_PROGRESS_MS = 2_000;
/**
 * Each channel keeps its newest parsed messages, so that many readers of one post parse it once:
 * at most this many, and this many bytes of files (messages can be large, and the cache must not
 * grow with their size).
 */
const PARSED_CACHE = 2_048;
const PARSED_CACHE_BYTES = 8 * 1024 * 1024;
/** How far in the future a file's time may be and still count as just written (coarse clocks). */
const CLOCK_SLACK_MS = 1_000;
/** The largest `_meta.json` read (a governance profile included, it is a few KB). */
const MAX_META_BYTES = 256 * 1024;
/** The largest task marker read; a task's text is a title and a short description. */
const MAX_TASK_BYTES = 1024 * 1024;
/** Temporary files older than this were left by a crashed writer and are removed. */
const LEFTOVER_AGE_MS = 60_000;

interface ChannelState {
  name: string;
  dir: string;
  index: ChannelIndex;
  /** Posts from this process to one channel go one at a time: no self-contention on the lock. */
  tail: Promise<unknown>;
  /** The last seq this process posted here: the guess for the next post's file. */
  lastSeq: number;
  /** The channel exists and is a real folder (checked on first post). */
  checked: boolean;
  /** When abandoned temporary files were last cleaned. */
  cleanedAt: number;
  /** The newest parsed messages, by file name (insertion order: the oldest goes first). */
  parsed: Map<string, { message: Message; mtimeMs: number; size: number }>;
  /** The file sizes of the messages in `parsed`. */
  parsedBytes: number;
}

/** A scan of a channel after some seq: the well-formed messages and how far it got. */
interface Scan {
  messages: Message[];
  scannedTo: number;
  warnings: string[];
  /** It stopped before a file that may still be being written: look again on the next poll. */
  stalled?: boolean;
}

/** The embedded default: every channel a folder of markdown files, exactly as the SPEC says. */
export class FsStore implements Store {
  readonly capabilities: Capabilities = { multiHost: false, specFolder: true };
  private readonly states = new Map<string, ChannelState>();
  private readonly warned = new Set<string>();
  private readonly maxBodyBytes: number;

  constructor(
    readonly location: string,
    private readonly options: FsStoreOptions = {},
  ) {
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async init(channel: string, options: InitOptions = {}): Promise<ChannelMeta> {
    const meta = draftMeta(channel, options);
    const dir = join(this.location, channel);
    try {
      await fsp.mkdir(this.location, { recursive: true });
      ensureRealDir(dir);
      await createFileExclusive(dir, META, serializeMeta(meta));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") {
        throw new AgentChatError("CHANNEL_EXISTS", `channel ${channel} already exists`, {
          cause: err,
        });
      }
      throw wrapIoError(err, `cannot create channel ${channel}`);
    }
    return meta;
  }

  /**
   * Every channel of the root. One that cannot be read (a corrupt `_meta.json`, a folder that is
   * a link) never hides the others: it is left out, and `onWarning` hears why, once.
   */
  async channels(options: ChannelsOptions = {}): Promise<ChannelInfo[]> {
    let names: string[];
    try {
      names = await fsp.readdir(this.location);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw wrapIoError(err, `cannot list ${this.location}`);
    }
    const out: ChannelInfo[] = [];
    for (const name of names.sort()) {
      if (name.startsWith(".") || name.startsWith("_")) continue;
      try {
        validateName("channel", name);
      } catch {
        continue;
      }
      let meta: ChannelMeta;
      try {
        meta = await this.roster(name);
      } catch (err) {
        if (isAgentChatError(err, "CHANNEL_NOT_FOUND")) continue;
        this.warnOnce(`channel ${name}: ${(err as Error).message}; skipped`, options.onWarning);
        continue;
      }
      const state = this.state(name);
      await state.index.sync();
      out.push({
        name,
        topic: meta.topic,
        members: meta.members,
        created: meta.created,
        lastSeq: state.index.maxSeq(),
      });
    }
    return out;
  }

  async roster(channel: string): Promise<ChannelMeta> {
    validateName("channel", channel);
    const dir = join(this.location, channel);
    let text: string;
    try {
      assertRealDir(dir);
      text = readRootTextSync(join(dir, META), MAX_META_BYTES);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") {
        throw new AgentChatError(
          "CHANNEL_NOT_FOUND",
          `no channel ${channel} in ${this.location} (create it with: agent-chat init ${channel})`,
          { cause: err },
        );
      }
      throw wrapIoError(err, `cannot read channel ${channel}`);
    }
    return parseMeta(text, channel);
  }

  async updateMeta(
    channel: string,
    update: (meta: ChannelMeta) => ChannelMeta,
  ): Promise<ChannelMeta> {
    await this.roster(channel);
    const state = this.state(channel);
    return this.withLock(state, async () => {
      const current = await this.roster(channel);
      const { channel: _c, members: _m, topic: _t, created: _cr, ...ours } = update(current);
      const next: ChannelMeta = {
        channel: current.channel,
        members: current.members,
        topic: current.topic,
        created: current.created,
        ...ours,
      };
      try {
        await replaceFile(state.dir, META, serializeMeta(next));
      } catch (err) {
        throw wrapIoError(err, `cannot update channel ${channel}`);
      }
      return next;
    });
  }

  async post(channel: string, input: PostInput): Promise<PostResult> {
    const draft = draftPost(channel, input, this.maxBodyBytes);
    const state = this.state(channel);
    if (!state.checked) {
      await this.roster(channel);
      state.checked = true;
    }
    const run = state.tail.then(
      () => this.postLocked(state, draft),
      () => this.postLocked(state, draft),
    );
    state.tail = run.catch(() => {});
    return run;
  }

  /**
   * Writes the message to a temporary file under the seq this process expects, takes the lock,
   * allocates the real seq (rewriting the file only if another writer got there first), links it
   * into place and records the high-water mark. Keeping the write outside the lock keeps the
   * lock short when many processes post at once.
   */
  private async postLocked(state: ChannelState, draft: PostDraft): Promise<PostResult> {
    const ts = formatTimestamp();
    const render = (seq: number) => serializeMessage({ ...draft, seq, ts });
    const tmp = join(state.dir, tempName());
    let written = Math.max(state.lastSeq, state.index.maxSeq()) + 1;
    try {
      // Every time, not once: a long-running daemon or viewer must not follow a channel folder
      // that became a link since (a `git pull` can do that).
      assertRealDir(state.dir);
      // Synchronous file calls from here on: each takes microseconds, and not yielding to the
      // event loop while holding the lock (but for the index's one drain) keeps the lock short.
      writeFileSync(tmp, render(written), { flag: "wx" });
      const release = await acquireSeqLock(state.dir, this.lockOptions(state));
      try {
        let seq = await this.allocateSeq(state);
        for (;;) {
          if (seq > MAX_SEQ) {
            throw new AgentChatError(
              "TOO_LARGE",
              `channel ${draft.channel} has no numbers left: .seq or a message file name holds ` +
                `${MAX_SEQ}, the largest number; if it was planted, remove it`,
            );
          }
          // A number with any file already at it (a malformed one dropped by hand, say) is
          // burned, never shared: a reader would otherwise meet two files with one number.
          if (!state.index.holds(seq)) {
            if (seq !== written) {
              writeFileSync(tmp, render(seq));
              written = seq;
            }
            const file = messageFileName(seq, draft.from, draft.title);
            if (this.publish(tmp, state, file)) {
              state.lastSeq = seq;
              this.writeHighWater(state, seq);
              return { seq, channel: draft.channel, file };
            }
          }
          seq += 1;
        }
      } finally {
        release();
      }
    } catch (err) {
      rmSync(tmp, { force: true });
      if (isAgentChatError(err)) throw err;
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        state.checked = false;
        throw new AgentChatError("CHANNEL_NOT_FOUND", `channel ${draft.channel} is gone`, {
          cause: err,
        });
      }
      throw wrapIoError(err, `cannot write message to ${state.dir}`);
    }
  }

  /**
   * Links the finished message into place under its final name, only if that name is free: an
   * acknowledged message is never replaced. False when the name was taken (by a file the index
   * did not know yet); the caller moves on to the next number.
   */
  private publish(tmp: string, state: ChannelState, file: string): boolean {
    try {
      publishExclusiveSync(tmp, state.dir, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      state.index.add(file);
      return false;
    }
    state.index.add(file);
    return true;
  }

  /**
   * Records the high-water mark, never through a link or a hard link planted as `.seq` to make
   * every post overwrite a file elsewhere. Written in place otherwise: a torn mark can only read
   * lower, and the reconciliation with the largest message file covers that; only the number of
   * a deleted newest message depends on the mark alone.
   */
  private writeHighWater(state: ChannelState, seq: number): void {
    try {
      overwriteOwnFileSync(state.dir, HIGH_WATER, String(seq));
    } catch {
      // The message is published, so the post succeeded: failing it now would make its retry a
      // duplicate. The mark is advisory (a folder planted as `.seq`, say, leaves it unwritten).
    }
  }

  /**
   * The next seq, under the lock: one past the larger of the high-water mark and the largest
   * well-formed message file (a `chat.py` posting here never updates the mark). Files that do
   * not parse, such as a stray `2024-notes.md`, never move the sequence.
   */
  private async allocateSeq(state: ChannelState): Promise<number> {
    await state.index.sync();
    const mark = this.readHighWater(state);
    for (const [seq, names] of state.index.descending(mark)) {
      for (const name of names) {
        if ((await this.parseFile(state, name, seq)) !== undefined) return seq + 1;
      }
    }
    return mark + 1;
  }

  /** The high-water mark; 0 when missing, unreadable or not a sane number (anyone can write it). */
  private readHighWater(state: ChannelState): number {
    try {
      return parseSeqText(readOwnTextSync(join(state.dir, HIGH_WATER), 32));
    } catch {
      return 0; // no mark yet (new channel, or one written only by the reference), or not a file
    }
  }

  private forgetParsed(state: ChannelState, name: string): void {
    const entry = state.parsed.get(name);
    if (!entry) return;
    state.parsed.delete(name);
    state.parsedBytes -= entry.size;
  }

  /** Reads and parses one message file; undefined when it is gone or not a message. */
  private async parseFile(
    state: ChannelState,
    name: string,
    seq: number,
    warnings?: string[],
  ): Promise<Message | undefined> {
    const read = await this.readFile(state, name, seq);
    if (read.problem) warnings?.push(read.problem);
    return read.message;
  }

  /**
   * One message file: its message, or why it is not one. `fresh` marks a file that does not
   * parse and changed within the last {@link IN_PROGRESS_MS}: it may still be being written in
   * place (by the reference `chat.py`, an editor, a script) and deserves another look.
   */
  private async readFile(
    state: ChannelState,
    name: string,
    seq: number,
  ): Promise<{ message?: Message; problem?: string; fresh?: boolean }> {
    const path = join(state.dir, name);
    const cached = state.parsed.get(name);
    if (cached) {
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (st?.isFile() && st.mtimeMs === cached.mtimeMs && st.size === cached.size) {
        return { message: { ...cached.message, extra: { ...cached.message.extra } } };
      }
      this.forgetParsed(state, name);
    }
    let file: RootFile;
    try {
      // Never a link, a FIFO or a device, and never more than a message can hold.
      file = readRootFileSync(path, this.maxBodyBytes + MAX_FRONTMATTER_BYTES);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") {
        state.index.forget(seq, name);
        return {};
      }
      const why = isAgentChatError(err) ? err.message.replace(`${path} `, "") : (code ?? err);
      return { problem: `${name}: ${why}, skipped` };
    }
    // A time in the future (a file from a tarball, a skewed clock) is not "just written": it
    // would stall every reader behind the file for good.
    const age = Date.now() - file.mtimeMs;
    const fresh = age > -CLOCK_SLACK_MS && age < IN_PROGRESS_MS;
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(file.data);
    } catch {
      return { problem: `${name}: not UTF-8, skipped`, fresh };
    }
    const parsed = parseMessage(text, name, state.name);
    if (parsed.ok) {
      // Many waiters woken by one post each read it: parse it once. Messages are never edited
      // (SPEC §4), and the size and mtime check catches a file replaced by hand anyway.
      state.parsed.set(name, { message: parsed.message, mtimeMs: file.mtimeMs, size: file.size });
      state.parsedBytes += file.size;
      while (state.parsed.size > PARSED_CACHE || state.parsedBytes > PARSED_CACHE_BYTES) {
        this.forgetParsed(state, state.parsed.keys().next().value as string);
      }
      return { message: { ...parsed.message, extra: { ...parsed.message.extra } } };
    }
    return { problem: `${name}: ${parsed.reason}, skipped`, fresh };
  }

  /**
   * Well-formed messages after `after`, in seq order. A file that does not parse may be one that
   * a reference `chat.py` (which writes in place) is still writing, while it holds the lock or
   * for {@link IN_PROGRESS_MS} after a change: the scan stops before its number and looks again
   * next time, returning nothing of that number, so that no message is ever returned twice.
   * Otherwise it is reported once and passed over.
   */
  private async scan(state: ChannelState, after: number): Promise<Scan> {
    this.assertChannelDir(state); // it may have become a link since the wait or watch began
    await state.index.sync();
    if (state.index.leftovers.length > 0) this.removeAbandoned(state);
    const messages: Message[] = [];
    const warnings: string[] = [];
    for (const name of state.index.outOfRange) {
      this.warnOnce(
        `${name}: its number is beyond ${MAX_SEQ}, ignored`,
        (w) => warnings.push(w),
        state,
      );
    }
    let scannedTo = after;
    for (const [seq, names] of state.index.after(after)) {
      const found: Message[] = [];
      for (const name of names) {
        const read = await this.readFile(state, name, seq);
        if (read.message) {
          found.push(read.message);
          continue;
        }
        if (!read.problem) continue; // gone
        if (
          read.fresh !== undefined &&
          (read.fresh || referenceLockHeld(state.dir, this.options.staleMs))
        ) {
          return { messages, scannedTo, warnings, stalled: true };
        }
        this.warnOnce(read.problem, (w) => warnings.push(w), state);
      }
      messages.push(...found);
      scannedTo = seq;
    }
    return { messages, scannedTo, warnings };
  }

  /** Reports `warning` through `report` the first time this store meets it. */
  private warnOnce(
    warning: string,
    report: ((warning: string) => void) | undefined,
    state?: ChannelState,
  ): void {
    const key = `${state?.dir ?? this.location}/${warning}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    report?.(warning);
  }

  async cursor(channel: string, agent: string): Promise<number> {
    validateName("channel", channel);
    validateName("agent", agent);
    const dir = join(this.location, channel, CURSORS);
    try {
      if (entryKind(dir) !== "dir") return 0; // none yet; a link is never followed
      return parseSeqText(readOwnTextSync(join(dir, `${identity(agent)}.txt`), 32));
    } catch {
      return 0;
    }
  }

  private async writeCursor(state: ChannelState, agent: string, seq: number): Promise<void> {
    const dir = join(state.dir, CURSORS);
    try {
      ensureRealDir(dir);
      replaceFileSync(dir, `${identity(agent)}.txt`, String(seq));
    } catch (err) {
      throw wrapIoError(err, `cannot save the cursor of ${agent}`);
    }
  }

  async read(channel: string, options: ReadOptions): Promise<ReadResult> {
    validateName("agent", options.as);
    await this.roster(channel);
    const state = this.state(channel);
    const cursor = await this.cursor(channel, options.as);
    const scan = await this.scan(state, options.all ? 0 : cursor);
    const messages = options.everyone
      ? scan.messages
      : scan.messages.filter((m) => isRelevant(m, options.as));
    let next = cursor;
    if (!options.peek && scan.scannedTo > cursor) {
      next = scan.scannedTo;
      await this.writeCursor(state, options.as, next);
    }
    return { channel, messages, cursor: next, warnings: scan.warnings };
  }

  async peek(channel: string, count = 3): Promise<Message[]> {
    await this.roster(channel);
    const state = this.state(channel);
    await state.index.sync();
    const out: Message[] = [];
    for (const [seq, names] of state.index.descending(0)) {
      for (const name of names) {
        const message = await this.parseFile(state, name, seq);
        if (message) out.push(message);
      }
      if (out.length >= count) break;
    }
    return out.slice(0, count).reverse();
  }

  async wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult> {
    validateName("agent", options.as);
    if (channels.length === 0)
      throw new AgentChatError("INVALID_ARGUMENT", "no channel to wait on");
    const unique = [...new Set(channels)];
    for (const channel of unique) await this.roster(channel);
    const states = unique.map((channel) => ({ channel, state: this.state(channel) }));
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    const intervalMs = options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS;

    const wake = new Wakeup();
    // Subscribe before the first scan, so that a post between the two is never missed.
    const unsubscribe = states.map(({ state }) => state.index.onMessageChange(() => wake.kick()));
    const stop = this.pollWhileWaiting(
      states.map(({ state }) => state),
      intervalMs,
      () => wake.kick(),
    );
    const timer = setTimeout(() => wake.fail(timeoutError(timeoutMs)), timeoutMs);
    const onAbort = () => wake.fail(abortError());
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      if (options.signal?.aborted) throw abortError();
      const looked = new Map<ChannelState, number>();
      for (;;) {
        stop.scanned();
        const found = await this.scanForWait(states, options.as, stop, looked);
        if (found) return found;
        await wake.next();
      }
    } finally {
      for (const off of unsubscribe) off();
      stop.end();
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * The sleep-poll safety net behind the file watch: every `intervalMs`, looks for files the
   * watch missed, and wakes the waiter only when that look found something new, or when its
   * last scan stopped before a file that may still be being written. Idle waiters thus cost a
   * timer each, not a scan each, however many of them a daemon holds.
   */
  private pollWhileWaiting(states: ChannelState[], intervalMs: number, kick: () => void) {
    let versions = states.map((s) => s.index.version);
    let stalled = false;
    const timer = setInterval(() => {
      // A poster of ours killed holding the lock is cleared long before chat.py, which spins
      // on our link once it judges it stale, could meet it.
      for (const state of states) clearDeadOwnerLock(state.dir);
      Promise.all(states.map((state) => state.index.rescanIfChanged().catch(() => {}))).then(() => {
        if (stalled || states.some((state, i) => state.index.version !== versions[i])) kick();
      });
    }, intervalMs);
    return {
      /** Called before each scan: what the scan will see is no longer news. */
      scanned: () => {
        versions = states.map((s) => s.index.version);
      },
      stalledOn: (value: boolean) => {
        stalled = value;
      },
      end: () => clearInterval(timer),
    };
  }

  /**
   * One pass over the channels; when something relevant exists, advances cursors and returns.
   * `looked` is how far this wait's earlier passes scanned each channel and found nothing for
   * the agent: relevance does not depend on the cursor, so a pass first looks only at what came
   * after, and reads cursors only when some of it is for the agent. Thousands of waiters woken
   * by a post meant for a few then cost a look at one cached message each.
   */
  private async scanForWait(
    states: Array<{ channel: string; state: ChannelState }>,
    agent: string,
    poll: { stalledOn(value: boolean): void },
    looked: Map<ChannelState, number>,
  ): Promise<WaitResult | undefined> {
    if (looked.size === states.length) {
      let stalled = false;
      let news = false;
      for (const { state } of states) {
        const scan = await this.scan(state, looked.get(state) ?? 0);
        stalled ||= scan.stalled === true;
        if (scan.messages.some((m) => isRelevant(m, agent))) {
          news = true;
          break;
        }
        looked.set(state, scan.scannedTo);
      }
      if (!news) {
        poll.stalledOn(stalled);
        return undefined;
      }
    }
    const scans = [];
    for (const { channel, state } of states) {
      const cursor = await this.cursor(channel, agent);
      const scan = await this.scan(state, cursor);
      scans.push({ channel, state, cursor, scan });
    }
    poll.stalledOn(scans.some(({ scan }) => scan.stalled));
    const messages = scans.flatMap(({ scan }) => scan.messages.filter((m) => isRelevant(m, agent)));
    if (messages.length === 0) {
      for (const { state, scan } of scans) looked.set(state, scan.scannedTo);
      return undefined;
    }
    // Every cursor that will move is checked before any is written: one channel whose cursor
    // cannot be saved (a `.cursors` planted as a file or link) must not cost the others their
    // messages, moved past but never returned. Such a channel leaves this wait, with a warning.
    const warnings = scans.flatMap(({ scan }) => scan.warnings);
    const usable = scans.filter(({ channel, state, cursor, scan }) => {
      const problem = scan.scannedTo > cursor ? this.cursorProblem(state, agent) : undefined;
      if (problem === undefined) return true;
      warnings.push(`${channel}: ${problem}; its messages are left unread`);
      states.splice(
        states.findIndex((s) => s.state === state),
        1,
      );
      looked.delete(state);
      return false;
    });
    if (states.length === 0) {
      throw new AgentChatError("UNSAFE_FILE", warnings.at(-1) ?? "no channel to wait on");
    }
    const delivered = usable.flatMap(({ scan }) =>
      scan.messages.filter((m) => isRelevant(m, agent)),
    );
    if (delivered.length === 0) return undefined;
    const cursors: Record<string, number> = {};
    for (const { channel, state, cursor, scan } of usable) {
      cursors[channel] = Math.max(cursor, scan.scannedTo);
      if (scan.scannedTo > cursor) await this.writeCursor(state, agent, scan.scannedTo);
    }
    return { messages: delivered, cursors, warnings };
  }

  /** Why the agent's cursor in this channel cannot be saved; undefined when it can. */
  private cursorProblem(state: ChannelState, agent: string): string | undefined {
    const dir = join(state.dir, CURSORS);
    const dirKind = entryKind(dir);
    if (dirKind !== undefined && dirKind !== "dir") return `${CURSORS} is not a plain folder`;
    const fileKind = entryKind(join(dir, `${identity(agent)}.txt`));
    if (fileKind === "dir") return `${CURSORS}/${identity(agent)}.txt is a folder`;
    return undefined;
  }

  async *watch(channels: readonly string[], options: WatchOptions = {}): AsyncIterable<Message> {
    const unique = [...new Set(channels)];
    for (const channel of unique) await this.roster(channel);
    const states = unique.map((channel) => ({ channel, state: this.state(channel) }));
    const wake = new Wakeup();
    const unsubscribe = states.map(({ state }) => state.index.onMessageChange(() => wake.kick()));
    const poll = this.pollWhileWaiting(
      states.map(({ state }) => state),
      options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS,
      () => wake.kick(),
    );
    const onAbort = () => wake.end();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const positions = new Map<string, number>();
      for (const { channel, state } of states) {
        await state.index.sync();
        const after = options.after;
        const start =
          typeof after === "number" ? after : (after?.[channel] ?? state.index.maxSeq());
        positions.set(channel, start);
      }
      while (!options.signal?.aborted) {
        poll.scanned();
        let stalled = false;
        for (const { channel, state } of states) {
          const scan = await this.scan(state, positions.get(channel) ?? 0);
          positions.set(channel, scan.scannedTo);
          stalled ||= scan.stalled === true;
          for (const message of scan.messages) yield message;
        }
        poll.stalledOn(stalled);
        if (
          !(await wake.next().then(
            () => true,
            () => false,
          ))
        ) {
          return;
        }
      }
    } finally {
      for (const off of unsubscribe) off();
      poll.end();
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  async addTask(channel: string, task: NewTask): Promise<TaskInfo> {
    await this.roster(channel);
    const { from, title } = draftTask(task);
    const state = this.state(channel);
    return this.withLock(state, async () => {
      const existing = await this.listTasks(state, channel);
      let id: string;
      if (task.id !== undefined) {
        id = parseTaskId(task.id);
        if (existing.some((t) => t.id === id)) {
          throw new AgentChatError("TASK_EXISTS", `task ${id} already exists in ${channel}`);
        }
      } else {
        const numbers = existing.map((t) => Number(t.id)).filter(Number.isSafeInteger);
        id = String(Math.max(0, ...numbers) + 1);
      }
      const file = `task-${id}.md`;
      const text = formatTask({ id, from, title, ts: formatTimestamp(), body: task.body ?? "" });
      try {
        await createFileExclusive(state.dir, file, text);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST") {
          throw new AgentChatError("TASK_EXISTS", `task ${id} already exists in ${channel}`);
        }
        throw wrapIoError(err, `cannot create ${file}`);
      }
      return { id, channel, state: "open", title, file };
    });
  }

  async tasks(channel: string): Promise<TaskInfo[]> {
    await this.roster(channel);
    return this.listTasks(this.state(channel), channel);
  }

  private async listTasks(state: ChannelState, channel: string): Promise<TaskInfo[]> {
    const names = await fsp.readdir(state.dir);
    const out: TaskInfo[] = [];
    for (const file of names) {
      const m = TASK_FILE.exec(file);
      if (!m) continue;
      const id = m[1]!;
      let title: string;
      try {
        title = parseTaskFile(readRootTextSync(join(state.dir, file), MAX_TASK_BYTES)).title;
      } catch {
        // Claimed or released between the listing and the read; or not a marker at all (a link,
        // a FIFO, a huge file), which is no task.
        continue;
      }
      const info: TaskInfo = { id, channel, state: m[2] ? "claimed" : "open", title, file };
      if (m[2]) info.holder = m[2];
      out.push(info);
    }
    return out.sort((a, b) => compareTaskIds(a.id, b.id));
  }

  async claim(channel: string, task: string, agent: string): Promise<TaskInfo> {
    const id = parseTaskId(task);
    validateName("agent", agent);
    await this.roster(channel);
    const state = this.state(channel);
    const holder = identity(agent);
    return this.withLock(state, async () => {
      const open = `task-${id}.md`;
      const claimed = `task-${id}.CLAIMED-${holder}.md`;
      const current = (await this.listTasks(state, channel)).find((t) => t.id === id);
      if (!current) throw new AgentChatError("TASK_NOT_FOUND", `no task ${id} in ${channel}`);
      if (current.state === "claimed") {
        throw new AgentChatError(
          "CLAIM_LOST",
          `task ${id} is already claimed by ${current.holder === holder ? "you" : current.holder}`,
        );
      }
      if (lstatSync(join(state.dir, claimed), { throwIfNoEntry: false })) {
        throw new AgentChatError("CLAIM_LOST", `task ${id} is already claimed`);
      }
      try {
        await fsp.rename(join(state.dir, open), join(state.dir, claimed));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") {
          throw new AgentChatError("CLAIM_LOST", `task ${id} was claimed by someone else`);
        }
        throw wrapIoError(err, `cannot claim task ${id}`);
      }
      return { ...current, state: "claimed", holder, file: claimed };
    });
  }

  async release(channel: string, task: string, agent: string): Promise<TaskInfo> {
    const id = parseTaskId(task);
    validateName("agent", agent);
    await this.roster(channel);
    const state = this.state(channel);
    const me = identity(agent);
    return this.withLock(state, async () => {
      const current = (await this.listTasks(state, channel)).find((t) => t.id === id);
      if (!current) throw new AgentChatError("TASK_NOT_FOUND", `no task ${id} in ${channel}`);
      if (current.state === "open") {
        throw new AgentChatError("NOT_HOLDER", `task ${id} is not claimed`);
      }
      if (current.holder !== me) {
        throw new AgentChatError(
          "NOT_HOLDER",
          `task ${id} is claimed by ${current.holder}; only the holder can release it`,
        );
      }
      const open = `task-${id}.md`;
      try {
        await fsp.rename(join(state.dir, current.file), join(state.dir, open));
      } catch (err) {
        throw wrapIoError(err, `cannot release task ${id}`);
      }
      const { holder: _gone, ...rest } = current;
      return { ...rest, state: "open", file: open };
    });
  }

  async close(): Promise<void> {
    for (const state of this.states.values()) state.index.close();
    this.states.clear();
  }

  /**
   * Removes what crashed writers left behind: temporary files (a live writer's lives for well
   * under the lock timeout, so one older than a minute is abandoned) and the owner directories
   * of sequence locks whose poster is dead.
   */
  async cleanLeftovers(channel: string): Promise<number> {
    validateName("channel", channel);
    const state = this.state(channel);
    this.assertChannelDir(state);
    await state.index.rescan();
    let removed = 0;
    for (const name of state.index.leftovers) {
      const path = join(state.dir, name);
      try {
        const st = await fsp.lstat(path);
        const ageMs = Date.now() - st.mtimeMs;
        const abandoned = name.startsWith(LOCK_LEFTOVER_PREFIX)
          ? abandonedLockLeftover(state.dir, name, ageMs)
          : ageMs > LEFTOVER_AGE_MS || ageMs < -LEFTOVER_AGE_MS;
        // Only what ours leaves: files and empty owner folders (with at most a steal marker).
        // Anything else of the same name was put there by someone else and stays.
        if (abandoned && (removeFileEntry(path) || removeOwnDir(path, ["steal"]))) removed += 1;
      } catch {
        // Renamed into place or removed meanwhile.
      }
    }
    state.index.leftovers = [];
    return removed;
  }

  /** Cleans leftovers in the background, at most once a minute per channel. */
  private removeAbandoned(state: ChannelState): void {
    if (Date.now() - state.cleanedAt < LEFTOVER_AGE_MS) return;
    state.cleanedAt = Date.now();
    this.cleanLeftovers(state.name).catch(() => {});
  }

  private state(channel: string): ChannelState {
    let state = this.states.get(channel);
    if (!state) {
      const dir = join(this.location, channel);
      state = {
        name: channel,
        dir,
        index: new ChannelIndex(dir, this.options.watch ?? true),
        tail: Promise.resolve(),
        lastSeq: 0,
        checked: false,
        cleanedAt: 0,
        parsed: new Map(),
        parsedBytes: 0,
      };
      this.states.set(channel, state);
    }
    return state;
  }

  /** The channel folder is still a real folder: UNSAFE_FILE for a link, gone when missing. */
  private assertChannelDir(state: ChannelState): void {
    try {
      assertRealDir(state.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      throw new AgentChatError("CHANNEL_NOT_FOUND", `channel ${state.name} is gone`, {
        cause: err,
      });
    }
  }

  private lockOptions(state: ChannelState): LockOptions {
    return { ...this.options, pause: (ms) => state.index.nextChange(LOCK_DIR, ms) };
  }

  private async withLock<T>(state: ChannelState, fn: () => Promise<T>): Promise<T> {
    const release = await acquireSeqLock(state.dir, this.lockOptions(state));
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
