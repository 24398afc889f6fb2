import { watch } from "node:fs";
import { join } from "node:path";
import { renderTree, type TreeFolder } from "../../core/kfile/index.js";
import { entryKind } from "../../fsutil/root-files.js";
import type { Store } from "../../store/types.js";
import type { TreeNode } from "../../viewer/api-types.js";
import { governancePanel, type PanelProvider } from "../../viewer/panels.js";
import { CHANNEL_WORKSPACE_DIR, displayPath, KFolder, toTree } from "../../workspace/index.js";

/**
 * The viewer and the workspace are peers that must not import each other (docs/design.md §3), so the
 * workspace panel is composed here, where both may be used, and handed to the viewer.
 */

/** The channel's shared workspace (docs/workspace.md): its K-folder tree and focus. */
const workspacePanel: PanelProvider = {
  id: "workspace",
  async load({ store, channel }) {
    const dir = workspaceDir(store, channel);
    // Only an existing workspace is shown; the viewer never creates one.
    if (!dir) return undefined;
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
    if (!dir) return undefined;
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

/**
 * The channel's workspace folder when there is one: a real directory. A `_workspace` that is a
 * link (to anywhere outside the root) is not a workspace, never read and never watched.
 */
function workspaceDir(store: Store, channel: string): string | undefined {
  if (!store.capabilities.specFolder) return undefined;
  const dir = join(store.location, channel, CHANNEL_WORKSPACE_DIR);
  return entryKind(dir) === "dir" ? dir : undefined;
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

/** The panels `agent-chat view` and `agent-chat serve --http` show, in page order. */
export const viewerPanels: readonly PanelProvider[] = [workspacePanel, governancePanel];
