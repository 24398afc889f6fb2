/**
 * The K-file of seed 003: the normalised, temporary form of one request, the triple
 * (ResponseAction, UpdateAction, ClarifyAction) with the seed's closed label sets, and its
 * three-line text form:
 *
 * ```
 * ResponseAction: discuss
 * UpdateAction: focus-folder([blog])
 * ClarifyAction: none
 * ```
 *
 * Argument syntax of the UpdateAction (a FOLDER is a folder reference, see {@link FolderRef};
 * a "FILE" is a double-quoted file name; "TEXT" a double-quoted description; JSON escapes
 * `\"` and `\\` are allowed inside quotes):
 *
 * | UpdateAction    | Arguments                                   | Example                                          |
 * | --------------- | ------------------------------------------- | ------------------------------------------------ |
 * | `none`          | none                                        | `none`                                           |
 * | `create-folder` | `(FOLDER/[new-name], "TEXT")`               | `create-folder([root]/[blog], "article")`        |
 * | `focus-folder`  | `(FOLDER)`                                  | `focus-folder([blog])`                           |
 * | `rename-folder` | `(FOLDER, [new-name])` or `(…, "TEXT")`     | `rename-folder([blog], [posts], "blog posts")`   |
 * | `move-folder`   | `(FOLDER, NEW-PARENT)`                      | `move-folder([blog], [protocol])`                |
 * | `delete-folder` | `(FOLDER)`                                  | `delete-folder([blog])`                          |
 * | `store-file`    | `(FOLDER, "FILE")`                          | `store-file([blog], "draft.md")`                 |
 * | `edit-file`     | `(FOLDER, "FILE", append\|replace)`         | `edit-file([blog], "draft.md", append)`          |
 * | `rename-file`   | `(FOLDER, "FILE", "NEW-FILE")`              | `rename-file([blog], "draft.md", "final.md")`    |
 * | `move-file`     | `(FOLDER, "FILE", NEW-FOLDER)`              | `move-file([blog], "draft.md", [protocol])`      |
 * | `delete-file`   | `(FOLDER, "FILE")`                          | `delete-file([blog], "draft.md")`                |
 *
 * The content that `store-file` and `edit-file` write is not part of the K-file: it is the
 * content of the turn (the result the K-file asks to keep).
 *
 * When ClarifyAction is not `none`, an UpdateAction may be written without arguments
 * (`UpdateAction: delete-folder`): the intent is known, the target is what must be asked.
 */

export const RESPONSE_ACTIONS = ["discuss", "prove", "export", "acknowledge"] as const;
export const UPDATE_ACTIONS = [
  "none",
  "create-folder",
  "focus-folder",
  "rename-folder",
  "move-folder",
  "delete-folder",
  "store-file",
  "edit-file",
  "rename-file",
  "move-file",
  "delete-file",
] as const;
export const CLARIFY_ACTIONS = [
  "none",
  "ask-goal",
  "ask-content",
  "ask-target",
  "ask-constraint",
  "ask-format",
  "ask-confirmation",
] as const;

export type ResponseAction = (typeof RESPONSE_ACTIONS)[number];
export type UpdateLabel = (typeof UPDATE_ACTIONS)[number];
export type ClarifyAction = (typeof CLARIFY_ACTIONS)[number];

/** The seed's meaning of every label (used by the renderer's Concepts and by `--help`). */
export const LABEL_MEANINGS: Record<ResponseAction | UpdateLabel | ClarifyAction, string> = {
  discuss: "answer, explain, analyze, compare, summarize, or develop an idea",
  prove: "state and prove a proposition",
  export: "create a requested reusable artifact",
  acknowledge: "confirm an operation on the K-folder",
  none: "nothing to do here",
  "create-folder": "create a new folder",
  "focus-folder": "move the shared focus to a folder",
  "rename-folder": "change a folder name or description",
  "move-folder": "move a folder within the tree",
  "delete-folder": "delete a folder",
  "store-file": "store the current result as a persistent file",
  "edit-file": "modify a stored file",
  "rename-file": "rename a stored file",
  "move-file": "move a stored file",
  "delete-file": "delete a stored file",
  "ask-goal": "the intended outcome is unclear",
  "ask-content": "required subject matter or data is missing",
  "ask-target": "the destination folder or file is ambiguous",
  "ask-constraint": "scope, conditions, or limits are missing",
  "ask-format": "the required output form is unclear",
  "ask-confirmation": "a sensitive or destructive operation requires confirmation",
};

/**
 * A folder reference: `[root]` is the root; `[blog]` is the one folder named `blog` anywhere
 * in the tree (several → ambiguous); `[protocol]/[blog]` is the child `blog` of the one folder
 * named `protocol`; `[root]/[protocol]/[blog]` is a path from the root, never ambiguous.
 */
export interface FolderRef {
  segments: string[];
}

export type EditMode = "append" | "replace";

export interface UpdateArgs {
  none: Record<string, never>;
  /** `folder` is the parent reference followed by the new folder's name. */
  "create-folder": { folder: FolderRef; description: string };
  "focus-folder": { folder: FolderRef };
  /** `description` undefined keeps the current description. */
  "rename-folder": { folder: FolderRef; newName: string; description?: string };
  "move-folder": { folder: FolderRef; to: FolderRef };
  "delete-folder": { folder: FolderRef };
  "store-file": { folder: FolderRef; file: string };
  "edit-file": { folder: FolderRef; file: string; mode: EditMode };
  "rename-file": { folder: FolderRef; file: string; newFile: string };
  "move-file": { folder: FolderRef; file: string; to: FolderRef };
  "delete-file": { folder: FolderRef; file: string };
}

/**
 * The UpdateAction of the labels `K`; `args` is absent only while a clarification is pending.
 * Indexed by a generic `K`, it reads as `{ action: K; args?: UpdateArgs[K] }`, so one function
 * can build or take the action of any label without a cast.
 */
export type UpdateOf<K extends UpdateLabel> = {
  [L in K]: { action: L; args?: UpdateArgs[L] };
}[K];

/** An UpdateAction: one of the labels, with its arguments. */
export type UpdateAction = UpdateOf<UpdateLabel>;

/** The labels that take arguments. */
export type ArgLabel = Exclude<UpdateLabel, "none">;

export interface KFile {
  response: ResponseAction;
  update: UpdateAction;
  clarify: ClarifyAction;
}

export const ROOT_NAME = "root";

export function folderRef(...segments: string[]): FolderRef {
  return { segments };
}

/** The argument syntax of every UpdateAction, as shown in errors and `--help`. */
export const UPDATE_SYNTAX: Record<UpdateLabel, string> = {
  none: "none",
  "create-folder": 'create-folder([parent]/[name], "description")',
  "focus-folder": "focus-folder([folder])",
  "rename-folder":
    'rename-folder([folder], [new-name]) or rename-folder([folder], [new-name], "new description")',
  "move-folder": "move-folder([folder], [new-parent])",
  "delete-folder": "delete-folder([folder])",
  "store-file": 'store-file([folder], "name.md")',
  "edit-file": 'edit-file([folder], "name.md", append) or edit-file([folder], "name.md", replace)',
  "rename-file": 'rename-file([folder], "old.md", "new.md")',
  "move-file": 'move-file([folder], "name.md", [new-folder])',
  "delete-file": 'delete-file([folder], "name.md")',
};
