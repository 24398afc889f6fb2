import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import type {
  ArchiveOptions,
  ArchiveResult,
  PeekOptions,
  PruneOptions,
  PruneResult,
  SearchOptions,
  SearchResult,
  ThreadNode,
  ThreadOptions,
} from "./find-types.js";

export type * from "./find-types.js";

/**
 * The Store contract (docs/design.md §4). Every backend offers these operations with the same
 * meaning; `test/conformance/` holds the one suite that proves it for each backend.
 */
export interface Store {
  /** What this backend can do beyond the contract, as data. */
  readonly capabilities: Capabilities;
  /** Where it keeps its data: a folder path or a URL without credentials. */
  readonly location: string;

  init(channel: string, options?: InitOptions): Promise<ChannelMeta>;
  channels(options?: ChannelsOptions): Promise<ChannelInfo[]>;
  roster(channel: string): Promise<ChannelMeta>;
  /** Allocates the next sequence number atomically and writes the message. */
  post(channel: string, input: PostInput): Promise<PostResult>;
  /** Relevant messages after the cursor; advances the cursor to the largest seq this scan saw. */
  read(channel: string, options: ReadOptions): Promise<ReadResult>;
  /** The last `count` messages of a channel, whoever they were for; moves no cursor. */
  peek(channel: string, count?: number, options?: PeekOptions): Promise<Message[]>;
  /** The agent's cursor in a channel (0 when it has never read). */
  cursor(channel: string, agent: string): Promise<number>;
  /** Blocks until a relevant message exists in one of the channels, then reads it. */
  wait(channels: readonly string[], options: WaitOptions): Promise<WaitResult>;
  /** Every new message of the given channels, as it appears, until the signal aborts. */
  watch(channels: readonly string[], options?: WatchOptions): AsyncIterable<Message>;

  addTask(channel: string, task: NewTask): Promise<TaskInfo>;
  /** Every task of the channel; `onWarning` hears of each record that could not be read. */
  tasks(channel: string, options?: TasksOptions): Promise<TaskInfo[]>;
  /** One task, as `tasks` lists it (`TASK_NOT_FOUND` when the channel has none by that id). */
  task(channel: string, task: string): Promise<TaskInfo>;
  /**
   * Grants a lease on an open or expired task: exactly one claimant wins and gets the next
   * fencing token (`token`, 1, 2, … per task, never reused); the others get `CLAIM_LOST`.
   */
  claim(channel: string, task: string, agent: string, options?: ClaimOptions): Promise<TaskInfo>;
  /** Extends the holder's live lease (`NOT_HOLDER` for anyone else or a stale token). */
  renew(channel: string, task: string, agent: string, options?: RenewOptions): Promise<TaskInfo>;
  /** Ends a task: only the holder of the live lease (`NOT_HOLDER` otherwise). */
  done(channel: string, task: string, agent: string, options?: DoneOptions): Promise<TaskInfo>;
  /** Only the holder may give a claim back (`NOT_HOLDER` otherwise). */
  release(
    channel: string,
    task: string,
    agent: string,
    options?: ReleaseOptions,
  ): Promise<TaskInfo>;
  /** Whether `token` is the task's current live grant: a script checks before it acts. */
  fence(channel: string, task: string, token: number): Promise<FenceResult>;
  /**
   * Creates a chat.py 0.7 structured task (`tasks/<id>.json`, folder roots only): one that
   * chat.py lists, shows and leases, and that `claim`, `renew`, `done` and `release` take too.
   */
  createStructuredTask(channel: string, task: NewStructuredTask): Promise<TaskInfo>;
  /** Blocks, updates, or recovers the expired lease of, a structured task (chat.py's grammar). */
  changeStructuredTask(
    channel: string,
    task: string,
    change: StructuredTaskChange,
  ): Promise<TaskInfo>;

  /**
   * Optional (folder roots, which chat.py 0.7 shares): what only its formats and journals have,
   * beyond what every store does with them (docs/state.md, docs/leases.md).
   */
  readonly chatpy07?: ChatPy07Interop;

  /**
   * Reserves the paths a repository-relative glob covers (docs/leases.md): a lease with its own
   * fencing token. An exclusive lease that overlaps another agent's live lease (or a shared one
   * that overlaps an exclusive one) is refused with `CLAIM_LOST` naming them, unless `force`.
   * The holder asking again for a pattern it holds renews that lease.
   */
  addPathLease(
    channel: string,
    pattern: string,
    agent: string,
    options?: PathLeaseOptions,
  ): Promise<PathLeaseInfo>;
  /** The channel's path leases, live and recently expired, by token. */
  pathLeases(channel: string): Promise<PathLeaseInfo[]>;
  /** Extends the holder's live path lease (`lease`: its token, or its pattern). */
  renewPathLease(
    channel: string,
    lease: string,
    agent: string,
    options?: RenewOptions,
  ): Promise<PathLeaseInfo>;
  /** Gives a path lease back: only its holder, while it is live (`NOT_HOLDER` otherwise). */
  releasePathLease(
    channel: string,
    lease: string,
    agent: string,
    options?: ReleaseOptions,
  ): Promise<PathLeaseInfo>;
  /**
   * Unlocks (its owner) or recovers (anyone, once it ended, with a reason) a path lock chat.py
   * 0.7 made, `locks/<lock>.json`, as chat.py does (folder roots only; `NOT_FOUND` elsewhere).
   * Answers with the lock as it was before the change and as it is after.
   */
  changePathLock(
    channel: string,
    lock: string,
    change: PathLockChange,
  ): Promise<{ before: PathLeaseInfo; after: PathLeaseInfo }>;

  /**
   * Optional: rewrites a channel's `_meta.json` atomically, excluded from other writers (on the
   * folder store: under the channel's seq lock, then an atomic rename). `update` receives the
   * current meta and returns the next; only keys of ours may change: the reference's four keys
   * (`channel`, `members`, `topic`, `created`) are kept as they were. Used by the governance
   * profile (`agent-chat govern`). The folder store, NATS (a compare-and-set on the meta record)
   * and the daemon's client (`update_meta`) have it; a store without it cannot change a channel
   * after `init` and says so (`UNSUPPORTED`).
   */
  updateMeta?(channel: string, update: (meta: ChannelMeta) => ChannelMeta): Promise<ChannelMeta>;

  // ---- Delivery and presence (docs/delivery.md) ----

  /** Each addressee of message `seq`: stored, notified, read or answered, with times. */
  receipts(channel: string, seq: number, options?: WhoOptions): Promise<Receipts>;
  /** Receipts with, per addressee short of answered, what is known of why (`why`). */
  explain(channel: string, seq: number, options?: WhoOptions): Promise<Receipts>;
  /**
   * Parks until every addressee of `seq` reached `state` (or a later one), then returns the
   * receipts; `TIMEOUT` (naming who has not, and why) or `ABORTED` otherwise.
   */
  waitFor(channel: string, seq: number, options: WaitForOptions): Promise<Receipts>;
  /** Records that `agent`'s session was told messages up to `seq` wait for it (monotone). */
  notify(channel: string, agent: string, seq: number): Promise<void>;
  /** What is known of each agent: a channel's members (and those seen in it), or everyone. */
  who(channel?: string, options?: WhoOptions): Promise<PresenceInfo[]>;
  /**
   * Records activity as `agent` (its presence) and nothing else: what a hook run that found
   * nothing to tell does. Never fails for want of recording (docs/delivery.md).
   */
  touch?(agent: string): Promise<void>;
  /**
   * Keeps `agent`'s signed read receipt in the channel (docs/delivery.md): what proves `read`
   * where signatures are required. A receipt not further than the one kept changes nothing.
   */
  attestRead?(channel: string, agent: string, receipt: SignedReadReceipt): Promise<void>;
  /** Messages whose title or body match `query`, newest first (docs/search.md). */
  search(query: string, options?: SearchOptions): Promise<SearchResult>;
  /** The thread message `seq` belongs to: its root with every reply under it, by `reply_to`. */
  thread(channel: string, seq: number, options?: ThreadOptions): Promise<ThreadNode>;
  /**
   * Optional (the folder store and NATS, not through a daemon): archive and prune
   * (docs/search.md).
   */
  readonly retention?: Retention;
  /**
   * Optional: where a root with no folder (NATS) publishes public keys (docs/signatures.md);
   * a folder root keeps them in `.keys/`.
   */
  readonly publishedKeys?: PublishedKeyDirectory;

  close(): Promise<void>;
}

/** Keeping a root small: old messages archived, gone agents' records pruned (`Store.retention`). */
export interface Retention {
  /**
   * Moves old messages where chat.py does not look (on NATS: exports them to a folder, then
   * purges them), losing none and numbering on.
   */
  archive(channel: string, options: ArchiveOptions): Promise<ArchiveResult>;
  /** Removes the cursors and presence records of agents not seen for a while. */
  prune(options: PruneOptions): Promise<PruneResult>;
}

/**
 * What a store that shares its root with chat.py 0.7 offers of chat.py's own (`Store.chatpy07`):
 * one handle, so that the contract of every store does not carry it.
 */
export interface ChatPy07Interop {
  /**
   * chat.py 0.7's derived summary of a channel (docs/state.md): its topic, decisions, open
   * tasks, blockers, owners, path locks and verification evidence, as chat.py's `state` renders
   * them; with `write`, its `state.md` replaced atomically and the `state.compacted` message
   * posted; with `saved`, the `state.md` last written, as it is.
   */
  channelState(channel: string, options?: ChannelSummaryOptions): Promise<ChannelSummary>;

  /**
   * chat.py 0.7's `recover-pending`. A change of its task leases (`kind: "task"`) or path locks
   * (`kind: "path"`) that died half-way, its journal left behind, is undone, or, if its message
   * was posted, its journal cleaned up (docs/leases.md); until then every such change there is
   * refused. For tasks `NOT_FOUND` when nothing is pending.
   */
  recoverPending(channel: string, options: RecoverPendingOptions): Promise<PendingRecovery>;

  /**
   * Refuses (`TASK_INCONSISTENT`, whose reference is chat.py's `PATH_LOCK_TRANSACTION_PENDING`)
   * while a change of chat.py 0.7's path locks in the channel died half-way, as chat.py's
   * `check` does: which locks hold is not known until `recover-pending` settles it. Every
   * path-lease change refuses so by itself.
   */
  refuseWhilePathLocksPending(channel: string): Promise<void>;
}

/** Published key files by name, each written only over the revision its writer read. */
export interface PublishedKeyDirectory {
  /** The file's text and revision, undefined when the name has none. */
  get(name: string): Promise<{ text: string; revision: number } | undefined>;
  /** Writes when the file is still at `revision` (0: absent); false when someone wrote first. */
  put(name: string, text: string, revision: number): Promise<boolean>;
}

export interface Capabilities {
  /** Several machines can share the data. */
  multiHost: boolean;
  /** The data is the SPEC folder that the reference `chat.py` reads and writes. */
  specFolder: boolean;
}

export interface InitOptions {
  members?: readonly string[];
  topic?: string;
  /** Keys of ours, written after the reference's keys in `_meta.json`. */
  extra?: Record<string, unknown>;
}

export interface ChannelsOptions {
  /**
   * Hears, once per store, why a channel was left out of the list (a corrupt `_meta.json`, a
   * channel folder that is a link): one bad channel never hides the others.
   */
  onWarning?: (warning: string) => void;
}

export interface ChannelInfo {
  name: string;
  topic: string;
  members: string[];
  created: string;
  /** The largest sequence number in the channel (0 when empty). */
  lastSeq: number;
  /** How many messages it holds, where that is known at no cost (folder roots). */
  messages?: number;
}

export interface PostInput {
  from: string;
  body: string;
  /** Defaults to the first line of the body. */
  title?: string;
  /** A name, a comma list or a list; default `all` (broadcast). */
  to?: string | readonly string[];
  replyTo?: number;
  status?: string;
  /** Extra one-line frontmatter fields (e.g. `metadata` of a b00t envelope). */
  extra?: Record<string, string>;
  /**
   * Signs the message as written, for the `sig` line (docs/signatures.md). In-process only: a
   * function does not cross the daemon's socket, so a signed post goes to the store itself.
   */
  signer?: PostSigner;
}

export interface PostSigner {
  /** The public key, base64url. */
  key: string;
  /** The signature of `text` (UTF-8), base64url. */
  sign(text: string): string;
}

export interface PostResult {
  seq: number;
  channel: string;
  file: string;
}

export interface ReadOptions {
  /** Who reads: relevance and the cursor are that agent's. */
  as: string;
  /** Start from the beginning instead of the cursor. */
  all?: boolean;
  /**
   * Every message, whoever it is for, instead of only those relevant to `as` (the reference's
   * `read --all` shows the whole channel). The cursor moves as for any read.
   */
  everyone?: boolean;
  /** Do not advance the cursor. */
  peek?: boolean;
  /** Return no more than this; the cursor then stops before the first message left out. */
  limit?: ReadLimit;
}

/**
 * A bound on what one read or wait returns (an MCP tool result lands in a model's context). The
 * first message is returned whatever its size, so that a read always makes progress.
 */
export interface ReadLimit {
  /** The most messages. */
  messages?: number;
  /** The most UTF-8 bytes of titles and bodies together. */
  bytes?: number;
}

export interface ReadResult {
  channel: string;
  messages: Message[];
  /** The cursor after this read. */
  cursor: number;
  /** Files that look like messages but cannot be parsed; each is reported once. */
  warnings: string[];
  /** With a `limit`: how many messages it left for the next read (absent: none). */
  more?: number;
}

export interface WaitOptions {
  as: string;
  /** Give up after this long (default {@link DEFAULT_WAIT_TIMEOUT_MS}); rejects with code `TIMEOUT`. */
  timeoutMs?: number;
  /** The sleep-poll safety net that catches anything the file watch missed (default 2 s). */
  intervalMs?: number;
  signal?: AbortSignal;
  /**
   * While parked, the wait is the agent's activity and renews its leases; once this signal
   * aborts it no longer does (it still waits). The daemon aborts it when its client's side of
   * the connection ends: a client that died and one that only stopped sending look alike.
   */
  activity?: AbortSignal;
  /**
   * Hears each warning as the parked wait meets it (a file passed over: too large for this
   * reader, not a message), instead of only with the messages it returns (through a daemon,
   * as its `warning` events).
   */
  onWarning?: (warning: string) => void;
  /** Return no more than this, across the channels (see {@link ReadLimit}). */
  limit?: ReadLimit;
  /**
   * Hears the answer as soon as it may be handed over, before the wait returns: on a backend
   * whose cursor save cannot be refused (the folder store, a plain file as chat.py writes it)
   * before the cursors are saved, so a caller can print first; on one that checks the save
   * (NATS, through a daemon) once it landed. A crash between the answer and the save leaves the
   * cursors where they were: the next read or wait hands the same messages again (at least
   * once, docs/guarantees.md). The wait still returns the same answer.
   */
  onAnswer?: (result: WaitResult) => void;
}

export interface WaitResult {
  /** The relevant messages found, across the channels, in channel then seq order. */
  messages: Message[];
  /** Cursor per channel after the wait. */
  cursors: Record<string, number>;
  warnings: string[];
  /** With a `limit`: how many messages it left for the next read or wait (absent: none). */
  more?: number;
}

export interface WatchOptions {
  signal?: AbortSignal;
  /** Yield messages with seq greater than this (default: the channel's current last seq). */
  after?: number | Record<string, number>;
  intervalMs?: number;
}

export interface NewTask {
  /** Task id; default: one more than the largest numeric id. */
  id?: string;
  title: string;
  body?: string;
  from: string;
}

/**
 * `open`: nobody holds it. `claimed`: a live lease (or a claim by the reference `chat.py`, with
 * no lease, which never expires). `expired`: the holder's lease ran out; anyone may claim it.
 * `done`: finished.
 */
export type TaskState = "open" | "claimed" | "expired" | "done";

export interface TaskInfo {
  id: string;
  channel: string;
  state: TaskState;
  /** Claimed: the claimant's identity; expired: who held it; done: who finished it. */
  holder?: string;
  /** The fencing token of the current (claimed) or last (expired, done, open) grant. */
  token?: number;
  /** When the lease ends (claimed) or ended (expired), ISO-8601. None for a chat.py claim. */
  expiresAt?: string;
  /** Done: when, and the finisher's note. */
  doneAt?: string;
  note?: string;
  title: string;
  file: string;
  /** Why the task's lease state could not be read (a corrupt lease file), reported once. */
  warning?: string;
  /** A chat.py 0.7 structured task (`tasks/<id>.json`, docs/leases.md): its record. */
  structured?: StructuredTaskFields;
}

/** The fields of a chat.py 0.7 task record beyond those every task has. */
export interface StructuredTaskFields {
  status: "open" | "in_progress" | "blocked" | "done" | "cancelled";
  owner: string | null;
  createdBy: string;
  dependsOn: string[];
  filesHint: string[];
  acceptance: string[];
  leaseExpiresAt: string | null;
  branch: string | null;
  updatedAt: string;
}

/** A chat.py 0.7 structured task to create (`task create`). */
export interface NewStructuredTask {
  id: string;
  title: string;
  from: string;
  owner?: string;
  dependsOn?: string[];
  filesHint?: string[];
  acceptance?: string[];
  branch?: string;
}

/** The changes of a structured task that are not a claim, renewal, finish or release. */
export type PathLockChange =
  | { op: "unlock"; agent: string }
  | { op: "recover"; agent: string; reason: string; ttlMs?: number };

export type StructuredTaskChange =
  | { op: "block"; agent: string }
  | { op: "recover"; agent: string; reason: string; ttlMs?: number }
  | { op: "update"; agent: string; fields: StructuredTaskUpdate };

/**
 * chat.py's `task update`: the fields to change (absent: kept; `null`: cleared). A leased task
 * is its holder's to update, and its owner and status move only with the lease.
 */
export interface StructuredTaskUpdate {
  title?: string;
  owner?: string | null;
  dependsOn?: string[];
  filesHint?: string[];
  acceptance?: string[];
  branch?: string | null;
  status?: string;
}

export interface RecoverPendingOptions {
  /** The task lease journal (`task recover-pending`) or the path-lock one (`recover-pending`). */
  kind: "task" | "path";
  /** Who recovers it (the audit message's sender). */
  agent: string;
  /** For a journal in phase `applied` whose message cannot be found: what happened. */
  resolve?: "rollback" | "published";
}

/** What `recoverPending` did. */
export interface PendingRecovery {
  /** The task the change was of (`kind: "task"`). */
  task?: string;
  /** The path lock the change was of (`kind: "path"`). */
  lock?: string;
  /** The change's own event (`lease.claimed`, `path.locked`, …). */
  event: string;
  /**
   * `rollback`: every file put back as before; `cleanup`: it had happened, the journal went;
   * `none`: no path-lock change was pending (chat.py's path-lock recovery is then a no-op too).
   */
  recovery: "rollback" | "cleanup" | "none";
}

export interface ChannelSummaryOptions {
  /** Replace `state.md` with the summary (chat.py's `state --write`, `compact`). */
  write?: boolean;
  /** Who posts the `state.compacted` message (chat.py's default: `system`). */
  actor?: string;
  /** `false`: write without posting `state.compacted` (chat.py's `--no-audit`). */
  audit?: boolean;
  /** Refuse the summary when a source does not validate, instead of leaving it out. */
  strict?: boolean;
  /** Return the saved `state.md` instead of a new summary (`STATE_RECORD_NOT_FOUND` if none). */
  saved?: boolean;
}

/** A channel's summary as chat.py 0.7 renders it. */
export interface ChannelSummary {
  /** Its `state.md` text, byte for byte. */
  markdown: string;
  /** Its `state --json` text, byte for byte (empty for `saved`). */
  json: string;
  /** Whether `state.md` was replaced. */
  written: boolean;
  counts: { openTasks: number; pathLocks: number; decisions: number };
  /** The sources left out because they do not validate, one line each. */
  problems: string[];
  /**
   * For `saved`: whether `state.md` is the summary the channel's files give now, for the
   * messages up to the last one it names; false when it is stale or was not written by one.
   */
  current?: boolean;
}

export interface TasksOptions {
  onWarning?: (warning: string) => void;
}

export interface ClaimOptions {
  /** How long the lease lasts without renewal (default: the channel's `task_ttl`, else 30 min). */
  ttlMs?: number;
}

export interface RenewOptions extends ClaimOptions {
  /** The token the caller holds; refused when it is not the live grant. */
  token?: number;
}

export interface DoneOptions {
  token?: number;
  /** One line on how it ended, kept with the task. */
  note?: string;
}

export interface ReleaseOptions {
  token?: number;
}

export interface FenceResult {
  /** `token` is the current grant and its lease has not expired. */
  live: boolean;
  task: TaskInfo;
}

/** A reservation of paths in a repository (`lease add`). */
export interface PathLeaseInfo {
  /** Its id in the channel and its fencing token: every grant gets the next number. */
  token: number;
  channel: string;
  /** A repository-relative glob, e.g. `src/store/**`. */
  pattern: string;
  holder: string;
  /** Exclusive (the default) or shared (`--shared`: compatible with other shared leases). */
  exclusive: boolean;
  /**
   * `expired`: its holder let it lapse; it no longer reserves anything. `released`: only in
   * the answer to the release that ended it (a released lease is no longer listed).
   */
  state: "live" | "expired" | "released";
  /** ISO-8601. */
  grantedAt: string;
  expiresAt: string;
  reason?: string;
  /** It was granted with `force` over these live leases of others. */
  forced?: string[];
  /**
   * Not a lease of ours but a path lock of chat.py 0.7 (`locks/<lock>.json`), listed and
   * honoured as an exclusive lease of its owner; `token` is 0, and only chat.py changes it.
   */
  lock?: string;
  /** Granted in one lock with others (chat.py's `lock CH a b`): the first one's token. */
  group?: number;
  /** The holder's name exactly as given (`holder` is its key); chat.py's records name it. */
  owner?: string;
}

export interface PathLeaseOptions extends ClaimOptions {
  shared?: boolean;
  /** One line on why, shown to whoever it conflicts with. */
  reason?: string;
  /** Grant it despite overlapping leases of others, and record them. */
  force?: boolean;
  /**
   * More patterns granted with it, all or none, as one lock (chat.py's `lock CH a b`): one lock
   * record covers them all, and releasing any of them releases them all.
   */
  also?: string[];
  /**
   * Refused over any live lease, the agent's own included, as chat.py's `lock` is (a lease of
   * one's own is otherwise renewed, or overlapped, at will).
   */
  alone?: boolean;
}

/** The lease a claim gets when neither the caller nor the channel says otherwise. */
export const DEFAULT_TASK_TTL_MS = 30 * 60_000;
/** The longest lease: a claim meant to outlive a week is a claim forgotten. */
export const MAX_TASK_TTL_MS = 7 * 24 * 3_600_000;
/** chat.py's timestamps end with the year 9999 (Python's `datetime.max`): no lease outlives it. */
export const REFERENCE_TIME_END_MS = Date.UTC(10_000, 0, 1);
/**
 * How long after its end a lease is still its holder's (src/store/shared/skew.ts): the clocks of
 * hosts sharing a root may differ by this much.
 */
export const SKEW_GRACE_MS = 5_000;
/** The `_meta.json` key (ours) with the channel's default lease, in seconds. */
export const TASK_TTL_KEY = "task_ttl";

/** How long a wait parks before `TIMEOUT` unless told: every way in (CLI, MCP, library) starts here. */
export const DEFAULT_WAIT_TIMEOUT_MS = 900_000;
/** The safety-net poll behind a file watch. */
export const DEFAULT_POLL_INTERVAL_MS = 2_000;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/**
 * The `_meta.json` key (ours, after the reference's keys) with the largest body a channel
 * takes, in bytes: what its posts may hold is what its readers read.
 */
export const MAX_BODY_KEY = "max_body_bytes";
/** The largest limit a channel may record: a file in the root never costs a reader more. */
export const MAX_CHANNEL_BODY_BYTES = 64 * 1024 * 1024;

/** How far a message got with one addressee, in order. */
export type DeliveryState = "stored" | "notified" | "read" | "answered";
export const DELIVERY_STATES: readonly DeliveryState[] = ["stored", "notified", "read", "answered"];

/** Where an agent runs: what its presence record says. */
export type Harness =
  | "claude-code"
  | "codex"
  | "gemini"
  | "qwen"
  | "pi"
  | "copilot"
  | "opencode"
  | "cli"
  | "mcp"
  | "viewer";
export const HARNESSES: readonly Harness[] = [
  "claude-code",
  "codex",
  "gemini",
  "qwen",
  "pi",
  "copilot",
  "opencode",
  "cli",
  "mcp",
  "viewer",
];

export interface Receipt {
  agent: string;
  state: DeliveryState;
  /** ISO-8601 times of each step, where known (a read by chat.py has no time). */
  notifiedAt?: string;
  readAt?: string;
  answeredAt?: string;
  /** The seq of the answer. */
  answer?: number;
  /** What is known about why it got no further (for an addressee short of `answered`). */
  why?: string;
  /**
   * Where signatures are required: the state that records nobody signed claim (a cursor, an
   * unsigned reply), when it is further than what is proven.
   */
  unproven?: DeliveryState;
}

/** An agent's statement, signed with its key, that it was given the channel up to `seq`. */
export interface SignedReadReceipt {
  seq: number;
  /** When, in ms since the epoch (the signer's clock). */
  at: number;
  /** `ed25519:<key>:<signature>` over the text `readReceiptText` (src/core/signature.ts) gives. */
  sig: string;
}

/**
 * What proves a delivery step where the channel requires signatures (a signed store gives it):
 * without one, a cursor, a receipt record and any reply count, as written.
 */
export interface DeliveryProof {
  /** Those of `messages` that their sender verifiably wrote. */
  authored(messages: readonly Message[]): Promise<Message[]>;
  /** Whether `receipt` is `agent`'s own, signed with its pinned key, for this channel. */
  readBy(channel: string, agent: string, receipt: SignedReadReceipt): Promise<boolean>;
}

export interface Receipts {
  channel: string;
  seq: number;
  from: string;
  title: string;
  /** One per addressee: the named recipients, or for a broadcast the members (or everyone seen). */
  addressees: Receipt[];
}

export interface WaitForOptions {
  state: DeliveryState;
  /** Default {@link DEFAULT_WAIT_TIMEOUT_MS}; then `TIMEOUT`. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** How often receipts are looked at besides new messages (default 100 ms). */
  intervalMs?: number;
  /** What counts as proof of each step (see {@link DeliveryProof}). */
  proof?: DeliveryProof;
}

export interface WhoOptions {
  /** Hears, once per store, why a presence record was ignored (corrupt, future, by hand). */
  onWarning?: (warning: string) => void;
  /** What counts as proof of each step (see {@link DeliveryProof}). */
  proof?: DeliveryProof;
}

/** `waiting`: parked on channels now; `gone`: its parked process died, or silent too long. */
export type PresenceState = "waiting" | "active" | "idle" | "gone" | "never-seen";

export interface PresenceInfo {
  agent: string;
  state: PresenceState;
  harness?: Harness;
  host?: string;
  pid?: number;
  /** Last activity, ISO-8601. */
  lastActive?: string;
  /** What it is parked on (waiting), or was when its process died (gone). */
  parkedOn?: string[];
  /** Why it is gone. */
  why?: string;
  /** With a channel: its unread messages there, the oldest one's time, what it owes an answer. */
  unread?: number;
  oldestUnread?: string;
  owes?: number[];
}
