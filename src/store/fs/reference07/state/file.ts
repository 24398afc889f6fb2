import { join } from "node:path";
import { type AgentChatError, referenceError } from "../../../../core/errors.js";
import { entryKind, readRootTextSync, replaceFile } from "../../../../fsutil/root-files.js";
import type { ChannelSummary, ChannelSummaryOptions, PostInput } from "../../../types.js";
import { localIso, sortedJson } from "../records.js";
import { renderState } from "./render.js";
import { pythonJson, summarizeState } from "./summary.js";

/** chat.py's saved summary in the channel folder. */
export const STATE_FILE = "state.md";

/** A `state.md` larger than this was not written by a summary: refused unread. */
const MAX_STATE_BYTES = 16 * 1024 * 1024;

/** What computing a channel's state needs of the store. */
export interface StateHost {
  dir: string;
  channel: string;
  now: () => number;
  post: (input: PostInput) => Promise<unknown>;
}

/**
 * Replaces `state.md` as chat.py does: a temporary dot-file (which nothing lists) written and
 * synced, renamed over it, the folder synced. A reader, or a crash at any instant, sees the old
 * file or the new one, never part of one.
 */
async function writeStateFile(dir: string, text: string): Promise<void> {
  try {
    await replaceFile(dir, STATE_FILE, text, { durable: true });
  } catch (err) {
    throw referenceError("IO_ERROR", "STATE_IO_ERROR", `atomic write of state.md failed: ${err}`);
  }
}

/** chat.py's `state.compacted` message: what was summarised, as a JSON body. */
function auditInput(host: StateHost, actor: string, counts: Record<string, number>): PostInput {
  const body = sortedJson({
    event: "state.compacted",
    channel: host.channel,
    ...counts,
    compacted_at: localIso(host.now()),
  });
  return { from: actor, to: "all", title: "state.compacted", status: "state.compacted", body };
}

/**
 * chat.py 0.7's `state` of one channel folder: the summary (Markdown and JSON), and with `write`
 * its `state.md` replaced and (unless `audit: false`) the `state.compacted` message posted.
 * `strict` refuses the summary when a source does not validate; otherwise it leaves that source
 * out and names it in `problems`.
 */
export async function channelState(
  host: StateHost,
  options: ChannelSummaryOptions = {},
): Promise<ChannelSummary> {
  if (options.saved) return savedState(host);
  const problems: AgentChatError[] = [];
  const summary = summarizeState(host.dir, host.channel, localIso(host.now()), problems);
  if (options.strict && problems.length > 0) throw problems[0]!;
  const markdown = renderState(summary);
  const state: ChannelSummary = {
    markdown,
    json: pythonJson(summary),
    written: false,
    counts: {
      openTasks: summary.open_tasks.length,
      pathLocks: summary.path_locks.length,
      decisions: summary.decisions.length,
    },
    problems: problems.map((p) => p.message),
  };
  if (!options.write) return state;
  await writeStateFile(host.dir, markdown);
  state.written = true;
  if (options.audit !== false) {
    const counts = {
      decisions_count: summary.decisions.length,
      open_tasks_count: summary.open_tasks.length,
      blockers_count: summary.blockers.length,
      path_locks_count: summary.path_locks.length,
      last_seq: summary.last_seq,
    };
    await host.post(auditInput(host, options.actor ?? "system", counts));
  }
  return state;
}

/** The last message a saved summary says it summarised (its "Last Message Sequence"). */
const SAVED_LAST_SEQ = /^- \*\*Last Message Sequence\*\*: #(\d{1,15})$/m;

/**
 * Whether `markdown` is the summary the channel's files give now, for the messages up to the
 * last one it names: anyone may write `state.md`, so only that makes it more than a claim.
 */
function isCurrent(host: StateHost, markdown: string): boolean {
  const lastSeq = SAVED_LAST_SEQ.exec(markdown)?.[1];
  if (lastSeq === undefined) return false;
  const ignored: AgentChatError[] = [];
  const at = localIso(host.now());
  const summary = summarizeState(host.dir, host.channel, at, ignored, Number(lastSeq));
  return renderState(summary) === markdown;
}

/**
 * The `state.md` last written (by either CLI), read as untrusted: no link followed, capped, and
 * checked against the channel (`current`).
 */
function savedState(host: StateHost): ChannelSummary {
  const path = join(host.dir, STATE_FILE);
  if (entryKind(path) === undefined) {
    throw referenceError(
      "NOT_FOUND",
      "STATE_RECORD_NOT_FOUND",
      `${host.channel} has no saved state.md (agent-chat compact ${host.channel} writes one)`,
    );
  }
  const markdown = readRootTextSync(path, MAX_STATE_BYTES);
  const counts = { openTasks: 0, pathLocks: 0, decisions: 0 };
  const current = isCurrent(host, markdown);
  return { markdown, json: "", written: false, counts, problems: [], current };
}
