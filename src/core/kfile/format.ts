import type { ArgLabel, FolderRef, KFile, UpdateAction, UpdateArgs } from "./labels.js";

export function formatFolderRef(ref: FolderRef): string {
  return ref.segments.map((s) => `[${s}]`).join("/");
}

const quote = (text: string): string => JSON.stringify(text);
const ref = formatFolderRef;

/** The arguments of each UpdateAction as written between its parentheses. */
const FORMAT_ARGS: { [K in ArgLabel]: (args: UpdateArgs[K]) => string[] } = {
  "create-folder": (a) => [ref(a.folder), quote(a.description)],
  "focus-folder": (a) => [ref(a.folder)],
  "rename-folder": (a) => [
    ref(a.folder),
    `[${a.newName}]`,
    ...(a.description === undefined ? [] : [quote(a.description)]),
  ],
  "move-folder": (a) => [ref(a.folder), ref(a.to)],
  "delete-folder": (a) => [ref(a.folder)],
  "store-file": (a) => [ref(a.folder), quote(a.file)],
  "edit-file": (a) => [ref(a.folder), quote(a.file), a.mode],
  "rename-file": (a) => [ref(a.folder), quote(a.file), quote(a.newFile)],
  "move-file": (a) => [ref(a.folder), quote(a.file), ref(a.to)],
  "delete-file": (a) => [ref(a.folder), quote(a.file)],
};

function formatArgs<K extends ArgLabel>(action: K, args: UpdateArgs[K]): string[] {
  return FORMAT_ARGS[action](args);
}

/** The UpdateAction as written on its line, e.g. `focus-folder([blog])`. */
export function formatUpdate(update: UpdateAction): string {
  if (update.action === "none" || update.args === undefined) return update.action;
  return `${update.action}(${formatArgs(update.action, update.args).join(", ")})`;
}

/** The three-line text form, ending with a newline. */
export function formatKFile(k: KFile): string {
  return (
    `ResponseAction: ${k.response}\nUpdateAction: ${formatUpdate(k.update)}\n` +
    `ClarifyAction: ${k.clarify}\n`
  );
}
