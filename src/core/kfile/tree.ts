/** A folder of the rendered tree. */
export interface TreeFolder {
  name: string;
  description: string;
  focus: boolean;
  files: string[];
  children: TreeFolder[];
}

/**
 * Renders the K-folder in the seed's form: `[name]-description`, children drawn with `├── `,
 * `└── ` and `│   ` / four-space indentation, ` [focus]` after the focused folder. A folder
 * without a description is shown as `[name]`. With `files`, each folder's files are listed
 * (after its child folders) by name. Ends with a newline.
 */
export function renderTree(root: TreeFolder, options: { files?: boolean } = {}): string {
  const out: string[] = [folderLine(root)];
  const walk = (folder: TreeFolder, prefix: string) => {
    const entries: Array<{ text: string; child?: TreeFolder }> = folder.children.map((c) => ({
      text: folderLine(c),
      child: c,
    }));
    if (options.files) for (const f of folder.files) entries.push({ text: f });
    entries.forEach((entry, i) => {
      const last = i === entries.length - 1;
      out.push(`${prefix}${last ? "└── " : "├── "}${entry.text}`);
      if (entry.child) walk(entry.child, prefix + (last ? "    " : "│   "));
    });
  };
  walk(root, "");
  return `${out.join("\n")}\n`;
}

function folderLine(f: TreeFolder): string {
  const desc = f.description === "" ? "" : `-${f.description}`;
  return `[${f.name}]${desc}${f.focus ? " [focus]" : ""}`;
}
