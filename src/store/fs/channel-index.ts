import {
  existsSync,
  type FSWatcher,
  promises as fsp,
  lstatSync,
  readdirSync,
  statSync,
  watch,
} from "node:fs";
import { join } from "node:path";
import {
  hasOversizedSeq,
  MAX_SEQ,
  MAX_SEQ_GAP,
  MESSAGE_FILE,
  seqOfFileName,
} from "../../core/message.js";
import { LOCK_LEFTOVER_PREFIX } from "../../fsutil/dir-lock.js";
import { TASK_FILE } from "../shared/index.js";
import {
  HINT_MIN_NAMES,
  type Hint,
  loadHint,
  type Stamp,
  sameStamp,
  saveHint,
  settled,
  stampOf,
  TAIL,
} from "./tail-hint.js";

/**
 * Which message files a channel folder holds, by seq, without re-reading the folder on every
 * operation: one `readdir` when first needed, then kept current by an OS file watch that names
 * each file as it appears (a `readdir` of 100,000 entries costs ~100 ms; an event ~0.1 ms).
 *
 * Correctness rests on {@link sync}: inotify queues an event inside the system call that made
 * the change, so after two turns of the event loop every change made before `sync` was called
 * has been applied. Where no watch can be had, every `sync` re-reads the folder.
 */
export class ChannelIndex {
  private readonly bySeq = new Map<number, string[]>();
  /** The keys of {@link bySeq}, ascending: range queries and the maximum without a full pass. */
  private seqs: number[] = [];
  /**
   * How many of {@link seqs} belong to the sequence: those before the first gap wider than
   * {@link MAX_SEQ_GAP}; the rest are planted (see {@link aheadOfSequence}). Worked out again
   * only for what changed: appends, the usual case, are checked one by one.
   */
  private inSequence = { of: this.seqs, checked: 0, count: 0 };
  /**
   * The lowest number this index knows every file of: 0 after a full listing; the first number
   * of the tail when the index was taken from a hint ({@link fromHint}), whose earlier numbers
   * it does not know.
   */
  private partialFrom = 0;
  /** The stamp of the hint the index was taken from, while it holds; undefined after a listing. */
  private hinted: Stamp | undefined;
  /** How many message files lie before the tail taken from a hint (0 after a listing). */
  private before = 0;
  /** A poll-driven rescan under way, shared by every waiter that polls meanwhile. */
  private polling: Promise<void> | undefined;
  private lastPollAt = 0;
  /** Counts changes to the set of message files, so that a poll can tell whether it found any. */
  version = 0;
  private watcher: FSWatcher | undefined;
  private rescanning: Promise<void> | undefined;
  private fresh = false;
  private watching = false;
  private lastScanStartedAt = 0;
  /**
   * Names reported by the watch while a rescan's readdir is under way (it may predate them), one
   * list per rescan: waits poll independently, so several rescans of one folder can overlap.
   */
  private readonly seenDuringScans = new Set<string[]>();
  private readonly listeners = new Set<(name: string | undefined) => void>();
  /** Dot-files left by crashed writers, seen by the last scan. */
  leftovers: string[] = [];
  /** Names shaped like messages whose number is past MAX_SEQ: never messages, reported once. */
  readonly outOfRange = new Set<string>();
  /** Claimed task markers (`task-<id>.CLAIMED-<holder>.md`), for renewal by the holder's activity. */
  private readonly claimed = new Set<string>();

  constructor(
    private readonly dir: string,
    private readonly useWatch: boolean,
    /** The user's folder of tail hints (tail-hint.ts), for a store without file watches. */
    private readonly hintDir?: string,
  ) {}

  /**
   * Brings the index up to date with every change made before this call. Without a watch,
   * `exact` lists the folder whatever its mtime says (see {@link unchangedSinceScan}): a post's
   * number is allocated so, under the lock. `from` is the lowest number the caller will ask
   * about: a fresh process that needs only the newest messages may then take them from a hint
   * (the folder unchanged since a full listing, see tail-hint.ts) instead of listing the folder.
   */
  async sync(exact = false, from = 0): Promise<void> {
    if (this.useWatch && !this.watching) this.startWatch();
    if (this.watching && this.fresh) {
      await drainEvents();
      if (this.fresh) return;
    }
    if (!this.watching) {
      if (!exact && this.fromHint(from)) return;
      if (!exact && !this.useWatch && this.unchangedSinceScan()) return;
      return this.rescan();
    }
    // With the watch on, what happens after a readdir began is caught by the watch, so callers
    // arriving meanwhile (thousands of waits starting at once) share that one readdir.
    this.rescanning ??= this.rescan().finally(() => {
      this.rescanning = undefined;
    });
    await this.rescanning;
  }

  /**
   * Whether the index holds every file from number `from` up, taken from the hint kept for this
   * folder (or already taken from it, the folder unchanged since). False sends the caller to a
   * full listing: no hint here, one kept under another stamp (anything created, renamed or
   * removed in the folder since), one that fails a check, or one whose tail begins after `from`.
   */
  private fromHint(from: number): boolean {
    if (this.hintDir === undefined || this.useWatch || this.fresh) return false;
    const now = stampOf(this.dir);
    if (now === undefined) return false;
    if (this.hinted === undefined) {
      const hint = loadHint(this.hintDir, this.dir, now);
      if (!hint || !this.adopt(hint)) return false;
    } else if (!sameStamp(this.hinted, now)) {
      return false;
    }
    return from >= this.partialFrom;
  }

  /** Takes the index from a hint whose newest file is still there. */
  private adopt(hint: Hint): boolean {
    const newest = hint.names.at(-1);
    if (newest !== undefined && !isFile(join(this.dir, newest))) return false;
    this.bySeq.clear();
    this.claimed.clear();
    this.leftovers = [];
    for (const name of hint.names) {
      const seq = Number.parseInt(name, 10);
      const same = this.bySeq.get(seq);
      if (!same) this.bySeq.set(seq, [name]);
      else if (!same.includes(name)) same.push(name);
    }
    for (const name of hint.claimed) this.claimed.add(name);
    this.seqs = [...this.bySeq.keys()].sort((a, b) => a - b);
    this.partialFrom = hint.complete ? 0 : (this.seqs[0] ?? 0);
    this.before = hint.count - hint.names.length;
    this.hinted = hint.stamp;
    this.version++;
    return true;
  }

  /**
   * After a full listing that no change can have escaped (the folder's stamp the same before and
   * after it, and settled before it began), keeps its tail as the hint for the next process: only
   * for a folder large enough to be worth it, and one the listing found nothing odd in.
   */
  private keepHint(before: Stamp, startedAt: number): void {
    if (this.hintDir === undefined || this.seqs.length < HINT_MIN_NAMES) return;
    if (!settled(before, startedAt) || !sameStamp(before, stampOf(this.dir))) return;
    const end = this.sequenceLength();
    if (end !== this.seqs.length || this.leftovers.length > 0 || this.outOfRange.size > 0) return;
    const start = Math.max(0, end - TAIL);
    const names = this.seqs.slice(start, end).flatMap((seq) => this.bySeq.get(seq) ?? []);
    const claimed = [...this.claimed];
    const count = this.count();
    saveHint(this.hintDir, this.dir, {
      names,
      complete: start === 0,
      claimed,
      count,
      stamp: before,
    });
  }

  /**
   * Without a watch (a command that ends once it has answered), whether the folder's mtime
   * proves that no entry came or went since the last full scan began (mtimes are coarse, hence
   * the one-second margin): a command that looks at a channel twice (its last seq, then its
   * messages) then lists it once. A folder whose mtime was set back can only hide a message
   * from that one look (the cursor never passes what was not listed); never from a post's
   * allocation, which always lists.
   */
  private unchangedSinceScan(): boolean {
    if (!this.fresh) return false;
    try {
      return statSync(this.dir).mtimeMs < this.lastScanStartedAt - 1000;
    } catch {
      return false; // the rescan says what is wrong
    }
  }

  /**
   * The safety net behind the watch: re-reads the folder unless its mtime proves nothing changed
   * since the last full scan began (mtimes are coarse, hence the one-second margin).
   */
  rescanIfChanged(): Promise<void> {
    // Many waiters poll on their own timers; one look per channel every POLL_GAP_MS serves all.
    if (!this.polling && Date.now() - this.lastPollAt < POLL_GAP_MS) return Promise.resolve();
    this.polling ??= (async () => {
      this.lastPollAt = Date.now();
      try {
        const st = await fsp.stat(this.dir);
        if (this.fresh && st.mtimeMs < this.lastScanStartedAt - 1000) return;
      } catch {
        // The folder is gone: the rescan reports it.
      }
      await this.rescan();
    })().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  async rescan(): Promise<void> {
    const startedAt = Date.now();
    const keep = this.hintDir !== undefined && !this.useWatch;
    const before = keep ? stampOf(this.dir) : undefined;
    const hadHint = this.hinted;
    const seenDuringScan: string[] = [];
    this.seenDuringScans.add(seenDuringScan);
    let names: string[];
    try {
      names = await listFolder(this.dir, !this.useWatch);
      // A file created while the readdir ran can be missing from it (a large folder is read in
      // several calls) while its watch event is still queued. Letting the watch deliver what it
      // has before the index is rebuilt keeps the index from holding a message without an
      // earlier one that exists, which a scan would pass over for good.
      if (this.watching) await drainEvents();
    } finally {
      this.seenDuringScans.delete(seenDuringScan);
    }
    names.push(...seenDuringScan);
    const size = this.bySeq.size;
    const known = new Set([...this.bySeq.values()].flat());
    if (names.some((n) => !known.has(n) && seqOfFileName(n) !== undefined)) this.version++;
    this.rebuild(names);
    this.seqs = [...this.bySeq.keys()].sort((a, b) => a - b);
    if (this.bySeq.size !== size) this.version++;
    this.lastScanStartedAt = startedAt;
    this.fresh = true;
    this.partialFrom = 0;
    this.before = 0;
    this.hinted = undefined;
    // A hint kept under this very stamp only lacked what the caller asked for: it stays.
    if (before && !sameStamp(before, hadHint)) this.keepHint(before, startedAt);
  }

  /** The index made anew from a full listing of the folder. */
  private rebuild(names: readonly string[]): void {
    this.bySeq.clear();
    this.claimed.clear();
    this.leftovers = [];
    for (const name of names) {
      // A message, in this loop itself: every command lists a folder of thousands of them, and
      // a test and a parseInt here cost half what an exec in a call per name does (cold code).
      // The same as `seqOfFileName`: digits before a `-`, so parseInt reads just them.
      const seq = MESSAGE_FILE.test(name) ? Number.parseInt(name, 10) : Number.NaN;
      if (seq <= MAX_SEQ) {
        const same = this.bySeq.get(seq);
        if (!same) this.bySeq.set(seq, [name]);
        else if (!same.includes(name)) same.push(name);
      } else if (name.startsWith(".tmp-") || name.startsWith(LOCK_LEFTOVER_PREFIX)) {
        // Temporary files and lock owners a killed process could not finish removing.
        this.leftovers.push(name);
      } else this.insert(name, false);
    }
  }

  /** Seqs above `after`, ascending, with their file names (normally one each). */
  after(after: number): Array<[number, string[]]> {
    const out: Array<[number, string[]]> = [];
    const end = this.sequenceLength();
    for (let i = firstAbove(this.seqs, after); i < end; i++) {
      const seq = this.seqs[i]!;
      out.push([seq, this.bySeq.get(seq)!]);
    }
    return out;
  }

  /** Seqs above `after`, descending. */
  descending(after: number): Array<[number, string[]]> {
    return this.after(after).reverse();
  }

  /** How many message files the folder holds (numbers planted far past the sequence aside). */
  count(): number {
    return this.after(0).reduce((n, [, names]) => n + names.length, this.before);
  }

  /** Whether the index knows every file of the folder (not only a tail taken from a hint). */
  knowsAll(): boolean {
    return this.partialFrom <= 1;
  }

  /** The files that carry the number `seq` (normally one; none when there is none). */
  names(seq: number): readonly string[] {
    return this.bySeq.get(seq) ?? [];
  }

  /** Whether any file, well-formed or not, carries the number `seq`. */
  holds(seq: number): boolean {
    return this.bySeq.has(seq);
  }

  /** The last number of the sequence (numbers planted far past it aside). */
  maxSeq(): number {
    return this.seqs[this.sequenceLength() - 1] ?? 0;
  }

  /** The files whose number lies more than {@link MAX_SEQ_GAP} past the sequence: never messages. */
  aheadOfSequence(): string[] {
    return this.seqs.slice(this.sequenceLength()).flatMap((seq) => this.bySeq.get(seq) ?? []);
  }

  private sequenceLength(): number {
    let { of, checked, count } = this.inSequence;
    // Anything but appends to the array last checked (a rescan, a file forgotten): start over.
    if (of !== this.seqs || checked > this.seqs.length) {
      [of, checked, count] = [this.seqs, 0, 0];
    }
    for (; checked < this.seqs.length && count === checked; checked++) {
      // A tail taken from a hint begins where it begins: its first number is in sequence.
      const previous = checked === 0 ? this.partialFrom : this.seqs[checked - 1]!;
      if (this.seqs[checked]! - previous <= MAX_SEQ_GAP) count++;
    }
    this.inSequence = { of, checked, count };
    return count;
  }

  /** Forgets a file that turned out to be gone. */
  forget(seq: number, name: string): void {
    const names = this.bySeq.get(seq);
    if (!names) return;
    const rest = names.filter((n) => n !== name);
    if (rest.length > 0) {
      this.bySeq.set(seq, rest);
      return;
    }
    this.bySeq.delete(seq);
    const i = firstAbove(this.seqs, seq - 1);
    if (this.seqs[i] === seq) this.seqs.splice(i, 1);
    this.inSequence.checked = Number.POSITIVE_INFINITY; // not an append: count again
  }

  /**
   * Adds a file this process has just written (its own watch event may still be queued), and
   * tells this process's listeners at once: a waiter in the same process (a daemon's) then wakes
   * without waiting for the watch to report it.
   */
  add(name: string): void {
    this.insert(name, true);
    this.notify(name);
  }

  /** The claimed markers of `holder` (its identity) as last seen. */
  claimedBy(holder: string): string[] {
    const suffix = `.CLAIMED-${holder}.md`;
    return [...this.claimed].filter((name) => name.endsWith(suffix));
  }

  private insert(name: string, keepOrder: boolean): void {
    const seq = seqOfFileName(name);
    if (seq === undefined) {
      if (hasOversizedSeq(name)) this.outOfRange.add(name);
      else if (TASK_FILE.exec(name)?.[2] !== undefined) this.trackMarker(name, keepOrder);
      return;
    }
    const names = this.bySeq.get(seq);
    if (names) {
      if (!names.includes(name)) {
        names.push(name);
        if (keepOrder) this.version++;
      }
      return;
    }
    this.bySeq.set(seq, [name]);
    if (!keepOrder) return; // a rescan rebuilding the index: it counts its own changes
    this.version++;
    // Messages arrive in seq order, so this is almost always an append.
    if (seq > (this.seqs.at(-1) ?? -1)) this.seqs.push(seq);
    else {
      this.seqs.splice(firstAbove(this.seqs, seq), 0, seq);
      this.inSequence.checked = Number.POSITIVE_INFINITY; // not an append: count again
    }
  }

  /** A marker seen by a rescan exists; one named by the watch may have been renamed away. */
  private trackMarker(name: string, fromWatch: boolean): void {
    if (!fromWatch || existsSync(join(this.dir, name))) this.claimed.add(name);
    else this.claimed.delete(name);
  }

  /**
   * Calls `listener` with the file's name whenever a file of the folder appears, changes or goes
   * (undefined when the system could not say which); returns the unsubscribe function.
   */
  onChange(listener: (name: string | undefined) => void): () => void {
    if (this.useWatch && !this.watching) this.startWatch();
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves when the watch reports that the file `name` is gone (or a change of an unknown file),
   * or after `ms` at the latest.
   */
  nextChange(name: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        off();
        resolve();
      };
      const timer = setTimeout(done, ms);
      const off = this.onChange((changed) => {
        // The name's creation says nothing to a waiter; only its removal does.
        if (changed === undefined || (changed === name && !existsSync(join(this.dir, name)))) {
          done();
        }
      });
    });
  }

  /** Calls `listener` when a message file (or an unknown file) appears or changes. */
  onMessageChange(listener: () => void): () => void {
    return this.onChange((name) => {
      if (name === undefined || seqOfFileName(name) !== undefined) listener();
    });
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.watching = false;
    this.fresh = false;
  }

  private startWatch(): void {
    try {
      const watcher = watch(this.dir, { persistent: false }, (_event, name) => {
        if (typeof name !== "string") {
          this.fresh = false;
          this.notify(undefined);
          return;
        }
        this.insert(name, true);
        for (const seen of this.seenDuringScans) seen.push(name);
        this.notify(name);
      });
      watcher.on("error", () => {
        this.close();
        this.notify(undefined);
      });
      this.watcher = watcher;
      this.watching = true;
    } catch {
      // No watch here (no inotify, limits reached): every sync re-reads the folder.
      this.watching = false;
    }
  }

  private notify(name: string | undefined): void {
    for (const listener of this.listeners) listener(name);
  }
}

/**
 * A folder's names. `sync` is for a store without file watches, that of a process which ends once
 * it has answered (a CLI command): it reads the folder once or twice, and a synchronous read
 * spares it starting the thread pool (and loading `fs.promises`) for them.
 */
export function listFolder(dir: string, sync: boolean): Promise<string[]> {
  return sync ? Promise.resolve().then(() => readdirSync(dir)) : fsp.readdir(dir);
}

/** Whether `path` is a plain file (not a link to one); false when it cannot be looked at. */
function isFile(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

/** The shortest time between two poll-driven looks at one folder. */
const POLL_GAP_MS = 250;

/** The index of the first element of the ascending `sorted` that is greater than `value`. */
function firstAbove(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! > value) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Two turns of the event loop: the first may end before the poll phase reads the watch. */
function drainEvents(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
