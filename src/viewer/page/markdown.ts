/**
 * A small markdown subset, parsed into a tree that the page turns into DOM nodes with
 * `textContent` only: message text is never parsed as HTML, so a body cannot run script, and
 * images are shown as links, so a body cannot make the page load anything.
 *
 * Blocks: paragraphs, `#` headings, fenced and indented code, `-`/`*`/`+` and `1.` lists,
 * `>` quotes, `---` rules. Inline: `code`, **strong**, *emphasis*, ~~strike~~, [links](url),
 * bare http(s) URLs, backslash escapes; a line break inside a paragraph is kept (chat style).
 */

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
  | { type: "rule" };

/** Only these schemes become links; anything else (javascript:, data:, …) stays text. */
export function safeHref(href: string): string | undefined {
  const h = href.trim();
  return /^(https?:\/\/|mailto:)/i.test(h) && !/[\s<>"]/.test(h) ? h : undefined;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^ {0,3}[-*+]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const INDENTED = /^( {4}|\t)(.*)$/;

export function parseMarkdown(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "") {
      i += 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const body: string[] = [];
      i += 1;
      while (i < lines.length && !lines[i]!.trimStart().startsWith(marker)) {
        body.push(lines[i]!);
        i += 1;
      }
      i += 1; // the closing fence (or the end of the text)
      blocks.push({ type: "code", lang: fence[2] ?? "", text: body.join("\n") });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      blocks.push({
        type: "heading",
        level: heading[1]!.length,
        children: parseInline(heading[2]!),
      });
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ type: "rule" });
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) {
        inner.push(QUOTE.exec(lines[i]!)![1]!);
        i += 1;
      }
      blocks.push({ type: "quote", children: parseMarkdown(inner.join("\n")) });
      continue;
    }
    const bullet = BULLET.exec(line);
    const ordered = ORDERED.exec(line);
    if (bullet || ordered) {
      const pattern = bullet ? BULLET : ORDERED;
      const items: string[][] = [];
      while (i < lines.length) {
        const current = lines[i]!;
        const m = pattern.exec(current);
        if (m) {
          items.push([bullet ? m[1]! : m[2]!]);
        } else if (current.trim() !== "" && /^\s+/.test(current) && items.length > 0) {
          items.at(-1)!.push(current.trim()); // a continuation line of the item
        } else {
          break;
        }
        i += 1;
      }
      blocks.push({
        type: "list",
        ordered: !bullet,
        start: ordered ? Number(ordered[1]) : 1,
        items: items.map((item) => parseInline(item.join("\n"))),
      });
      continue;
    }
    if (INDENTED.test(line)) {
      const body: string[] = [];
      while (i < lines.length && (INDENTED.test(lines[i]!) || lines[i]!.trim() === "")) {
        body.push(lines[i]!.replace(/^( {4}|\t)/, ""));
        i += 1;
      }
      blocks.push({ type: "code", lang: "", text: body.join("\n").replace(/\n+$/, "") });
      continue;
    }
    const para: string[] = [];
    while (i < lines.length) {
      const current = lines[i]!;
      if (
        current.trim() === "" ||
        FENCE.test(current) ||
        HEADING.test(current) ||
        QUOTE.test(current) ||
        (para.length > 0 && (BULLET.test(current) || RULE.test(current)))
      ) {
        break;
      }
      para.push(current);
      i += 1;
    }
    blocks.push({ type: "paragraph", children: parseInline(para.join("\n")) });
  }
  return blocks;
}

const URL_START = /https?:\/\/[^\s<>"]+/y;

export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let buffer = "";
  const flush = () => {
    if (buffer !== "") out.push({ type: "text", text: buffer });
    buffer = "";
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1]!)) {
      buffer += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "\n") {
      flush();
      out.push({ type: "br" });
      i += 1;
      continue;
    }
    if (c === "`") {
      const run = /^`+/.exec(text.slice(i))![0];
      const close = text.indexOf(run, i + run.length);
      if (close > 0) {
        flush();
        out.push({ type: "code", text: text.slice(i + run.length, close).trim() || " " });
        i = close + run.length;
        continue;
      }
      buffer += run;
      i += run.length;
      continue;
    }
    const pair = text.slice(i, i + 2);
    if (pair === "**" || pair === "__" || pair === "~~") {
      const close = text.indexOf(pair, i + 2);
      if (close > i + 2) {
        flush();
        const type = pair === "~~" ? "del" : "strong";
        out.push({ type, children: parseInline(text.slice(i + 2, close)) });
        i = close + 2;
        continue;
      }
      buffer += pair;
      i += 2;
      continue;
    }
    if ((c === "*" || c === "_") && text[i + 1] !== undefined && !/\s/.test(text[i + 1]!)) {
      const wordBefore = i > 0 && /\w/.test(text[i - 1]!);
      const close = findEmphasisEnd(text, i + 1, c);
      if (close > 0 && !(c === "_" && wordBefore)) {
        flush();
        out.push({ type: "em", children: parseInline(text.slice(i + 1, close)) });
        i = close + 1;
        continue;
      }
    }
    if (c === "[" || (c === "!" && text[i + 1] === "[")) {
      const image = c === "!";
      const link = parseLink(text, image ? i + 1 : i);
      if (link) {
        flush();
        const href = safeHref(link.href);
        if (image) {
          out.push(
            href ? { type: "image", href, alt: link.label } : { type: "text", text: link.label },
          );
        } else if (href) {
          out.push({ type: "link", href, children: parseInline(link.label) });
        } else {
          out.push(...parseInline(link.label));
        }
        i = link.end;
        continue;
      }
    }
    if ((c === "h" || c === "H") && (i === 0 || /[\s(]/.test(text[i - 1]!))) {
      URL_START.lastIndex = i;
      const m = URL_START.exec(text);
      if (m) {
        const url = m[0].replace(/[.,;:!?)]+$/, "");
        flush();
        out.push({ type: "link", href: url, children: [{ type: "text", text: url }] });
        i += url.length;
        continue;
      }
    }
    buffer += c;
    i += 1;
  }
  flush();
  return out;
}

function findEmphasisEnd(text: string, from: number, marker: string): number {
  for (let j = from + 1; j < text.length; j += 1) {
    if (text[j] === "\n") return -1;
    if (text[j] === marker && !/\s/.test(text[j - 1]!) && text[j + 1] !== marker) {
      if (marker === "_" && j + 1 < text.length && /\w/.test(text[j + 1]!)) continue;
      return j;
    }
  }
  return -1;
}

function parseLink(
  text: string,
  open: number,
): { label: string; href: string; end: number } | undefined {
  let depth = 0;
  for (let j = open; j < text.length; j += 1) {
    const ch = text[j];
    if (ch === "\n") return undefined;
    if (ch === "[") depth += 1;
    else if (ch === "]") {
      depth -= 1;
      if (depth === 0) {
        if (text[j + 1] !== "(") return undefined;
        const close = closingParen(text, j + 1);
        if (close < 0) return undefined;
        const href =
          text
            .slice(j + 2, close)
            .trim()
            .split(/\s+/)[0] ?? "";
        return { label: text.slice(open + 1, j), href, end: close + 1 };
      }
    }
  }
  return undefined;
}

/** The `)` matching the `(` at `open`, counting nested pairs (URLs may hold them). */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let j = open; j < text.length; j += 1) {
    if (text[j] === "\n") return -1;
    if (text[j] === "(") depth += 1;
    else if (text[j] === ")") {
      depth -= 1;
      if (depth === 0) return j;
    }
  }
  return -1;
}
