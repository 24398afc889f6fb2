import { existsSync, watch } from "node:fs";
import { join } from "node:path";
import { decide } from "../client/governance.js";
import { AgentChatError } from "../core/errors.js";
import { governanceOf, openRequests, type Verdict } from "../core/governance.js";
import { renderTree, type TreeFolder } from "../core/kfile.js";
import type { Message } from "../core/message.js";
import type { Store } from "../store/types.js";
import { CHANNEL_WORKSPACE_DIR, displayPath, KFolder, toTree } from "../workspace/index.js";
import type {
  PanelAction,
  PanelActionResponse,
  PanelView,
  RequestItem,
  TreeNode,
} from "./api-types.js";

export interface PanelContext {
  store: Store;
  channel: string;
  /** The channel's messages as the viewer holds them (seq order); reading them costs nothing. */
  messages: readonly Message[];
}

/**
 * Where other parts of agent-chat plug a channel panel into the viewer. A provider returns
 * undefined when the channel has no such data, and the page then shows nothing for it. Panels
 * are loaded again with the once-a-second refresh, whenever a message arrives, and whenever a
 * provider's own `watch` reports a change.
 */
export interface PanelProvider {
  id: string;
  load(context: PanelContext): Promise<PanelView | undefined>;
  /**
   * Calls `onChange` when the panel's data may have changed by other means than a message
   * (within milliseconds rather than at the next refresh). Returns the function that stops it,
   * or undefined when there is nothing to watch (yet).
   */
  watch?(store: Store, channel: string, onChange: () => void): (() => void) | undefined;
  /** Acts on one item of a `requests` panel on behalf of the named human. */
  act?(
    store: Store,
    channel: string,
    itemId: string,
    action: PanelAction,
    input: { as: string; note?: string },
  ): Promise<PanelActionResponse>;
}

/** The channel's shared workspace (docs/workspace.md): its K-folder tree and focus. */
export const workspacePanel: PanelProvider = {
  id: "workspace",
  async load({ store, channel }) {
    const dir = workspaceDir(store, channel);
    // Only an existing workspace is shown; the viewer never creates one.
    if (!dir || !existsSync(dir)) return undefined;
    const snapshot = await new KFolder(dir).snapshot();
    const tree = toTree(snapshot);
    return {
      id: "workspace",
      kind: "tree",
      title: "Workspace",
      text: renderTree(tree, { files: true }),
      focus: displayPath(snapshot.focus),
      root: treeNode(tree),
    };
  },
  watch(store, channel, onChange) {
    const dir = workspaceDir(store, channel);
    if (!dir || !existsSync(dir)) return undefined;
    // Every change to the workspace renames a file into its top folder (`.kfile` on each turn,
    // `.focus` when the focus moves), so watching that one folder sees them all.
    try {
      const watcher = watch(dir, { persistent: false }, () => onChange());
      watcher.on("error", () => watcher.close());
      return () => watcher.close();
    } catch {
      return undefined;
    }
  },
};

function workspaceDir(store: Store, channel: string): string | undefined {
  return store.capabilities.specFolder
    ? join(store.location, channel, CHANNEL_WORKSPACE_DIR)
    : undefined;
}

function treeNode(folder: TreeFolder): TreeNode {
  return {
    name: folder.name,
    description: folder.description,
    focus: folder.focus,
    files: [...folder.files].sort(),
    children: folder.children.map(treeNode),
  };
}

const VERDICT_OF: Record<PanelAction, Verdict> = {
  approve: "approved",
  reject: "rejected",
  veto: "vetoed",
};

/** Pending governance requests (docs/governance.md), decided by the channel's maintainer. */
export const governancePanel: PanelProvider = {
  id: "governance",
  async load({ store, channel, messages }) {
    const profile = governanceOf(await store.roster(channel));
    // No profile, or one with nobody to decide: nothing can be pending, so no panel.
    if (!profile?.maintainer) return undefined;
    const items: RequestItem[] = openRequests(messages, profile.maintainer, Date.now()).map((r) => {
      const item: RequestItem = {
        id: String(r.seq),
        seq: r.seq,
        title: r.title,
        from: r.from,
        action: r.action,
        band: r.band,
        ts: r.ts,
        actions: r.band === "notify" ? ["approve", "reject", "veto"] : ["approve", "reject"],
      };
      if (r.vetoUntil) item.vetoUntil = r.vetoUntil;
      return item;
    });
    return {
      id: "governance",
      kind: "requests",
      title: "Pending requests",
      maintainer: profile.maintainer,
      items,
    };
  },
  async act(store, channel, itemId, action, input) {
    const seq = Number(itemId);
    if (!/^\d+$/.test(itemId) || !Number.isSafeInteger(seq) || seq <= 0) {
      throw new AgentChatError("INVALID_ARGUMENT", `${itemId} is not a request number`);
    }
    const decideInput: Parameters<typeof decide>[3] = { as: input.as, verdict: VERDICT_OF[action] };
    if (input.note !== undefined) decideInput.note = input.note;
    const result = await decide(store, channel, seq, decideInput);
    return { seq: result.seq, file: result.file };
  },
};

export const panelProviders: PanelProvider[] = [workspacePanel, governancePanel];
