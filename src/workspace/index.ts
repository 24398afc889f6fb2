import { join } from "node:path";
import { AgentChatError } from "../core/errors.js";
import { formatUpdate } from "../core/kfile/index.js";
import { assertRealDir, entryKind } from "../fsutil/root-files.js";
import type { PostResult, Store } from "../store/types.js";
import type { TurnResult } from "./turn.js";

/**
 * The shared workspace of seed 003 (docs/workspace.md). The one entry point an MCP tool wraps:
 *
 * ```ts
 * import { runTurn } from "./workspace/index.js";
 * const { kfile, kfileText, response, responseText, tree } =
 *   await runTurn("/path/to/ws", { request: "Focus on the blog folder and summarize the protocol" });
 * // or, when the agent normalised the request itself:
 * await runTurn("/path/to/ws", { kfile: "ResponseAction: acknowledge\nUpdateAction: focus-folder([blog])\nClarifyAction: none\n" });
 * ```
 */
export {
  DEFAULT_ROOT_DESCRIPTION,
  displayPath,
  type Folder,
  KFILE_FILE,
  KFolder,
  resolveFolder,
  type Skipped,
  type Snapshot,
  toTree,
} from "./kfolder.js";
export { type Normalized, normalize, splitRequest } from "./normalize.js";
export { formatResponse, type Response, renderResponse } from "./render.js";
export {
  runNormalizer,
  runTurn,
  skippedWarnings,
  type TurnInput,
  type TurnResult,
} from "./turn.js";

/** The folder that holds a channel's workspace; `_` keeps the reference chat.py away from it. */
export const CHANNEL_WORKSPACE_DIR = "_workspace";
/** The sender of the K-file and Response messages a recorded turn posts. */
export const WORKSPACE_SENDER = "workspace";

/**
 * The workspace folder of an existing channel of a folder store. The channel folder is checked
 * by the store; the workspace folder, when it exists, must be a real directory too (UNSAFE_FILE
 * for a link: a root is untrusted, docs/design.md §10).
 */
export async function channelWorkspace(store: Store, channel: string): Promise<string> {
  await store.roster(channel);
  if (!store.capabilities.specFolder) {
    throw new AgentChatError(
      "BACKEND_UNAVAILABLE",
      "a channel workspace needs the folder store; use --workspace DIR with this backend",
    );
  }
  const dir = join(store.location, channel, CHANNEL_WORKSPACE_DIR);
  if (entryKind(dir) !== undefined) assertRealDir(dir);
  return dir;
}

/**
 * Records a turn in a channel as messages, so that the conversation and its effect on the
 * workspace can be audited: the request (from `as`), then the K-file and the Response with the
 * tree (from {@link WORKSPACE_SENDER}), each replying to the one before.
 */
export async function recordTurn(
  store: Store,
  channel: string,
  as: string,
  turn: TurnResult,
): Promise<PostResult[]> {
  const posted: PostResult[] = [];
  let replyTo: number | undefined;
  const post = async (input: Parameters<Store["post"]>[1]) => {
    const result = await store.post(channel, replyTo === undefined ? input : { ...input, replyTo });
    replyTo = result.seq;
    posted.push(result);
  };
  if (turn.request !== undefined) {
    await post({ from: as, title: clip(turn.request), body: turn.request, status: "request" });
  }
  const k = turn.kfile;
  await post({
    from: turn.request === undefined ? as : WORKSPACE_SENDER,
    title: `K-file: ${k.response} / ${formatUpdate(k.update)} / ${k.clarify}`,
    body: turn.kfileText,
    status: "kfile",
  });
  await post({
    from: WORKSPACE_SENDER,
    title: `Response: ${clip(turn.response.contents)}`,
    body: `${turn.responseText}\nK-folder:\n\n${FENCE}text\n${turn.tree}${FENCE}\n`,
    status: turn.kfile.clarify === "none" ? "response" : turn.kfile.clarify,
  });
  return posted;
}

const FENCE = "```";

function clip(text: string): string {
  const line = text.split("\n")[0]!.trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
