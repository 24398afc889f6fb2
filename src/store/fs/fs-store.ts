import { promises as fsp, lstatSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  AgentChatError,
  isAgentChatError,
  referenceError,
  wrapIoError,
} from "../../core/errors.js";
import {
  cursorSeq,
  formatTimestamp,
  MAX_SEQ,
  MAX_SEQ_GAP,
  type Message,
  messageFileName,
  parseMessage,
  parseSeqText,
} from "../../core/message.js";
import { type ChannelMeta, parseMeta, serializeMeta, withOurKeys } from "../../core/meta.js";
import { identity, validateName } from "../../core/names.js";
import {
  abandonedLockLeftover,
  acquireDirLock,
  clearDeadOwnerLock,
  LOCK_DIR,
  LOCK_LEFTOVER_PREFIX,
  type LockOptions,
  referenceLockHeld,
} from "../../fsutil/dir-lock.js";
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
} from "../../fsutil/root-files.js";
import { FeatureStore, type IndexedFeed } from "../feature-store.js";
import {
  checkPruneOptions,
  formatPathLeases,
  type NoteStore,
  PATH_LEASES_FILE,
  type PathLease,
  type PathLeaseDoc,
  type PathLeaseRecord,
  type PresenceOptions,
  parsePathLeases,
  patternsOverlap,
  recordId,
} from "../records/index.js";
import {
  type CursorMove,
  corruptCursor,
  formatLease,
  type Lease,
  leaseFileName,
  MAX_FRONTMATTER_BYTES,
  type PostDraft,
  parseLease,
  parseTaskFile,
  renderMessage,
  type SafetyNet,
  type Scan,
  TASK_FILE,
  type TaskRecord,
  taskFileName,
} from "../shared/index.js";
import {
  type ArchiveOptions,
  type ArchiveResult,
  type Capabilities,
  type ChannelSummary,
  type ChannelSummaryOptions,
  type ChatPy07Interop,
  type ClaimOptions,
  type DoneOptions,
  type FenceResult,
  MAX_BODY_KEY,
  type NewStructuredTask,
  type PathLockChange,
  type PendingRecovery,
  type PostInput,
  type PostResult,
  type PruneOptions,
  type PruneResult,
  type RecoverPendingOptions,
  type ReleaseOptions,
  type RenewOptions,
  type Retention,
  type StructuredTaskChange,
  TASK_TTL_KEY,
  type TaskInfo,
  type TasksOptions,
} from "../types.js";
import { ChannelIndex, listFolder } from "./channel-index.js";
import { folderNotes } from "./notes.js";
import { presenceFiles, prunePresence } from "./prune-presence.js";
import {
  type AppliedChange,
  applyChange,
  type Board,
  changeReferenceLock,
  hasClaims,
  hasStructuredTask,
  hasTaskRecords,
  LOCKS_DIR,
  type LockHost,
  type LockRecord,
  leasePattern,
  lockInfo,
  markRecorded,
  publishChange,
  type RecordChange,
  recoverPendingPathLock,
  referenceLocks,
  refuseWhilePending,
  syncReferenceLocks,
  withoutEndedByReference,
  withPathLocksMutex,
} from "./reference07/index.js";

export interface FsStoreOptions extends LockOptions, PresenceOptions {
  /**
   * Keep an OS file watch per channel (default true). Without it every operation re-reads the
   * folder, synchronously: meant for a process that ends once it has answered.
   */
  watch?: boolean;
  /** Largest accepted message body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** The clock leases are measured by (default `Date.now`; tests inject one). */
  now?: () => number;
  /**
   * A secret of the user's, never in the root (e.g. from its config folder): the stored search
   * index is kept only under a MAC with it, so that no one else's edit of it is believed.
   * Without one, every search scans the messages (docs/search.md).
   */
  searchIndexSecret?: () => Promise<string | undefined>;
  /**
   * A folder of the user's own, never in the root, where a store without file watches keeps
   * each large channel's tail for the next process (tail-hint.ts): a fresh `read`, `peek` or
   * hook then need not list a folder of 100,000 files. Without it every such call lists.
   */
  tailHintDir?: string;
}

const META = "_meta.json";

const CURSORS = ".cursors";
/** chat.py 0.7's lock length when none is given (its DEFAULT_LOCK_SECONDS). */
const REFERENCE_LOCK_TTL_MS = 300_000;

/**
 * chat.py's `init` makes `.cursors/` with the channel, and tools written for its layout expect
 * it there. Something already in its place is left alone: reading a cursor reports it.
 */
function createCursorsDir(channelDir: string): void {
  try {
    mkdirSync(join(channelDir, CURSORS));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}
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
 * A lock refused because the channel folder may not be written, told as the failed write it
 * stands for (what the message's own file would have said, written before the lock).
 */
function notWritable(err: unknown, dir: string): AgentChatError | undefined {
  const cause = isAgentChatError(err, "IO_ERROR") ? (err as Error).cause : undefined;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") return undefined;
  return wrapIoError(cause, `cannot write message to ${dir}`);
}

function isChannelName(name: string): boolean {
  try {
    validateName("channel", name);
    return true;
  } catch {
    return false;
  }
}

/** Why a scan stopped before a file that does not parse (yet). */
function heldText(name: string, locked: boolean): string {
  const why = locked
    ? "while chat.py holds the channel lock"
    : `${IN_PROGRESS_MS / 1000} s after it changed`;
  return (
    `${name} does not parse yet and may still be being written: it is waited for ${why}, ` +
    "so it and the messages after it are left for the next read"
  );
}
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
/** How long a `_meta.json` must have been unchanged before its text is kept (coarse clocks). */
const META_SETTLED_MS = 1_000;
/** The largest task marker read; a task's text is a title and a short description. */
const MAX_TASK_BYTES = 1024 * 1024;
/** The largest lease file read (a token, a holder, times and at most 20 grants: ~2 KB). */
const MAX_LEASE_BYTES = 64 * 1024;
/** The largest `.leases.json` read: a thousand leases of long patterns and reasons. */
const MAX_PATH_LEASE_BYTES = 2 * 1024 * 1024;
/** Strict UTF-8, made once: a decoder per file cost a search of 100,000 messages seconds. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });
/** Temporary files older than this were left by a crashed writer and are removed. */
const LEFTOVER_AGE_MS = 60_000;

interface ChannelState {
  name: string;
  dir: string;
  index: ChannelIndex;
  /** The last seq this process posted here: the guess for the next post's file. */
  lastSeq: number;
  /** When abandoned temporary files were last cleaned. */
  cleanedAt: number;
  /** The newest parsed messages, by file name (insertion order: the oldest goes first). */
  parsed: Map<string, { message: Message; mtimeMs: number; size: number }>;
  /** The file sizes of the messages in `parsed`. */
  parsedBytes: number;
}

/** A post's temporary file, and the number it was last written under (0: not written yet). */
interface PendingMessage {
  tmp: string;
  render: (seq: number) => string;
  written: number;
}

/** A channel as the shared loops see it, with the folder behind it. */
interface FolderFeed extends IndexedFeed {
  state: ChannelState;
}

/** The embedded default: every channel a folder of markdown files, exactly as the SPEC says. */
export class FsStore extends FeatureStore<FolderFeed> {
  readonly capabilities: Capabilities = { multiHost: false, specFolder: true };
  protected readonly notes: NoteStore;
  private readonly states = new Map<string, ChannelState>();
  /**
   * A lock record of ours created under the channel lock, journaled, whose audit message is
   * posted once that lock is let go (a post takes it), still under chat.py's mutex.
   */
  private readonly unpublished = new Map<string, AppliedChange>();
  /** How many structured-task audit posts are under way (they hold chat.py's task mutex). */
  private boardPosts = 0;
  /** Each channel's `_meta.json` as last read, with the lstat it was read under. */
  private readonly metaTexts = new Map<string, { stamp: string; text: string }>();
  private secret: Promise<string | undefined> | undefined;

  constructor(
    readonly location: string,
    private readonly options: FsStoreOptions = {},
  ) {
    super(options.maxBodyBytes, options.now, options);
    this.notes = folderNotes(location);
  }

  protected async createChannel(channel: string, meta: ChannelMeta): Promise<void> {
    const dir = join(this.location, channel);
    try {
      await fsp.mkdir(this.location, { recursive: true });
      ensureRealDir(dir);
      await createFileExclusive(dir, META, serializeMeta(meta));
      createCursorsDir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") {
        throw new AgentChatError("CHANNEL_EXISTS", `channel ${channel} already exists`, {
          cause: err,
        });
      }
      throw wrapIoError(err, `cannot create channel ${channel}`);
    }
  }

  /**
   * The root's folders that are channels: hidden (`.`) and ours (`_`) are none. A folder with a
   * `_meta.json` whose name breaks our rule (chat.py accepts `my channel`, `café`) is listed
   * too: `channels` reports it by name instead of hiding it.
   */
  protected async channelNames(): Promise<string[]> {
    let names: string[];
    try {
      names = await listFolder(this.location, this.options.watch === false);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw wrapIoError(err, `cannot list ${this.location}`);
    }
    return names.sort().filter((name) => {
      if (name.startsWith(".") || name.startsWith("_")) return false;
      return isChannelName(name) || entryKind(join(this.location, name, META)) === "file";
    });
  }

  protected async lastSeq(channel: string): Promise<number> {
    const state = this.state(channel);
    await state.index.sync(false, Number.POSITIVE_INFINITY);
    return state.index.maxSeq();
  }

  protected override async messageCount(channel: string): Promise<number> {
    const state = this.state(channel);
    await state.index.sync(false, Number.POSITIVE_INFINITY);
    return state.index.count();
  }

  protected async readMeta(channel: string): Promise<ChannelMeta> {
    const dir = join(this.location, channel);
    let text: string;
    try {
      assertRealDir(dir);
      text = this.metaText(join(dir, META));
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

  /**
   * A `_meta.json`'s text, read again only when its lstat says it changed: one command asks for
   * the channel's meta several times (the policy pins, the identity guard, the post itself).
   * A file that changed within a second of being read is read every time, as a rewrite within
   * the same coarse clock tick would keep its times (ctime, which no one can set back).
   */
  private metaText(path: string): string {
    const st = lstatSync(path);
    const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const known = this.metaTexts.get(path);
    if (known?.stamp === stamp && st.isFile()) return known.text;
    const readAt = this.now();
    const text = readRootTextSync(path, MAX_META_BYTES);
    if (readAt - st.ctimeMs > META_SETTLED_MS) this.metaTexts.set(path, { stamp, text });
    else this.metaTexts.delete(path);
    return text;
  }

  async updateMeta(
    channel: string,
    update: (meta: ChannelMeta) => ChannelMeta,
  ): Promise<ChannelMeta> {
    await this.roster(channel);
    const state = this.state(channel);
    return this.exclusive(channel, async () => {
      const current = await this.roster(channel);
      const next = withOurKeys(current, update(current));
      try {
        await replaceFile(state.dir, META, serializeMeta(next));
      } catch (err) {
        throw wrapIoError(err, `cannot update channel ${channel}`);
      }
      return next;
    });
  }

  protected append(draft: PostDraft): Promise<PostResult> {
    return this.postLocked(this.state(draft.channel), draft);
  }

  /**
   * Writes the message to a temporary file under the seq this process expects, takes the lock,
   * allocates the real seq (rewriting the file only if another writer got there first, or
   * writing it only now when this store expects no number yet), links it into place and
   * records the high-water mark. Keeping the write outside the lock keeps the lock short when
   * many processes post at once.
   */
  private async postLocked(state: ChannelState, draft: PostDraft): Promise<PostResult> {
    const ts = formatTimestamp();
    const known = Math.max(state.lastSeq, state.index.maxSeq());
    const pending: PendingMessage = {
      tmp: join(state.dir, tempName()),
      render: (seq) => renderMessage(draft, seq, ts),
      // A store that has not seen the channel yet (a command's one post) cannot guess its
      // number: its file is written once, under the lock, not once before and again under it.
      written: known === 0 ? 0 : known + 1,
    };
    try {
      // Every time, not once: a long-running daemon or viewer must not follow a channel folder
      // that became a link since (a `git pull` can do that).
      assertRealDir(state.dir);
      // Synchronous file calls from here on: each takes microseconds, and not yielding to the
      // event loop while holding the lock (but for the index's one drain) keeps the lock short.
      if (pending.written !== 0) {
        writeFileSync(pending.tmp, pending.render(pending.written), { flag: "wx" });
      }
      const release = await acquireDirLock(state.dir, this.lockOptions(state)).catch((err) => {
        throw notWritable(err, state.dir) ?? err;
      });
      try {
        return await this.publishNext(state, draft, pending);
      } finally {
        release();
      }
    } catch (err) {
      rmSync(pending.tmp, { force: true });
      if (isAgentChatError(err)) throw err;
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        throw new AgentChatError("CHANNEL_NOT_FOUND", `channel ${draft.channel} is gone`, {
          cause: err,
        });
      }
      throw wrapIoError(err, `cannot write message to ${state.dir}`);
    }
  }

  /** Under the lock: the message published at the first free number. */
  private async publishNext(
    state: ChannelState,
    draft: PostDraft,
    pending: PendingMessage,
  ): Promise<PostResult> {
    for (let seq = await this.allocateSeq(state); ; seq++) {
      if (seq > MAX_SEQ) {
        throw new AgentChatError(
          "TOO_LARGE",
          `channel ${draft.channel} has no numbers left: .seq or a message file name holds ` +
            `${MAX_SEQ}, the largest number; if it was planted, remove it`,
        );
      }
      // A number with any file already at it (a malformed one dropped by hand, say) is
      // burned, never shared: a reader would otherwise meet two files with one number.
      if (state.index.holds(seq)) continue;
      if (seq !== pending.written) {
        const flag = pending.written === 0 ? "wx" : "w";
        writeFileSync(pending.tmp, pending.render(seq), { flag });
        pending.written = seq;
      }
      const file = messageFileName(seq, draft.from, draft.title);
      if (this.publish(pending.tmp, state, file)) {
        state.lastSeq = seq;
        this.writeHighWater(state, seq);
        return { seq, channel: draft.channel, file };
      }
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
    await state.index.sync(true);
    const mark = this.sequenceHighWater(state);
    for (const [seq, names] of state.index.descending(mark)) {
      for (const name of names) {
        if ((await this.parseFile(state, name, seq)) !== undefined) return seq + 1;
      }
    }
    return mark + 1;
  }

  /**
   * The high-water mark, unless it lies more than {@link MAX_SEQ_GAP} past the last message (a
   * planted `.seq` must not use the numbers up): then the messages alone decide.
   */
  private sequenceHighWater(state: ChannelState): number {
    const mark = this.readHighWater(state);
    return mark - state.index.maxSeq() > MAX_SEQ_GAP ? 0 : mark;
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
  ): Promise<Message | undefined> {
    return (await this.readFile(state, name, seq)).message;
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
      file = readRootFileSync(path, this.readLimit(state.name) + MAX_FRONTMATTER_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        state.index.forget(seq, name);
        return {};
      }
      return { problem: this.unreadable(state, name, err) };
    }
    // A time in the future (a file from a tarball, a skewed clock) is not "just written": it
    // would stall every reader behind the file for good.
    const age = Date.now() - file.mtimeMs;
    const fresh = age > -CLOCK_SLACK_MS && age < IN_PROGRESS_MS;
    let text: string;
    try {
      text = UTF8.decode(file.data);
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
   * Why a scan waits at a file that does not parse, or undefined to pass it over: one that
   * changed just now, or any while chat.py holds the lock, may still be being written.
   */
  private heldOn(
    state: ChannelState,
    name: string,
    fresh: boolean | undefined,
  ): string | undefined {
    if (fresh === undefined) return undefined; // unreadable, not unparsed: waiting never helps
    if (fresh) return heldText(name, false);
    return referenceLockHeld(state.dir, this.options.staleMs) ? heldText(name, true) : undefined;
  }

  /** Why a file that could not be read is passed over. */
  private unreadable(state: ChannelState, name: string, err: unknown): string {
    if (isAgentChatError(err, "TOO_LARGE")) return this.tooLarge(state, name);
    const code = (err as NodeJS.ErrnoException).code;
    const path = join(state.dir, name);
    const why = isAgentChatError(err) ? err.message.replace(`${path} `, "") : (code ?? err);
    return `${name}: ${why}, skipped`;
  }

  /** Why a file too large for this reader is passed over, and how it could be read. */
  private tooLarge(state: ChannelState, name: string): string {
    const size = lstatSync(join(state.dir, name), { throwIfNoEntry: false })?.size ?? 0;
    return (
      `${name}: ${size} bytes, more than this reader reads (a body of ${this.readLimit(state.name)} ` +
      `bytes: the channel's ${MAX_BODY_KEY}, or the reader's own limit when larger), skipped`
    );
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
    await state.index.sync(false, after + 1);
    if (state.index.leftovers.length > 0) this.removeAbandoned(state);
    const messages: Message[] = [];
    const warnings: string[] = [];
    for (const name of state.index.outOfRange) {
      this.warnOnce(
        `${name}: its number is beyond ${MAX_SEQ}, ignored`,
        (w) => warnings.push(w),
        state.dir,
      );
    }
    for (const name of state.index.aheadOfSequence()) {
      this.warnOnce(
        `${name}: its number is more than ${MAX_SEQ_GAP} past the channel's last message ` +
          `(#${state.index.maxSeq()}), ignored: planted, or numbered after such a file`,
        (w) => warnings.push(w),
        state.dir,
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
        const held = this.heldOn(state, name, read.fresh);
        if (held !== undefined) return { messages, scannedTo, warnings, stalled: true, held };
        this.warnOnce(read.problem, (w) => warnings.push(w), state.dir);
      }
      messages.push(...found);
      scannedTo = seq;
    }
    return { messages, scannedTo, warnings };
  }

  protected async loadCursor(channel: string, agent: string): Promise<number> {
    const dir = join(this.location, channel, CURSORS);
    const name = `${identity(agent)}.txt`;
    let text: string;
    try {
      if (entryKind(dir) !== "dir") return 0; // none yet; a link is never followed
      text = readOwnTextSync(join(dir, name), 32);
    } catch (err) {
      // Longer than any number: no cursor either.
      if (!isAgentChatError(err, "TOO_LARGE")) return 0;
      text = "(more than 32 bytes)";
    }
    const seq = cursorSeq(text);
    if (seq === undefined) throw corruptCursor(channel, agent, `${CURSORS}/${name}`, text);
    return seq;
  }

  /** The last message file's number, or the high-water mark when a post went past it. */
  protected override async seqCeiling(channel: string): Promise<number> {
    const state = this.state(channel);
    await state.index.sync(false, Number.POSITIVE_INFINITY);
    return Math.max(state.index.maxSeq(), this.sequenceHighWater(state));
  }

  protected override readonly checksCursorSaves = false;

  /** A plain file, as chat.py writes it: read back as written, so `move.from` is not checked. */
  protected async saveCursor(channel: string, agent: string, move: CursorMove): Promise<undefined> {
    const dir = join(this.state(channel).dir, CURSORS);
    try {
      ensureRealDir(dir);
      replaceFileSync(dir, `${identity(agent)}.txt`, String(move.to));
    } catch (err) {
      throw wrapIoError(err, `cannot save the cursor of ${agent}`);
    }
  }

  protected async openFeed(channel: string): Promise<FolderFeed> {
    const state = this.state(channel);
    return {
      channel,
      state,
      scan: (after) => this.scan(state, after),
      maxSeq: async () => {
        await state.index.sync(false, Number.POSITIVE_INFINITY);
        return state.index.maxSeq();
      },
      last: (count, before) => this.lastMessages(state, count, before),
      onChange: (listener) => state.index.onMessageChange(listener),
      message: async (seq) => {
        await state.index.sync(false, seq);
        for (const name of state.index.names(seq)) {
          const message = await this.parseFile(state, name, seq);
          if (message) return message;
        }
        return undefined;
      },
      // Loaded on the first search only: no hot command pays for the index code.
      candidates: async (terms) => {
        const secret = await this.indexSecret();
        if (secret === undefined) return undefined; // no index of ours to keep: a scan
        return (await import("./search-index.js")).storedCandidates(
          {
            dir: state.dir,
            channel,
            secret,
            files: async () => {
              await state.index.sync();
              return state.index.after(0);
            },
            parse: (name, seq) => this.parseFile(state, name, seq),
            now: Date.now(),
          },
          terms,
        );
      },
      // The watch reports a file that went (archived by another process) as a change only.
      holds: async () => (seq) =>
        state.index
          .names(seq)
          .some(
            (name) => lstatSync(join(state.dir, name), { throwIfNoEntry: false }) !== undefined,
          ),
    };
  }

  private async lastMessages(
    state: ChannelState,
    count: number,
    before = Number.POSITIVE_INFINITY,
  ): Promise<Message[]> {
    // From a hint when one holds; the whole folder only when the tail it holds is too short.
    await state.index.sync(false, Number.POSITIVE_INFINITY);
    const out = await this.newestKnown(state, count, before);
    if (out.length >= count || state.index.knowsAll()) return out;
    await state.index.sync();
    return this.newestKnown(state, count, before);
  }

  /** The last `count` messages before `before` that the channel's index knows, in seq order. */
  private async newestKnown(state: ChannelState, count: number, before: number) {
    const out: Message[] = [];
    for (const [seq, names] of state.index.descending(0)) {
      if (seq >= before) continue;
      for (const name of names) {
        const message = await this.parseFile(state, name, seq);
        if (message) out.push(message);
      }
      if (out.length >= count) break;
    }
    return out.slice(0, count).reverse();
  }

  /**
   * The sleep-poll safety net behind the file watch: every `intervalMs`, looks for files the
   * watch missed, and wakes the waiter only when that look found something new, or when its
   * last scan stopped before a file that may still be being written. Idle waiters thus cost a
   * timer each, not a scan each, however many of them a daemon holds.
   */
  protected override safetyNet(
    feeds: FolderFeed[],
    intervalMs: number,
    kick: () => void,
  ): SafetyNet {
    const states = feeds.map((feed) => feed.state);
    let versions = states.map((s) => s.index.version);
    let stalled = false;
    const timer = setInterval(() => {
      // A poster of ours killed holding the lock is cleared at once, sparing a chat.py that
      // posts meanwhile the 30 s it would wait before taking the lock over itself.
      for (const state of states) clearDeadOwnerLock(state.dir);
      Promise.all(states.map((state) => state.index.rescanIfChanged().catch(() => {}))).then(() => {
        if (stalled || states.some((state, i) => state.index.version !== versions[i])) kick();
      });
    }, intervalMs);
    return {
      scanned: () => {
        versions = states.map((s) => s.index.version);
      },
      stalledOn: (value: boolean) => {
        stalled = value;
      },
      end: () => clearInterval(timer),
    };
  }

  protected override cursorProblem(channel: string, agent: string): string | undefined {
    const dir = join(this.state(channel).dir, CURSORS);
    const dirKind = entryKind(dir);
    if (dirKind !== undefined && dirKind !== "dir") return `${CURSORS} is not a plain folder`;
    const fileKind = entryKind(join(dir, `${identity(agent)}.txt`));
    if (fileKind === "dir") return `${CURSORS}/${identity(agent)}.txt is a folder`;
    return undefined;
  }

  /**
   * The markers of a channel. One that cannot be read (a link, a FIFO, a huge file, or one
   * claimed or released between the listing and the read) is no task. Each comes with the
   * lease kept beside it in `.task-<id>.lease` (see {@link swapTaskRecord}).
   */
  protected async taskRecords(channel: string): Promise<TaskRecord[]> {
    const dir = this.state(channel).dir;
    const out: TaskRecord[] = [];
    for (const file of await fsp.readdir(dir)) {
      const record = this.readTaskRecord(dir, file);
      if (record) out.push(record);
    }
    return out;
  }

  /**
   * The markers claimed by `holder`, from the channel index as the operation that called this
   * left it (each syncs it first): no folder read of its own.
   */
  protected override async heldTasks(channel: string, holder: string): Promise<TaskRecord[]> {
    const state = this.state(channel);
    const out: TaskRecord[] = [];
    for (const file of state.index.claimedBy(holder)) {
      const record = this.readTaskRecord(state.dir, file);
      if (record?.holder === holder) out.push(record);
    }
    return out;
  }

  /** One marker and its lease; undefined when it is no task marker or cannot be read. */
  private readTaskRecord(dir: string, file: string): TaskRecord | undefined {
    const m = TASK_FILE.exec(file);
    if (!m) return undefined;
    let text: string;
    try {
      text = readRootTextSync(join(dir, file), MAX_TASK_BYTES);
      parseTaskFile(text);
    } catch {
      return undefined;
    }
    const record: TaskRecord = { id: m[1]!, text, version: file };
    if (m[2]) record.holder = m[2];
    this.readLease(dir, record);
    return record;
  }

  private readLease(dir: string, record: TaskRecord): void {
    let text: string;
    try {
      text = readOwnTextSync(join(dir, leaseFileName(record.id)), MAX_LEASE_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      record.problem = `${leaseFileName(record.id)} cannot be read (${(err as Error).message}); ignored`;
      return;
    }
    const { lease, problem } = parseLease(text);
    if (lease) record.lease = lease;
    if (problem !== undefined) record.problem = `${leaseFileName(record.id)}: ${problem}`;
  }

  protected async createTaskRecord(channel: string, id: string, text: string): Promise<boolean> {
    const file = taskFileName(id);
    try {
      await createFileExclusive(this.state(channel).dir, file, text);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw wrapIoError(err, `cannot create ${file}`);
    }
  }

  /**
   * A claim or release renames the marker, as the reference does; the lease goes beside it in
   * `.task-<id>.lease`, a name chat.py ignores, replaced atomically (never written through a
   * link). Both happen under the channel lock ({@link exclusive}), which chat.py's claim takes
   * too. The lease is written first: a crash between the two leaves a lease that names another
   * holder than the marker, which reads as a claim without a lease, never as two holders, and
   * the token it recorded is still the floor of the next grant.
   */
  protected async swapTaskRecord(
    channel: string,
    current: TaskRecord,
    next: { holder: string | undefined; lease: Lease },
  ): Promise<boolean> {
    const dir = this.state(channel).dir;
    const from = join(dir, String(current.version));
    const to = join(dir, taskFileName(current.id, next.holder));
    const verb = next.holder === undefined ? "release" : "claim";
    const moves = next.holder !== current.holder;
    if (moves && next.holder !== undefined && lstatSync(to, { throwIfNoEntry: false })) {
      return false;
    }
    if (!lstatSync(from, { throwIfNoEntry: false })?.isFile()) return false;
    try {
      await replaceFile(dir, leaseFileName(current.id), formatLease(next.lease));
      if (moves) await fsp.rename(from, to);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw wrapIoError(err, `cannot ${verb} task ${current.id}`);
    }
  }

  // ---- chat.py 0.7's structured tasks (tasks/<id>.json, claims/; docs/leases.md) ----
  // A task id with a marker of ours (task-<id>.md) is that marker, as before; one with only a
  // chat.py record is that record, changed in its formats by the board (reference07/board.ts).

  /** The board of the channel when `task` is a structured task there (and no marker of ours). */
  private async boardFor(channel: string, task?: string): Promise<Board | undefined> {
    await this.roster(channel);
    const state = this.state(channel);
    const id = task?.trim();
    if (id !== undefined) {
      if (!hasStructuredTask(state.dir, id) || (await this.taskRecord(channel, id))) return;
    }
    const { Board } = await import("./reference07/index.js");
    return new Board({
      dir: state.dir,
      channel,
      now: () => this.now(),
      post: async (input) => {
        // The audit post is activity too, but its renewals would wait on the mutex held now.
        this.boardPosts++;
        try {
          return await this.post(channel, input);
        } finally {
          this.boardPosts--;
        }
      },
    });
  }

  /** Renews the agent's structured-task leases that are due, unless inside a board change. */
  protected override async keepForeignTaskLeases(channel: string, agent: string): Promise<void> {
    if (this.boardPosts > 0 || !hasClaims(this.state(channel).dir)) return;
    await (await this.boardFor(channel))?.keepAlive(agent);
  }

  /** A structured task's lease: `--ttl`, else the channel's `task_ttl`, else chat.py's 300 s. */
  private async structuredTtl(channel: string, ttlMs: number | undefined): Promise<number> {
    const seconds = (await this.roster(channel))[TASK_TTL_KEY];
    return ttlMs ?? (typeof seconds === "number" && seconds > 0 ? seconds * 1000 : 300_000);
  }

  override async tasks(channel: string, options: TasksOptions = {}): Promise<TaskInfo[]> {
    const ours = await super.tasks(channel);
    const dir = this.state(channel).dir;
    const board = hasTaskRecords(dir) ? await this.boardFor(channel) : undefined;
    const { tasks, problems } = (await board?.list()) ?? { tasks: [], problems: [] };
    for (const p of problems) this.warnOnce(`${p}; not listed`, options.onWarning, channel);
    const marked = new Set(ours.map((t) => t.id));
    return [...ours, ...tasks.filter((t) => !marked.has(t.id))];
  }

  override async claim(channel: string, task: string, agent: string, options: ClaimOptions = {}) {
    const board = await this.boardFor(channel, task);
    if (!board) return super.claim(channel, task, agent, options);
    return board.claim(task.trim(), agent, await this.structuredTtl(channel, options.ttlMs));
  }

  override async renew(channel: string, task: string, agent: string, options: RenewOptions = {}) {
    const board = await this.boardFor(channel, task);
    if (!board) return super.renew(channel, task, agent, options);
    const ttlMs = await this.structuredTtl(channel, options.ttlMs);
    return board.renew(task.trim(), agent, ttlMs, options.token);
  }

  override async done(channel: string, task: string, agent: string, options: DoneOptions = {}) {
    const board = await this.boardFor(channel, task);
    if (!board) return super.done(channel, task, agent, options);
    return board.finish(task.trim(), agent, "done", options.token);
  }

  override async release(
    channel: string,
    task: string,
    agent: string,
    options: ReleaseOptions = {},
  ) {
    const board = await this.boardFor(channel, task);
    if (!board) return super.release(channel, task, agent, options);
    return board.finish(task.trim(), agent, "open", options.token);
  }

  override async fence(channel: string, task: string, token: number): Promise<FenceResult> {
    const board = await this.boardFor(channel, task);
    return board ? board.fence(task.trim(), token) : super.fence(channel, task, token);
  }

  override async createStructuredTask(channel: string, task: NewStructuredTask) {
    if (await this.taskRecord(channel, task.id)) {
      throw new AgentChatError("TASK_EXISTS", `task ${task.id} already exists in ${channel}`);
    }
    return (await this.boardFor(channel))!.create(task);
  }

  override async changeStructuredTask(channel: string, task: string, change: StructuredTaskChange) {
    const board = await this.boardFor(channel, task);
    if (!board)
      throw referenceError(
        "TASK_NOT_FOUND",
        "TASK_NOT_FOUND",
        `no structured task ${task} in ${channel}`,
      );
    if (change.op === "block") return board.block(task.trim(), change.agent);
    if (change.op === "update") return board.update(task.trim(), change.agent, change.fields);
    const ttlMs = await this.structuredTtl(channel, change.ttlMs);
    return board.recover(task.trim(), change.agent, change.reason, ttlMs);
  }

  /** chat.py 0.7's own, for the root this store shares with it. */
  readonly chatpy07: ChatPy07Interop = {
    channelState: (channel, options) => this.channelState(channel, options),
    recoverPending: (channel, options) => this.recoverPending(channel, options),
    refuseWhilePathLocksPending: (channel) => this.refuseWhilePathLocksPending(channel),
  };

  /** chat.py 0.7's `recover-pending` of a lease or path-lock journal (reference07/*pending.ts). */
  private async recoverPending(
    channel: string,
    options: RecoverPendingOptions,
  ): Promise<PendingRecovery> {
    const board = (await this.boardFor(channel)) as Board;
    if (options.kind === "task") return board.recoverPending(options.agent, options.resolve);
    validateName("agent", options.agent);
    return recoverPendingPathLock(this.state(channel).dir, channel, options.resolve);
  }

  private async refuseWhilePathLocksPending(channel: string): Promise<void> {
    await this.roster(channel);
    refuseWhilePending(this.state(channel).dir, channel);
  }

  /** chat.py 0.7's derived summary of the channel, and its `state.md` (reference07/state/). */
  private async channelState(
    channel: string,
    options: ChannelSummaryOptions = {},
  ): Promise<ChannelSummary> {
    await this.roster(channel);
    const host = {
      dir: this.state(channel).dir,
      channel,
      now: () => this.now(),
      post: (input: PostInput) => this.post(channel, input),
    };
    const { channelState } = await import("./reference07/state/index.js");
    return channelState(host, options);
  }

  /**
   * A channel's path leases live in `.leases.json` (a name chat.py ignores), replaced
   * atomically; its text is the version a swap compares, under the channel lock.
   */
  protected async readPathLeases(channel: string): Promise<PathLeaseRecord> {
    const state = this.state(channel);
    this.assertChannelDir(state);
    const text = this.readPathLeaseText(state.dir);
    const doc = parsePathLeases(text);
    doc.leases = withoutEndedByReference(state.dir, doc.leases);
    return { doc, version: text ?? "" };
  }

  protected async swapPathLeases(
    channel: string,
    current: PathLeaseRecord,
    doc: PathLeaseDoc,
  ): Promise<boolean> {
    const dir = this.state(channel).dir;
    if ((this.readPathLeaseText(dir) ?? "") !== current.version) return false;
    try {
      const leases = markRecorded(doc.leases);
      await replaceFile(dir, PATH_LEASES_FILE, formatPathLeases({ ...doc, leases }));
      await syncReferenceLocks(dir, channel, current.doc.leases, leases, this.now(), (c) =>
        this.changeRecord(channel, dir, c),
      );
      return true;
    } catch (err) {
      throw wrapIoError(err, `cannot write the path leases of ${channel}`);
    }
  }

  /**
   * A record of ours created or removed, journaled as chat.py journals its own, its audit message
   * left for {@link pathLeaseExclusive} to post once the channel lock is let go (a post takes it).
   * One journal at a time: a second record changed in one swap (a lease written before records
   * were kept) is written as it was before journals.
   */
  private async changeRecord(channel: string, dir: string, c: RecordChange): Promise<void> {
    if (this.unpublished.has(channel)) {
      const file = `${c.record.lock_id}.json`;
      if (c.after === undefined) removeFileEntry(join(dir, LOCKS_DIR, file));
      else await replaceFile(join(dir, LOCKS_DIR), file, c.after);
      return;
    }
    this.unpublished.set(channel, await applyChange(dir, c));
  }

  /** Each exclusive path lease is written as chat.py 0.7's `locks/agent-chat-<token>.json`. */
  protected override recordsPathLocks(): boolean {
    return true;
  }

  /** chat.py 0.7's path locks (`locks/*.json`) are honoured as its owners' exclusive leases. */
  protected override async foreignPathLeases(channel: string): Promise<PathLease[]> {
    const state = this.state(channel);
    this.assertChannelDir(state);
    const doc = parsePathLeases(this.readPathLeaseText(state.dir));
    return referenceLocks(state.dir, new Set(doc.leases.filter((l) => l.exclusive).map(recordId)));
  }

  /** chat.py 0.7's own locks, unlocked or recovered as it does, under its mutex and journal. */
  override async changePathLock(channel: string, lock: string, change: PathLockChange) {
    const state = this.state(channel);
    this.assertChannelDir(state);
    const host = this.lockHost(channel, state.dir);
    const op =
      change.op === "recover"
        ? { ...change, ttlMs: change.ttlMs ?? REFERENCE_LOCK_TTL_MS }
        : change;
    const { before, after } = await withPathLocksMutex(state.dir, () =>
      changeReferenceLock(host, lock.trim(), op),
    );
    const outcome = change.op === "unlock" ? "released" : "live";
    return {
      before: lockInfo(channel, before, "expired"),
      after: lockInfo(channel, after, outcome),
    };
  }

  /** What a change of a lock record needs of this store. */
  private lockHost(channel: string, dir: string): LockHost {
    return {
      dir,
      channel,
      now: () => this.now(),
      post: (input) => this.postQuietly(channel, input),
      conflicts: (record, owner) => this.lockConflicts(channel, record, owner),
    };
  }

  /** The live leases and locks of others than `owner` over any path of a chat.py lock. */
  private async lockConflicts(channel: string, record: LockRecord, owner: string) {
    const out: string[] = [];
    for (const l of await this.pathLeases(channel)) {
      if (l.lock === record.lock_id || (l.owner ?? l.holder) === owner || l.state !== "live") {
        continue;
      }
      for (const p of record.paths) {
        if (!(await patternsOverlap(leasePattern(p.normalized_path), l.pattern))) continue;
        out.push(
          `${l.holder} holds ${l.pattern} (${l.lock ? `chat.py path lock ${l.lock}` : `token ${l.token}`}, until ${l.expiresAt})`,
        );
        break;
      }
    }
    return out;
  }

  /**
   * Path lease changes hold chat.py 0.7's path-lock mutex first, then the channel lock, as it
   * does; and, as its own, wait while a change of its locks that died half-way is unsettled.
   */
  protected override pathLeaseExclusive<T>(channel: string, fn: () => Promise<T>): Promise<T> {
    const dir = this.state(channel).dir;
    return withPathLocksMutex(dir, async () => {
      refuseWhilePending(dir, channel);
      try {
        return await this.exclusive(channel, fn);
      } finally {
        // A record created in there is published, or put back, before chat.py's mutex goes.
        const change = this.unpublished.get(channel);
        this.unpublished.delete(channel);
        if (change) await publishChange(this.lockHost(channel, dir), change);
      }
    });
  }

  private readPathLeaseText(dir: string): string | undefined {
    try {
      return readOwnTextSync(join(dir, PATH_LEASES_FILE), MAX_PATH_LEASE_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  }

  // ---- Retention (src/store/fs/archive.ts, loaded on first use) ----

  /** Archive and prune (Store.retention). */
  readonly retention: Retention = {
    archive: (channel, options) => this.archive(channel, options),
    prune: (options) => this.prune(options),
  };

  async archive(channel: string, options: ArchiveOptions): Promise<ArchiveResult> {
    await this.roster(channel);
    const state = this.state(channel);
    this.assertChannelDir(state);
    const { archiveChannel } = await import("./archive.js");
    return archiveChannel(
      {
        dir: state.dir,
        channel,
        pinNewest: () => this.pinNewest(state),
        files: async () => {
          await state.index.sync();
          return state.index.after(0);
        },
        parse: (name, seq) => this.parseFile(state, name, seq),
        moved: (seq, name) => {
          state.index.forget(seq, name);
          this.forgetParsed(state, name);
        },
        now: this.now(),
        maxBytes: this.readLimit(channel) + MAX_FRONTMATTER_BYTES,
      },
      options,
    );
  }

  /**
   * Under the seq lock: the newest well-formed message (which archive never moves) and the
   * high-water mark raised to it, so numbering goes on from it whatever is archived.
   */
  private async pinNewest(state: ChannelState): Promise<number> {
    const release = await acquireDirLock(state.dir, this.lockOptions(state));
    try {
      const highest = (await this.allocateSeq(state)) - 1;
      if (highest > this.readHighWater(state)) this.writeHighWater(state, highest);
      for (const [seq, names] of state.index.descending(0)) {
        for (const name of names) {
          if ((await this.parseFile(state, name, seq)) !== undefined) return seq;
        }
      }
      return 0;
    } finally {
      release();
    }
  }

  protected override async archivedMessages(channel: string): Promise<Message[]> {
    const state = this.state(channel);
    this.assertChannelDir(state);
    const { readArchive } = await import("./archive.js");
    return readArchive(
      state.dir,
      channel,
      this.readLimit(channel) + MAX_FRONTMATTER_BYTES,
      () => {},
    );
  }

  /** The user's secret the stored search index is kept under, asked for once per store. */
  private indexSecret(): Promise<string | undefined> {
    this.secret ??=
      this.options.searchIndexSecret?.().catch(() => undefined) ?? Promise.resolve(undefined);
    return this.secret;
  }

  async prune(options: PruneOptions): Promise<PruneResult> {
    checkPruneOptions(options);
    const { pruneChannel } = await import("./archive.js");
    const removed = [];
    const now = this.now();
    const records = presenceFiles(this.location);
    const keep = this.agentsToKeep(records, now, options.olderThanMs);
    for (const channel of await this.channelNames()) {
      const dir = join(this.location, channel);
      // A folder whose name is off our rule is listed with a warning, never changed.
      if (!isChannelName(channel) || entryKind(dir) !== "dir") continue;
      removed.push(...pruneChannel(dir, channel, options, now, keep));
    }
    const presence = prunePresence(records, options, now, keep);
    return { removed, presence, dryRun: options.dryRun === true };
  }

  async close(): Promise<void> {
    await this.settleRecords();
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
        index: new ChannelIndex(dir, this.options.watch ?? true, this.options.tailHintDir),
        lastSeq: 0,
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

  /** Task changes and meta updates hold the channel's lock, as posts do. */
  protected override async exclusive<T>(channel: string, fn: () => Promise<T>): Promise<T> {
    const state = this.state(channel);
    const release = await acquireDirLock(state.dir, this.lockOptions(state));
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
