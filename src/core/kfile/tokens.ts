import { clip, kfileError } from "./error.js";
import { type FolderRef, ROOT_NAME, UPDATE_SYNTAX, type UpdateLabel } from "./labels.js";
import { validateFolderName } from "./names.js";

/** One argument of an UpdateAction: `[a]/[b]`, `"text"` or a bare word; `text` as written. */
export type Token =
  | { kind: "ref"; ref: FolderRef; text: string }
  | { kind: "string"; value: string; text: string }
  | { kind: "word"; value: string; text: string };

/** Splits the text between an UpdateAction's parentheses into its comma-separated arguments. */
export function tokenize(src: string, line: number, action: UpdateLabel): Token[] {
  return new Tokenizer(src, line, action).all();
}

class Tokenizer {
  private i = 0;

  constructor(
    private readonly src: string,
    private readonly line: number,
    private readonly action: UpdateLabel,
  ) {}

  all(): Token[] {
    const tokens: Token[] = [];
    this.skipSpace();
    if (this.i === this.src.length) return tokens;
    for (;;) {
      this.skipSpace();
      tokens.push(this.next());
      this.skipSpace();
      if (this.i === this.src.length) return tokens;
      if (this.src[this.i] !== ",") {
        throw this.fail(`expected "," after ${tokens[tokens.length - 1]!.text}`);
      }
      this.i++;
    }
  }

  private next(): Token {
    const ch = this.src[this.i];
    if (ch === "[") return this.ref();
    if (ch === '"') return this.string();
    return this.word();
  }

  private ref(): Token {
    const start = this.i;
    const segments: string[] = [];
    for (;;) {
      const close = this.src.indexOf("]", this.i);
      if (close < 0) throw this.fail("unclosed [");
      segments.push(this.segment(this.src.slice(this.i + 1, close), segments.length));
      this.i = close + 1;
      if (this.src[this.i] !== "/" || this.src[this.i + 1] !== "[") break;
      this.i++;
    }
    return { kind: "ref", ref: { segments }, text: this.src.slice(start, this.i) };
  }

  /** The name inside one `[…]` of a reference; `[root]` may only come first. */
  private segment(name: string, index: number): string {
    if (name === ROOT_NAME && index === 0) return name;
    try {
      return validateFolderName(name);
    } catch (err) {
      if (name === ROOT_NAME) throw this.fail("[root] may only start a path");
      throw kfileError(this.line, (err as Error).message);
    }
  }

  /** A double-quoted string with JSON escapes. */
  private string(): Token {
    let j = this.i + 1;
    while (j < this.src.length && this.src[j] !== '"') j += this.src[j] === "\\" ? 2 : 1;
    if (j >= this.src.length) throw this.fail("unclosed quote");
    const text = this.src.slice(this.i, j + 1);
    this.i = j + 1;
    try {
      return { kind: "string", value: JSON.parse(text) as string, text };
    } catch {
      throw this.fail(`bad escape in ${clip(text)}`);
    }
  }

  private word(): Token {
    const m = /^[a-z]+/.exec(this.src.slice(this.i));
    if (!m) throw this.fail(`unexpected ${JSON.stringify(this.src.slice(this.i, this.i + 12))}`);
    this.i += m[0].length;
    return { kind: "word", value: m[0], text: m[0] };
  }

  private skipSpace(): void {
    while (this.i < this.src.length && /\s/.test(this.src[this.i]!)) this.i++;
  }

  private fail(message: string) {
    return kfileError(
      this.line,
      `${message} in the arguments of ${this.action}. Syntax: ${UPDATE_SYNTAX[this.action]}`,
    );
  }
}
