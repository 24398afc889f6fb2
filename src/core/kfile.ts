import { AgentChatError } from "./errors.js";

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

/** An UpdateAction; `args` is absent only while a clarification is pending. */
export type UpdateAction = {
  [K in UpdateLabel]: { action: K; args?: UpdateArgs[K] };
}[UpdateLabel];

export interface KFile {
  response: ResponseAction;
  update: UpdateAction;
  clarify: ClarifyAction;
}

export const ROOT_NAME = "root";
export const MAX_FOLDER_NAME = 64;
export const MAX_FILE_NAME = 128;
export const MAX_DESCRIPTION = 120;

const FOLDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;

/**
 * Folder and file names become path segments, so one rule keeps them inside the workspace:
 * an ASCII letter or digit first, then letters, digits, `.`, `_`, `-`. That excludes `..`,
 * separators, absolute paths, NUL and control characters, and the leading `.`/`_` that the
 * workspace keeps for its own files (`.kfile`, `.focus`, the lock).
 */
export function validateFolderName(name: string): string {
  checkName("folder", name, FOLDER_NAME, MAX_FOLDER_NAME);
  if (name === ROOT_NAME) {
    throw new AgentChatError("INVALID_NAME", `"root" is the name of the workspace's root folder`);
  }
  return name;
}

export function validateFileName(name: string): string {
  return checkName("file", name, FILE_NAME, MAX_FILE_NAME);
}

function checkName(kind: string, name: string, pattern: RegExp, max: number): string {
  if (name.length === 0) throw new AgentChatError("INVALID_NAME", `${kind} name is empty`);
  if (name.length > max) {
    throw new AgentChatError(
      "INVALID_NAME",
      `${kind} name is too long (${name.length} characters; at most ${max})`,
    );
  }
  if (!pattern.test(name) || DEVICE.test(name)) {
    throw new AgentChatError(
      "INVALID_NAME",
      `invalid ${kind} name ${JSON.stringify(name.slice(0, 60))}: use ASCII letters, digits, ` +
        `'.', '_' and '-', starting with a letter or digit (nothing may leave the workspace)`,
    );
  }
  return name;
}

export function validateDescription(text: string): string {
  if (/[\x00-\x1f\x7f\u2028\u2029]/.test(text)) {
    throw new AgentChatError("INVALID_ARGUMENT", "a folder description must be one line of text");
  }
  if (text.length > MAX_DESCRIPTION) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `a folder description is short: at most ${MAX_DESCRIPTION} characters (got ${text.length})`,
    );
  }
  return text;
}

export function folderRef(...segments: string[]): FolderRef {
  return { segments };
}

export function formatFolderRef(ref: FolderRef): string {
  return ref.segments.map((s) => `[${s}]`).join("/");
}

function quote(text: string): string {
  return JSON.stringify(text);
}

/** The UpdateAction as written on its line, e.g. `focus-folder([blog])`. */
export function formatUpdate(update: UpdateAction): string {
  if (update.action === "none" || update.args === undefined) return update.action;
  const f = (r: FolderRef) => formatFolderRef(r);
  let args: string[];
  switch (update.action) {
    case "create-folder":
      args = [f(update.args.folder), quote(update.args.description)];
      break;
    case "focus-folder":
    case "delete-folder":
      args = [f(update.args.folder)];
      break;
    case "rename-folder":
      args = [f(update.args.folder), `[${update.args.newName}]`];
      if (update.args.description !== undefined) args.push(quote(update.args.description));
      break;
    case "move-folder":
      args = [f(update.args.folder), f(update.args.to)];
      break;
    case "store-file":
    case "delete-file":
      args = [f(update.args.folder), quote(update.args.file)];
      break;
    case "edit-file":
      args = [f(update.args.folder), quote(update.args.file), update.args.mode];
      break;
    case "rename-file":
      args = [f(update.args.folder), quote(update.args.file), quote(update.args.newFile)];
      break;
    case "move-file":
      args = [f(update.args.folder), quote(update.args.file), f(update.args.to)];
      break;
  }
  return `${update.action}(${args.join(", ")})`;
}

/** The three-line text form, ending with a newline. */
export function formatKFile(k: KFile): string {
  return (
    `ResponseAction: ${k.response}\nUpdateAction: ${formatUpdate(k.update)}\n` +
    `ClarifyAction: ${k.clarify}\n`
  );
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

const KEYS = ["ResponseAction", "UpdateAction", "ClarifyAction"] as const;
type Key = (typeof KEYS)[number];

function kfileError(line: number | undefined, message: string): AgentChatError {
  return new AgentChatError(
    "INVALID_KFILE",
    line === undefined ? `K-file: ${message}` : `K-file line ${line}: ${message}`,
  );
}

function allowed(labels: readonly string[]): string {
  return labels.join(" | ");
}

/**
 * Parses the three-line text form. Blank lines and lines starting with `#` are ignored, CRLF is
 * accepted, the three keys may come in any order but each exactly once. Errors name the line,
 * what was expected there and the allowed labels.
 */
export function parseKFile(text: string): KFile {
  const found: Partial<Record<Key, number>> = {};
  let response: ResponseAction | undefined;
  let update: UpdateAction | undefined;
  let clarify: ClarifyAction | undefined;
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = i + 1;
    const trimmed = raw.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    const colon = trimmed.indexOf(":");
    if (colon < 0) {
      throw kfileError(
        line,
        `expected "Key: value" with Key one of ${KEYS.join(", ")}; got ${JSON.stringify(clip(trimmed))}`,
      );
    }
    const key = trimmed.slice(0, colon).trim();
    const canonical = KEYS.find((k) => k.toLowerCase() === key.toLowerCase());
    if (!canonical) {
      throw kfileError(
        line,
        `unknown key ${JSON.stringify(clip(key))}; a K-file has exactly the keys ${KEYS.join(", ")}`,
      );
    }
    if (found[canonical] !== undefined) {
      throw kfileError(line, `${canonical} given twice (first on line ${found[canonical]})`);
    }
    found[canonical] = line;
    const value = trimmed.slice(colon + 1).trim();
    if (canonical === "ResponseAction") response = label(value, RESPONSE_ACTIONS, canonical, line);
    else if (canonical === "ClarifyAction")
      clarify = label(value, CLARIFY_ACTIONS, canonical, line);
    else update = parseUpdate(value, line);
  });
  for (const key of KEYS) {
    if (found[key] === undefined) {
      throw kfileError(
        undefined,
        `missing the line "${key}: …" (a K-file has three lines: ResponseAction, UpdateAction, ClarifyAction)`,
      );
    }
  }
  if (update!.args === undefined && update!.action !== "none" && clarify === "none") {
    throw kfileError(
      found.UpdateAction,
      `UpdateAction ${update!.action} needs its arguments when ClarifyAction is none: ` +
        UPDATE_SYNTAX[update!.action],
    );
  }
  return { response: response!, update: update!, clarify: clarify! };
}

function label<T extends string>(value: string, labels: readonly T[], key: Key, line: number): T {
  if ((labels as readonly string[]).includes(value)) return value as T;
  throw kfileError(
    line,
    `${key} ${JSON.stringify(clip(value))} is not a label; allowed: ${allowed(labels)}`,
  );
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

type Token =
  | { kind: "ref"; ref: FolderRef; text: string }
  | { kind: "string"; value: string; text: string }
  | { kind: "word"; value: string; text: string };

/** Parses the value of the UpdateAction line, e.g. `rename-folder([blog], [posts], "…")`. */
export function parseUpdate(value: string, line = 2): UpdateAction {
  const m = /^([a-z-]+)\s*(?:\(([\s\S]*)\))?$/.exec(value);
  const name = m?.[1] ?? value.split("(")[0]!.trim();
  if (!(UPDATE_ACTIONS as readonly string[]).includes(name)) {
    throw kfileError(
      line,
      `UpdateAction ${JSON.stringify(clip(name))} is not a label; allowed: ${allowed(UPDATE_ACTIONS)}`,
    );
  }
  const action = name as UpdateLabel;
  if (!m) {
    throw kfileError(line, `malformed UpdateAction; expected ${UPDATE_SYNTAX[action]}`);
  }
  if (m[2] === undefined) return { action } as UpdateAction;
  if (action === "none") {
    throw kfileError(line, "UpdateAction none takes no arguments");
  }
  const tokens = tokenize(m[2], line, action);
  const expect = (i: number, kind: Token["kind"], what: string): Token => {
    const t = tokens[i];
    if (!t || t.kind !== kind) {
      const got = t ? `got ${t.text}` : "it is missing";
      throw kfileError(
        line,
        `argument ${i + 1} of ${action} must be ${what}; ${got}. Syntax: ${UPDATE_SYNTAX[action]}`,
      );
    }
    return t;
  };
  const ref = (i: number, what = "a folder like [blog] or [root]/[blog]") =>
    (expect(i, "ref", what) as { ref: FolderRef }).ref;
  const str = (i: number, what: string) => (expect(i, "string", what) as { value: string }).value;
  const checked = <T>(value: string, check: (v: string) => T): T => {
    try {
      return check(value);
    } catch (err) {
      throw kfileError(line, (err as Error).message);
    }
  };
  const file = (i: number) =>
    checked(str(i, 'a quoted file name like "notes.md"'), validateFileName);
  const count = (...n: number[]) => {
    if (!n.includes(tokens.length)) {
      throw kfileError(
        line,
        `${action} takes ${n.join(" or ")} argument(s), got ${tokens.length}. Syntax: ${UPDATE_SYNTAX[action]}`,
      );
    }
  };
  const desc = (i: number) =>
    checked(str(i, 'a quoted description like "article about the protocol"'), validateDescription);
  const newFolderName = (i: number): string => {
    const r = ref(i, "the new name in brackets, like [posts]");
    if (r.segments.length !== 1) {
      throw kfileError(line, `the new name of ${action} is one name, like [posts]`);
    }
    return r.segments[0]!;
  };
  switch (action) {
    case "create-folder": {
      count(1, 2);
      const folder = ref(0, "the new folder's path like [root]/[blog] or [protocol]/[notes]");
      const last = folder.segments[folder.segments.length - 1]!;
      if (last === ROOT_NAME) throw kfileError(line, "cannot create a folder named root");
      return {
        action,
        args: { folder, description: tokens.length === 2 ? desc(1) : "" },
      };
    }
    case "focus-folder":
    case "delete-folder":
      count(1);
      return { action, args: { folder: ref(0) } };
    case "rename-folder": {
      count(2, 3);
      const folder = ref(0);
      const newName = newFolderName(1);
      return tokens.length === 3
        ? { action, args: { folder, newName, description: desc(2) } }
        : { action, args: { folder, newName } };
    }
    case "move-folder":
      count(2);
      return { action, args: { folder: ref(0), to: ref(1, "the new parent like [protocol]") } };
    case "store-file":
    case "delete-file":
      count(2);
      return { action, args: { folder: ref(0), file: file(1) } };
    case "edit-file": {
      count(3);
      const mode = expect(2, "word", "append or replace") as { value: string };
      if (mode.value !== "append" && mode.value !== "replace") {
        throw kfileError(line, `edit-file mode must be append or replace, got ${mode.value}`);
      }
      return { action, args: { folder: ref(0), file: file(1), mode: mode.value } };
    }
    case "rename-file": {
      count(3);
      const folder = ref(0);
      const from = file(1);
      const to = checked(str(2, 'the new quoted file name like "final.md"'), validateFileName);
      return { action, args: { folder, file: from, newFile: to } };
    }
    case "move-file":
      count(3);
      return {
        action,
        args: { folder: ref(0), file: file(1), to: ref(2, "the destination folder like [blog]") },
      };
  }
}

function tokenize(src: string, line: number, action: UpdateLabel): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const skip = () => {
    while (i < src.length && /\s/.test(src[i]!)) i++;
  };
  const fail = (msg: string) =>
    kfileError(line, `${msg} in the arguments of ${action}. Syntax: ${UPDATE_SYNTAX[action]}`);
  skip();
  if (i === src.length) return tokens;
  for (;;) {
    skip();
    const start = i;
    const ch = src[i];
    if (ch === "[") {
      const segments: string[] = [];
      for (;;) {
        const close = src.indexOf("]", i);
        if (close < 0) throw fail("unclosed [");
        const seg = src.slice(i + 1, close);
        if (seg !== ROOT_NAME || segments.length > 0) {
          try {
            validateFolderName(seg);
          } catch (err) {
            if (seg === ROOT_NAME) throw fail("[root] may only start a path");
            throw kfileError(line, (err as Error).message);
          }
        }
        segments.push(seg);
        i = close + 1;
        if (src[i] === "/" && src[i + 1] === "[") {
          i++;
          continue;
        }
        break;
      }
      tokens.push({ kind: "ref", ref: { segments }, text: src.slice(start, i) });
    } else if (ch === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      if (j >= src.length) throw fail("unclosed quote");
      const text = src.slice(i, j + 1);
      let value: string;
      try {
        value = JSON.parse(text) as string;
      } catch {
        throw fail(`bad escape in ${clip(text)}`);
      }
      tokens.push({ kind: "string", value, text });
      i = j + 1;
    } else {
      const m = /^[a-z]+/.exec(src.slice(i));
      if (!m) throw fail(`unexpected ${JSON.stringify(src.slice(i, i + 12))}`);
      tokens.push({ kind: "word", value: m[0], text: m[0] });
      i += m[0].length;
    }
    skip();
    if (i === src.length) return tokens;
    if (src[i] !== ",") throw fail(`expected "," after ${tokens[tokens.length - 1]!.text}`);
    i++;
  }
}

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
