/**
 * The JSON the viewer's server sends and the page reads. Shared by both sides (the page bundles
 * this file too: types and two constants), so that a change of shape fails the type check on both.
 */

export interface MessageView {
  seq: number;
  from: string;
  to: string;
  replyTo?: number;
  ts: string;
  status: string;
  title: string;
  body: string;
  file: string;
  extra: Record<string, string>;
  /** Whether its author is proven (docs/signatures.md); the page shows it as a badge. */
  trust?: "verified" | "unsigned" | "forged";
  /** Why it is forged. */
  trustNote?: string;
  /** Moved out of the channel's hot folder by `agent-chat archive`. */
  archived?: true;
}

/**
 * `GET /api/channels/<ch>/thread/<seq>`: the thread message `seq` belongs to (archived messages
 * included), its root first, each reply after what it answers with its depth below the root.
 */
export interface ThreadPage {
  channel: string;
  seq: number;
  messages: Array<{ depth: number; message: MessageView }>;
}

/**
 * `GET /api/channels/<ch>/messages[?before=<seq>][&limit=<n>]`: the newest `limit` messages of
 * the channel (default MESSAGE_PAGE_DEFAULT, at most MESSAGE_PAGE_MAX) whose seq is below
 * `before` (all of them without it), oldest first.
 */
export interface MessagesPage {
  channel: string;
  messages: MessageView[];
  /** Messages older than the first one here exist: ask again with `before=<messages[0].seq>`. */
  hasEarlier: boolean;
  /** How many such older messages there are. */
  earlierCount: number;
  /** Messages in the whole channel. */
  total: number;
  /** Who wrote what a message here replies to, when that message is not on this page. */
  replyTargets: ReplyTarget[];
}

export interface ReplyTarget {
  seq: number;
  from: string;
  title: string;
}

export const MESSAGE_PAGE_DEFAULT = 200;
export const MESSAGE_PAGE_MAX = 1000;

export interface MemberView {
  name: string;
  /** Listed in `_meta.json` (otherwise seen taking part in an open channel). */
  declared: boolean;
  /** The last seq this member has read. */
  cursor: number;
  /** Messages relevant to this member after its cursor. */
  unread: number;
  /** Its presence (docs/delivery.md): waiting, active, idle, gone or never-seen. */
  presence: "waiting" | "active" | "idle" | "gone" | "never-seen";
  /** The messages it owes an answer (addressed to it, asking, no reply from it yet). */
  owes: number[];
}

export interface TaskView {
  id: string;
  state: "open" | "claimed" | "expired" | "done";
  holder?: string;
  title: string;
  /** The lease's fencing token and end (ISO-8601), when the task has a lease. */
  token?: number;
  expiresAt?: string;
}

/** A live path lease (`lease add`): who reserves which files, until when. */
export interface PathLeaseView {
  token: number;
  pattern: string;
  holder: string;
  exclusive: boolean;
  expiresAt: string;
  reason?: string;
}

/**
 * Extra panels of a channel that other parts of agent-chat provide (`PanelProvider`): the
 * workspace tree with its focus, pending governance requests. The page shows a panel only when a
 * provider returns one.
 */
export type PanelView = TreePanel | RequestsPanel;

export interface TreePanel {
  id: string;
  kind: "tree";
  title: string;
  /** The tree in the seed's text form (with files), for scripts and for copying. */
  text: string;
  /** The focused folder as `[root]/[a]/[b]`. */
  focus: string;
  root: TreeNode;
}

export interface TreeNode {
  name: string;
  description: string;
  focus: boolean;
  files: string[];
  children: TreeNode[];
}

export type PanelAction = "approve" | "reject" | "veto";

export interface RequestsPanel {
  id: string;
  kind: "requests";
  title: string;
  /** Who decides (only their verdict counts). */
  maintainer: string;
  items: RequestItem[];
}

export interface RequestItem {
  /** The request's seq, as text. */
  id: string;
  seq: number;
  title: string;
  from: string;
  /** The governed action (`merge`, `deploy`, …). */
  action: string;
  band: "approval" | "notify";
  ts: string;
  /** End of a notify request's veto window. */
  vetoUntil?: string;
  /** The buttons to offer, in order. */
  actions: PanelAction[];
}

export interface ChannelView {
  name: string;
  topic: string;
  created: string;
  /** No declared members: everyone may post. */
  open: boolean;
  members: MemberView[];
  messageCount: number;
  lastSeq: number;
  tasks: TaskView[];
  leases: PathLeaseView[];
  panels: PanelView[];
  /**
   * The channel's `signatures` policy: under `require` the page strikes through what is not
   * verified (agents are not given it).
   */
  signatures: "off" | "warn" | "require";
}

export interface StateView {
  root: string;
  channels: ChannelView[];
  /**
   * The person who opened the viewer (`agent-chat view --as NAME`): the page posts and decides
   * as this name only, signed with its key. Absent: the From box says who posts, unsigned.
   */
  as?: string;
}

export interface PostRequest {
  from: string;
  to?: string;
  title?: string;
  body: string;
  replyTo?: number;
  status?: string;
}

export interface PostResponse {
  seq: number;
  channel: string;
  file: string;
}

/** `POST /api/channels/<ch>/panels/<panel>/items/<id>/<action>` */
export interface PanelActionRequest {
  as: string;
  note?: string;
}

export interface PanelActionResponse {
  /** The message the action posted (the verdict). */
  seq: number;
  file: string;
}

export interface ErrorView {
  error: { code: string; message: string };
}

/** Server-sent events: `event: state` carries a StateView, `event: message` a MessageEvent. */
export interface MessageEvent {
  channel: string;
  message: MessageView;
}
