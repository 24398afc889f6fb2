/**
 * The JSON the viewer's server sends and the page reads. Shared by both sides (the page imports
 * these as types only), so that a change of shape fails the type check on both.
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
}

export interface MemberView {
  name: string;
  /** Listed in `_meta.json` (otherwise seen taking part in an open channel). */
  declared: boolean;
  /** The last seq this member has read. */
  cursor: number;
  /** Messages relevant to this member after its cursor. */
  unread: number;
}

export interface TaskView {
  id: string;
  state: "open" | "claimed";
  holder?: string;
  title: string;
}

/**
 * Extra panels of a channel that other parts of agent-chat provide (the workspace tree, pending
 * governance requests). The page shows a panel only when a provider returns one.
 */
export type PanelView =
  | { id: string; kind: "tree"; title: string; text: string; focus?: string }
  | { id: string; kind: "requests"; title: string; items: RequestItem[] };

export interface RequestItem {
  id: string;
  title: string;
  from: string;
  detail?: string;
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
  panels: PanelView[];
}

export interface StateView {
  root: string;
  channels: ChannelView[];
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

export interface PanelActionRequest {
  as: string;
}

export interface ErrorView {
  error: { code: string; message: string };
}

/** Server-sent events: `event: state` carries a StateView, `event: message` a MessageEvent. */
export interface MessageEvent {
  channel: string;
  message: MessageView;
}
