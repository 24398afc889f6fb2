/**
 * A small markdown subset, parsed into a tree that the page turns into DOM nodes with
 * `textContent` only: message text is never parsed as HTML, so a body cannot run script, and
 * images are shown as links, so a body cannot make the page load anything.
 *
 * Blocks: paragraphs, `#` headings, fenced and indented code, `-`/`*`/`+` and `1.` lists,
 * `>` quotes, `---` rules. Inline: `code`, **strong**, *emphasis*, ~~strike~~, [links](url),
 * bare http(s) URLs, backslash escapes; a line break inside a paragraph is kept (chat style).
 *
 * A body is input from anyone who can write a file in the root, so the parser is linear in the
 * length of what it renders (no construct rescans the rest of the text once per character),
 * nests quotes and inline markup only so deep, and renders only the first MARKDOWN_LIMIT
 * characters as markdown: the rest of a longer body is shown as plain text.
 */

/** Characters of a body rendered as markdown; the rest is plain text. */
export const MARKDOWN_LIMIT = 64 * 1024;
/** Deeper quotes and inline markup are shown as the text they contain. */
const MAX_DEPTH = 8;

export type Inline =
  | { type: "text"; text: string }
  | { type: "code"; text: string }
  | { type: "strong" | "em" | "del"; children: Inline[] }
  | { type: "link"; href: string; children: Inline[] }
  | { type: "image"; href: string; alt: string }
  | { type: "br" };

export type Block =
  | { type: "paragraph"; children: Inline[] }
  | { type: "heading"; level: number; children: Inline[] }
  | { type: "code"; lang: string; text: string }
  | { type: "list"; ordered: boolean; start: number; items: Inline[][] }
  | { type: "quote"; children: Block[] }
  | { type: "rule" }
  /** Text shown as it is, line breaks kept: the part of a long body past MARKDOWN_LIMIT. */
  | { type: "text"; text: string };

/** Only these schemes become links; anything else (javascript:, data:, …) stays text. */
export function safeHref(href: string): string | undefined {
  const h = href.trim();
  return /^(https?:\/\/|mailto:)/i.test(h) && !/[\s<>"]/.test(h) ? h : undefined;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*)$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^ {0,3}[-*+]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const INDENTED = /^( {4}|\t)(.*)$/;

export function parseMarkdown(source: string): Block[] {
  if (source.length <= MARKDOWN_LIMIT) return parseBlocks(source, 0);
  // Cut after the last line end within the limit (inside a line only if it has none), and never
  // between the two halves of a surrogate pair.
  let cut = source.lastIndexOf("\n", MARKDOWN_LIMIT - 1) + 1;
  if (cut === 0) {
    cut = MARKDOWN_LIMIT;
    if (/[\uD800-\uDBFF]/.test(source[cut - 1]!)) cut -= 1;
  }
  return [...parseBlocks(source.slice(0, cut), 0), { type: "text", text: source.slice(cut) }];
}

function parseBlocks(source: string, depth: number): Block[] {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i]!.trim() === "") {
      i += 1;
      continue;
    }
    const parsed = parseBlock(lines, i, depth);
    blocks.push(parsed.block);
    i = parsed.next;
  }
  return blocks;
}

/** One block starting at the non-blank line `i`, and the line after it. */
interface Parsed {
  block: Block;
  next: number;
}

type BlockParser = (lines: string[], i: number, depth: number) => Parsed | undefined;

/** Tried in this order at the start of each block; a line none claims starts a paragraph. */
const BLOCK_PARSERS: readonly BlockParser[] = [
  fencedCode,
  heading,
  rule,
  quote,
  list,
  indentedCode,
];

function parseBlock(lines: string[], i: number, depth: number): Parsed {
  for (const parser of BLOCK_PARSERS) {
    const parsed = parser(lines, i, depth);
    if (parsed) return parsed;
  }
  return paragraph(lines, i, depth);
}

function fencedCode(lines: string[], start: number): Parsed | undefined {
  const fence = FENCE.exec(lines[start]!);
  if (!fence) return undefined;
  const marker = fence[1]!;
  const body: string[] = [];
  let i = start + 1;
  while (i < lines.length && !lines[i]!.trimStart().startsWith(marker)) {
    body.push(lines[i]!);
    i += 1;
  }
  // Past the closing fence (or the end of the text).
  return { block: { type: "code", lang: fence[2] ?? "", text: body.join("\n") }, next: i + 1 };
}

function heading(lines: string[], i: number, depth: number): Parsed | undefined {
  const m = HEADING.exec(lines[i]!);
  if (!m) return undefined;
  const children = parseInline(headingText(m[2]!), depth);
  return { block: { type: "heading", level: m[1]!.length, children }, next: i + 1 };
}

function rule(lines: string[], i: number): Parsed | undefined {
  return RULE.test(lines[i]!) ? { block: { type: "rule" }, next: i + 1 } : undefined;
}

function quote(lines: string[], start: number, depth: number): Parsed | undefined {
  if (!QUOTE.test(lines[start]!)) return undefined;
  const inner: string[] = [];
  let i = start;
  while (i < lines.length && QUOTE.test(lines[i]!)) {
    inner.push(QUOTE.exec(lines[i]!)![1]!);
    i += 1;
  }
  const text = inner.join("\n");
  const children: Block[] =
    depth + 1 < MAX_DEPTH
      ? parseBlocks(text, depth + 1)
      : [{ type: "paragraph", children: parseInline(text, MAX_DEPTH) }];
  return { block: { type: "quote", children }, next: i };
}

function list(lines: string[], start: number, depth: number): Parsed | undefined {
  const bullet = BULLET.exec(lines[start]!);
  const ordered = ORDERED.exec(lines[start]!);
  if (!bullet && !ordered) return undefined;
  const pattern = bullet ? BULLET : ORDERED;
  const items: string[][] = [];
  let i = start;
  for (; i < lines.length; i += 1) {
    const current = lines[i]!;
    const m = pattern.exec(current);
    if (m) {
      items.push([bullet ? m[1]! : m[2]!]);
    } else if (current.trim() !== "" && /^\s/.test(current) && items.length > 0) {
      items.at(-1)!.push(current.trim()); // a continuation line of the item
    } else {
      break;
    }
  }
  const block: Block = {
    type: "list",
    ordered: !bullet,
    start: ordered ? Number(ordered[1]) : 1,
    items: items.map((item) => parseInline(item.join("\n"), depth)),
  };
  return { block, next: i };
}

function indentedCode(lines: string[], start: number): Parsed | undefined {
  if (!INDENTED.test(lines[start]!)) return undefined;
  const body: string[] = [];
  let i = start;
  while (i < lines.length && (INDENTED.test(lines[i]!) || lines[i]!.trim() === "")) {
    body.push(lines[i]!.replace(/^( {4}|\t)/, ""));
    i += 1;
  }
  while (body.length > 0 && body.at(-1) === "") body.pop();
  return { block: { type: "code", lang: "", text: body.join("\n") }, next: i };
}

/** Lines up to a blank one or one that starts another block (a list or rule only after one). */
function paragraph(lines: string[], start: number, depth: number): Parsed {
  const para: string[] = [];
  let i = start;
  for (; i < lines.length; i += 1) {
    const current = lines[i]!;
    const interrupts =
      current.trim() === "" ||
      FENCE.test(current) ||
      HEADING.test(current) ||
      QUOTE.test(current) ||
      (para.length > 0 && (BULLET.test(current) || RULE.test(current)));
    if (interrupts) break;
    para.push(current);
  }
  return { block: { type: "paragraph", children: parseInline(para.join("\n"), depth) }, next: i };
}

/** A heading's text without its optional closing `#`s (`## Title ##`). */
function headingText(raw: string): string {
  const text = raw.trimEnd();
  let end = text.length;
  while (end > 0 && text[end - 1] === "#") end -= 1;
  return end === 0 || /\s/.test(text[end - 1]!) ? text.slice(0, end).trimEnd() : text;
}

const URL_START = /https?:\/\/[^\s<>"]+/y;

/**
 * Inline markup of `text`. Every search for a closing marker is remembered for the rest of the
 * call (a search that found nothing is not repeated from a later position, brackets and
 * parentheses are matched once per line), so each level of nesting reads the text a bounded
 * number of times.
 */
export function parseInline(text: string, depth = 0): Inline[] {
  if (depth >= MAX_DEPTH) return plainInline(text);
  const scan = new InlineScan(text, depth);
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = INLINE_RULES[c]?.(scan, i);
    if (next === undefined) {
      scan.buffer += c;
      i += 1;
    } else i = next;
  }
  scan.flush();
  return scan.out;
}

/** One `parseInline` call's state: what it has emitted and the plain text not yet emitted. */
class InlineScan {
  readonly out: Inline[] = [];
  buffer = "";
  private finder: Finder | undefined; // made on first use: most nested texts need none

  constructor(
    readonly text: string,
    readonly depth: number,
  ) {}

  get find(): Finder {
    this.finder ??= new Finder(this.text);
    return this.finder;
  }

  flush(): void {
    if (this.buffer !== "") this.out.push({ type: "text", text: this.buffer });
    this.buffer = "";
  }

  emit(...items: Inline[]): void {
    this.flush();
    this.out.push(...items);
  }

  /** The markup of `text` one level deeper. */
  nested(text: string): Inline[] {
    return parseInline(text, this.depth + 1);
  }
}

/**
 * The markup starting at `i`, emitted or kept as plain text: the position after it, or
 * undefined when `i` starts none (the character is then plain text).
 */
type InlineRule = (scan: InlineScan, i: number) => number | undefined;

const escaped: InlineRule = (scan, i) => {
  const next = scan.text[i + 1];
  if (next === undefined || !/[!-/:-@[-`{-~]/.test(next)) return undefined;
  scan.buffer += next;
  return i + 2;
};

const lineBreak: InlineRule = (scan, i) => {
  scan.emit({ type: "br" });
  return i + 1;
};

const codeSpan: InlineRule = (scan, i) => {
  const { text } = scan;
  let run = 1;
  while (text[i + run] === "`") run += 1;
  const close = scan.find.backticks(i + run, run);
  if (close > 0) {
    scan.emit({ type: "code", text: text.slice(i + run, close).trim() || " " });
    return close + run;
  }
  scan.buffer += text.slice(i, i + run);
  return i + run;
};

/** `**strong**`, `__strong__` or `~~deleted~~`; an unclosed pair stays plain text. */
const pairSpan: InlineRule = (scan, i) => {
  const pair = scan.text.slice(i, i + 2);
  if (pair !== "**" && pair !== "__" && pair !== "~~") return undefined;
  const close = scan.find.pair(pair, i + 2);
  if (close > i + 2) {
    const type = pair === "~~" ? "del" : "strong";
    scan.emit({ type, children: scan.nested(scan.text.slice(i + 2, close)) });
    return close + 2;
  }
  scan.buffer += pair;
  return i + 2;
};

/** `*em*` or `_em_` (not inside a word: `snake_case` stays as it is). */
const emphasis: InlineRule = (scan, i) => {
  const { text } = scan;
  const marker = text[i]!;
  if (text[i + 1] === undefined || /\s/.test(text[i + 1]!)) return undefined;
  const wordBefore = i > 0 && /\w/.test(text[i - 1]!);
  const close = marker === "_" && wordBefore ? -1 : scan.find.emphasisEnd(i + 1, marker);
  if (close <= 0) return undefined;
  scan.emit({ type: "em", children: scan.nested(text.slice(i + 1, close)) });
  return close + 1;
};

const strongOrEmphasis: InlineRule = (scan, i) => pairSpan(scan, i) ?? emphasis(scan, i);

/** `[label](href)` or `![alt](src)`; an unsafe href leaves the label as text. */
const linkOrImage: InlineRule = (scan, i) => {
  const image = scan.text[i] === "!";
  if (image && scan.text[i + 1] !== "[") return undefined;
  const link = parseLink(scan.text, image ? i + 1 : i, scan.find);
  if (!link) return undefined;
  const href = safeHref(link.href);
  if (image) {
    scan.emit(href ? { type: "image", href, alt: link.label } : { type: "text", text: link.label });
  } else if (href) {
    scan.emit({ type: "link", href, children: scan.nested(link.label) });
  } else {
    scan.emit(...scan.nested(link.label));
  }
  return link.end;
};

/** A bare `http(s)://` URL at the start of a word or after `(`. */
const bareUrl: InlineRule = (scan, i) => {
  if (i > 0 && !/[\s(]/.test(scan.text[i - 1]!)) return undefined;
  URL_START.lastIndex = i;
  const m = URL_START.exec(scan.text);
  if (!m) return undefined;
  const url = trimUrlEnd(m[0]);
  scan.emit({ type: "link", href: url, children: [{ type: "text", text: url }] });
  return i + url.length;
};

/** The rule for each character that can start inline markup; every other one is plain text. */
const INLINE_RULES: Readonly<Record<string, InlineRule>> = {
  "\\": escaped,
  "\n": lineBreak,
  "`": codeSpan,
  "*": strongOrEmphasis,
  _: strongOrEmphasis,
  "~": pairSpan,
  "[": linkOrImage,
  "!": linkOrImage,
  h: bareUrl,
  H: bareUrl,
};

/** Text too deeply nested to parse further: shown as it is, line breaks kept. */
function plainInline(text: string): Inline[] {
  const out: Inline[] = [];
  text.split("\n").forEach((line, k) => {
    if (k > 0) out.push({ type: "br" });
    if (line !== "") out.push({ type: "text", text: line });
  });
  return out;
}

/** A bare URL without the punctuation that usually ends the sentence around it. */
function trimUrlEnd(url: string): string {
  let end = url.length;
  while (end > 0 && ".,;:!?)".includes(url[end - 1]!)) end -= 1;
  return url.slice(0, end);
}

/** The closing-marker searches of one `parseInline` call, each remembered. */
class Finder {
  /** A search for this pair from this position or later finds nothing. */
  private readonly noPairFrom = new Map<string, number>();
  /** Backtick runs of at least this length have no closing run from this position on. */
  private readonly noRunFrom = new Map<number, number>();
  /** No closing emphasis marker from `from` up to `until` (the end of its line). */
  private readonly noEmphasis = new Map<string, { from: number; until: number }>();
  /** The matching `]` of each `[`, and `)` of each `(`, on the line last looked at. */
  private readonly matches = new Map<number, number>();
  private lineStart = -1;
  private lineEnd = -1;

  constructor(private readonly text: string) {}

  pair(pair: string, from: number): number {
    if (from >= (this.noPairFrom.get(pair) ?? Number.POSITIVE_INFINITY)) return -1;
    const close = this.text.indexOf(pair, from);
    if (close < 0) this.noPairFrom.set(pair, from);
    return close;
  }

  backticks(from: number, run: number): number {
    for (const [length, noneFrom] of this.noRunFrom) {
      if (run >= length && from >= noneFrom) return -1;
    }
    const close = this.text.indexOf("`".repeat(run), from);
    if (close < 0) this.noRunFrom.set(run, from);
    return close;
  }

  /** The `marker` closing an emphasis opened just before `from`, on the same line; -1 if none. */
  emphasisEnd(from: number, marker: string): number {
    const known = this.noEmphasis.get(marker);
    if (known && from >= known.from && from < known.until) return -1;
    const text = this.text;
    let j = from + 1;
    for (; j < text.length && text[j] !== "\n"; j += 1) {
      if (text[j] === marker && !/\s/.test(text[j - 1]!) && text[j + 1] !== marker) {
        if (marker === "_" && j + 1 < text.length && /\w/.test(text[j + 1]!)) continue;
        return j;
      }
    }
    this.noEmphasis.set(marker, { from, until: j });
    return -1;
  }

  /** The `]` matching the `[` at `open` on its line, or the `)` matching a `(`; -1 if none. */
  matching(open: number): number {
    // Positions only grow within a call, so each line is matched once.
    if (open < this.lineStart || open >= this.lineEnd) this.matchLine(open);
    return this.matches.get(open) ?? -1;
  }

  /** Pairs the brackets and the parentheses of the line that holds `at`. */
  private matchLine(at: number): void {
    const text = this.text;
    this.matches.clear();
    this.lineStart = text.lastIndexOf("\n", at) + 1;
    const brackets: number[] = [];
    const parens: number[] = [];
    let j = this.lineStart;
    for (; j < text.length && text[j] !== "\n"; j += 1) {
      const ch = text[j];
      if (ch === "[") brackets.push(j);
      else if (ch === "(") parens.push(j);
      else if (ch === "]" && brackets.length > 0) this.matches.set(brackets.pop()!, j);
      else if (ch === ")" && parens.length > 0) this.matches.set(parens.pop()!, j);
    }
    this.lineEnd = j;
  }
}

function parseLink(
  text: string,
  open: number,
  find: Finder,
): { label: string; href: string; end: number } | undefined {
  const close = find.matching(open);
  if (close < 0 || text[close + 1] !== "(") return undefined;
  const end = find.matching(close + 1);
  if (end < 0) return undefined;
  const href =
    text
      .slice(close + 2, end)
      .trim()
      .split(/\s+/)[0] ?? "";
  return { label: text.slice(open + 1, close), href, end: end + 1 };
}
