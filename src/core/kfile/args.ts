import { kfileError } from "./error.js";
import {
  type ArgLabel,
  type EditMode,
  type FolderRef,
  ROOT_NAME,
  UPDATE_SYNTAX,
  type UpdateArgs,
  type UpdateOf,
} from "./labels.js";
import { validateDescription, validateFileName } from "./names.js";
import type { Token } from "./tokens.js";

/**
 * The arguments of one UpdateAction, read by position. Each reader checks the token it takes and
 * throws the error the author of the K-file sees: the line, what was expected, the syntax.
 */
class ArgReader {
  constructor(
    readonly tokens: Token[],
    private readonly action: ArgLabel,
    private readonly line: number,
  ) {}

  fail(message: string) {
    return kfileError(this.line, message);
  }

  count(...n: number[]): void {
    if (n.includes(this.tokens.length)) return;
    throw this.fail(
      `${this.action} takes ${n.join(" or ")} argument(s), got ${this.tokens.length}. Syntax: ${UPDATE_SYNTAX[this.action]}`,
    );
  }

  ref(i: number, what = "a folder like [blog] or [root]/[blog]"): FolderRef {
    const t = this.tokens[i];
    if (t?.kind === "ref") return t.ref;
    throw this.wrong(i, what);
  }

  file(i: number, what = 'a quoted file name like "notes.md"'): string {
    return this.checked(this.str(i, what), validateFileName);
  }

  description(i: number): string {
    const what = 'a quoted description like "article about the protocol"';
    return this.checked(this.str(i, what), validateDescription);
  }

  /** A folder's new name: one name in brackets. */
  newName(i: number): string {
    const r = this.ref(i, "the new name in brackets, like [posts]");
    if (r.segments.length !== 1) {
      throw this.fail(`the new name of ${this.action} is one name, like [posts]`);
    }
    return r.segments[0]!;
  }

  mode(i: number): EditMode {
    const t = this.tokens[i];
    if (t?.kind !== "word") throw this.wrong(i, "append or replace");
    if (t.value !== "append" && t.value !== "replace") {
      throw this.fail(`edit-file mode must be append or replace, got ${t.value}`);
    }
    return t.value;
  }

  private str(i: number, what: string): string {
    const t = this.tokens[i];
    if (t?.kind === "string") return t.value;
    throw this.wrong(i, what);
  }

  private checked(value: string, check: (v: string) => string): string {
    try {
      return check(value);
    } catch (err) {
      throw this.fail((err as Error).message);
    }
  }

  private wrong(i: number, what: string) {
    const t = this.tokens[i];
    const got = t ? `got ${t.text}` : "it is missing";
    return this.fail(
      `argument ${i + 1} of ${this.action} must be ${what}; ${got}. Syntax: ${UPDATE_SYNTAX[this.action]}`,
    );
  }
}

/** How each UpdateAction's arguments are read: a label without a reader does not compile. */
/** The `[folder] "file"` the file actions start with, once the line has `count` arguments. */
function folderAndFile(r: ArgReader, count: number): { folder: FolderRef; file: string } {
  r.count(count);
  return { folder: r.ref(0), file: r.file(1) };
}

const PARSE_ARGS: { [K in ArgLabel]: (r: ArgReader) => UpdateArgs[K] } = {
  "create-folder": (r) => {
    r.count(1, 2);
    const folder = r.ref(0, "the new folder's path like [root]/[blog] or [protocol]/[notes]");
    if (folder.segments[folder.segments.length - 1] === ROOT_NAME) {
      throw r.fail("cannot create a folder named root");
    }
    return { folder, description: r.tokens.length === 2 ? r.description(1) : "" };
  },
  "focus-folder": (r) => {
    r.count(1);
    return { folder: r.ref(0) };
  },
  "rename-folder": (r) => {
    r.count(2, 3);
    const folder = r.ref(0);
    const newName = r.newName(1);
    return r.tokens.length === 3
      ? { folder, newName, description: r.description(2) }
      : { folder, newName };
  },
  "move-folder": (r) => {
    r.count(2);
    return { folder: r.ref(0), to: r.ref(1, "the new parent like [protocol]") };
  },
  "delete-folder": (r) => {
    r.count(1);
    return { folder: r.ref(0) };
  },
  "store-file": (r) => folderAndFile(r, 2),
  "edit-file": (r) => {
    r.count(3);
    const mode = r.mode(2);
    return { folder: r.ref(0), file: r.file(1), mode };
  },
  "rename-file": (r) => {
    const target = folderAndFile(r, 3);
    return { ...target, newFile: r.file(2, 'the new quoted file name like "final.md"') };
  },
  "move-file": (r) => {
    const target = folderAndFile(r, 3);
    return { ...target, to: r.ref(2, "the destination folder like [blog]") };
  },
  "delete-file": (r) => folderAndFile(r, 2),
};

/** The UpdateAction `action` with its arguments read from `tokens`. */
export function parseArgs<K extends ArgLabel>(
  action: K,
  tokens: Token[],
  line: number,
): UpdateOf<K> {
  return { action, args: PARSE_ARGS[action](new ArgReader(tokens, action, line)) };
}
