import { z } from "zod";
import { AgentChatError } from "../../core/errors.js";
import { renderTree } from "../../core/kfile/index.js";
import { describeError } from "../../mcp/format.js";
import type { McpTool } from "../../mcp/server.js";
import type { Store } from "../../store/types.js";
import {
  channelWorkspace,
  displayPath,
  KFolder,
  recordTurn,
  runTurn,
  skippedWarnings,
  type TurnInput,
  toTree,
} from "../../workspace/index.js";

/*
 * The MCP server and the workspace are peers that must not import each other (docs/design.md §3), so
 * the chat_workspace tool is composed here, where both may be used, and handed to the server.
 */

/**
 * The texts of the `chat_workspace` tool. The description teaches the K-file's syntax in a few
 * lines, because in an MCP session the model writes the K-file itself (docs/workspace.md).
 */
const WORKSPACE_TOOL = {
  description:
    "The channel's shared workspace: a folder tree with one focus. A turn applies a K-file you " +
    "write (three lines):\n" +
    "ResponseAction: discuss|prove|export|acknowledge\n" +
    'UpdateAction: none | create-folder([parent]/[name], "description") | focus-folder([f]) | ' +
    'rename-folder([f], [new], "description") | move-folder([f], [new-parent]) | delete-folder([f]) | ' +
    'store-file([f], "a.md") | edit-file([f], "a.md", append|replace) | ' +
    'rename-file([f], "a.md", "b.md") | move-file([f], "a.md", [g]) | delete-file([f], "a.md")\n' +
    "ClarifyAction: none|ask-goal|ask-content|ask-target|ask-constraint|ask-format|ask-confirmation\n" +
    "[f] is a folder name, [a]/[b] a path, [root] the root. The folder changes only when " +
    "ClarifyAction is none. store-file/edit-file write `content`. A delete or overwrite waits: " +
    "ask the user, then call action confirm; any other turn cancels it. Returns the Response " +
    "(Context, Concepts, Contents) and the tree; the turn is posted to the channel.",
  channel: "Channel whose workspace this is (<channel>/_workspace/)",
  action:
    "turn (default): apply kfile or request; tree: show the tree, focus and files; " +
    "confirm: execute your delete or overwrite that waits for confirmation",
  kfile: "The K-file, three lines as above",
  request: "Instead of kfile: the request in words, for the rule-based normaliser",
  content: "What store-file/edit-file write, or the answer the Response shows",
} as const;

const workspaceSchema = {
  channel: z.string().describe(WORKSPACE_TOOL.channel),
  action: z.enum(["turn", "tree", "confirm"]).optional().describe(WORKSPACE_TOOL.action),
  kfile: z.string().optional().describe(WORKSPACE_TOOL.kfile),
  request: z.string().optional().describe(WORKSPACE_TOOL.request),
  content: z.string().optional().describe(WORKSPACE_TOOL.content),
};

const workspaceTool: McpTool<typeof workspaceSchema> = {
  name: "chat_workspace",
  description: WORKSPACE_TOOL.description,
  inputSchema: workspaceSchema,
  // delete-folder/delete-file and an overwriting store-file or edit-file remove content (after
  // a confirm turn): destructive, however guarded. Only the channel's _workspace/ is touched.
  annotations: {
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: false,
  },
  run: (args, { store, agent }) => runWorkspaceTool(store, agent, args),
};

/** The tools `agent-chat mcp` offers besides the built-in chat_* ones. */
export const mcpTools: readonly McpTool[] = [workspaceTool];

interface WorkspaceArgs {
  channel: string;
  action?: "turn" | "tree" | "confirm" | undefined;
  kfile?: string | undefined;
  request?: string | undefined;
  content?: string | undefined;
}

/** Runs one `chat_workspace` call for `agent`; returns the result's text. */
async function runWorkspaceTool(store: Store, agent: string, args: WorkspaceArgs): Promise<string> {
  const action = args.action ?? "turn";
  const given = (["kfile", "request", "content"] as const).filter((k) => args[k] !== undefined);
  const dir = await channelWorkspace(store, args.channel);

  if (action === "tree") {
    refuse(action, given);
    const snapshot = await new KFolder(dir).snapshot();
    const skipped = skippedWarnings(snapshot).map((w) => `\nNot shown: ${w}`);
    return (
      `Focus: ${displayPath(snapshot.focus)}\n` +
      renderTree(toTree(snapshot), { files: true }).trimEnd() +
      skipped.join("")
    );
  }

  const input: TurnInput = { as: agent, guarded: true };
  if (action === "confirm") {
    refuse(action, given);
    // The engine's confirmation word: executes the K-file waiting for this agent, if any.
    input.request = "confirm";
  } else {
    if ((args.kfile === undefined) === (args.request === undefined)) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        "a turn needs kfile (the three-line K-file) or request (the request in words), one of them",
      );
    }
    if (args.kfile !== undefined) input.kfile = args.kfile;
    if (args.request !== undefined) input.request = args.request;
    if (args.content !== undefined) input.content = args.content;
  }

  const turn = await runTurn(dir, input);
  const parts = [
    `K-file:\n${turn.kfileText.trimEnd()}`,
    turn.responseText.trimEnd(),
    `K-folder:\n${turn.tree.trimEnd()}`,
  ];
  if (turn.warnings.length > 0) parts.push(`Not shown:\n${turn.warnings.join("\n")}`);
  if (turn.pending) {
    parts.push(
      'Waiting for confirmation: ask the user, then call chat_workspace with action "confirm"; any other turn cancels it.',
    );
  }
  // The workspace has changed by now; a failure to record the turn must not hide that.
  try {
    const posted = await recordTurn(store, args.channel, agent, turn);
    parts.push(`Recorded in ${args.channel} as ${posted.map((p) => `#${p.seq}`).join(", ")}.`);
  } catch (err) {
    parts.push(`Not recorded in ${args.channel}: ${describeError(err).text}`);
  }
  return parts.join("\n\n");
}

function refuse(action: string, given: readonly string[]): void {
  if (given.length > 0) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `action ${action} takes only channel; leave out ${given.join(", ")}`,
    );
  }
}
