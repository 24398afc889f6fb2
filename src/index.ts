/**
 * agent-chat: coordination for AI agent sessions and people through channels of markdown
 * message files (the agent-chat SPEC), with token-free waits and atomic claims.
 *
 * @example
 * ```ts
 * import { openStore } from "agent-chat";
 * const chat = await openStore("./chat");
 * await chat.init("review", { members: ["alice", "bob"], topic: "schema v2" });
 * await chat.post("review", { from: "alice", to: "bob", title: "Draft", body: "Please look." });
 * const { messages } = await chat.wait(["review"], { as: "bob", timeoutMs: 60_000 });
 * await chat.close();
 * ```
 */

export { type OpenOptions, openStore, type RootSources, resolveRoot } from "./client/open.js";
export { AgentChatError, type ErrorCode, isAgentChatError } from "./core/errors.js";
export {
  formatTimestamp,
  isRelevant,
  type Message,
  messageFileName,
  type NewMessage,
  type ParseResult,
  parseMessage,
  parseTo,
  type Recipients,
  serializeMessage,
} from "./core/message.js";
export { type ChannelMeta, isMember, parseMeta, serializeMeta } from "./core/meta.js";
export { identity, MAX_NAME_LENGTH, parseTaskId, slug, validateName } from "./core/names.js";
export {
  type B00tCommand,
  type ChatCommand,
  type ModelAction,
  parseSlash,
  type SlashCommand,
  type SlashContext,
  type SlashParse,
  slashOfBody,
  toCliArgs,
} from "./core/slash.js";
export {
  type Band,
  type DecideInput,
  type DecideResult,
  decide,
  type GovernanceChange,
  type GovernanceEvent,
  type GovernanceProfile,
  type GovernanceRequest,
  govern,
  governanceOf,
  lookupBand,
  parseBandAssignment,
  pendingRequests,
  profileOf,
  type RequestInput,
  type RequestOutcome,
  requestAction,
  type Verdict,
} from "./features/governance/index.js";
export { FsStore, type FsStoreOptions } from "./store/fs/index.js";
export type * from "./store/types.js";
