import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Block,
  type Inline,
  MARKDOWN_LIMIT,
  parseInline,
  parseMarkdown,
  safeHref,
} from "../../src/viewer/page/markdown.js";

/** The text a tree would show, to check that nothing is lost or invented. */
function text(inlines: Inline[]): string {
  return inlines
    .map((i) => {
      if (i.type === "text" || i.type === "code") return i.text;
      if (i.type === "br") return "\n";
      if (i.type === "image") return `image: ${i.alt}`;
      return text(i.children);
    })
    .join("");
}

describe("the page's markdown subset", () => {
  it("parses the blocks agents write", () => {
    const blocks = parseMarkdown(
      "# Plan\n\nFirst *line*\nsecond **line**\n\n- a\n- b `c`\n\n1. one\n2. two\n\n> quoted\n\n```ts\nconst x = 1 < 2;\n```\n\n---",
    );
    expect(blocks.map((b) => b.type)).toEqual([
      "heading",
      "paragraph",
      "list",
      "list",
      "quote",
      "code",
      "rule",
    ]);
    expect(blocks[5]).toEqual({ type: "code", lang: "ts", text: "const x = 1 < 2;" });
    const para = blocks[1]!;
    expect(para.type === "paragraph" && para.children.map((c) => c.type)).toEqual([
      "text",
      "em",
      "br",
      "text",
      "strong",
    ]);
  });

  it("keeps markup-looking text as text", () => {
    const payload = `<script>alert(1)</script> <img src=x onerror=alert(2)>`;
    expect(parseInline(payload)).toEqual([{ type: "text", text: payload }]);
  });

  it("links only http(s) and mailto URLs; other schemes stay text", () => {
    expect(parseInline("[a](javascript:alert(1))")).toEqual([{ type: "text", text: "a" }]);
    expect(parseInline("[a](data:text/html,<b>x</b>)")).toEqual([{ type: "text", text: "a" }]);
    expect(parseInline("[a](https://x.test/p_(1))")).toEqual([
      { type: "link", href: "https://x.test/p_(1)", children: [{ type: "text", text: "a" }] },
    ]);
    expect(parseInline("see https://x.test/a.")).toEqual([
      { type: "text", text: "see " },
      {
        type: "link",
        href: "https://x.test/a",
        children: [{ type: "text", text: "https://x.test/a" }],
      },
      { type: "text", text: "." },
    ]);
    expect(safeHref("JAVASCRIPT:alert(1)")).toBeUndefined();
    expect(safeHref('https://x.test/"onmouseover=x')).toBeUndefined();
  });

  it("turns images into links that are never loaded", () => {
    expect(parseInline("![pixel](https://t.test/p.png)")).toEqual([
      { type: "image", href: "https://t.test/p.png", alt: "pixel" },
    ]);
    expect(parseInline("![pixel](javascript:x)")).toEqual([{ type: "text", text: "pixel" }]);
  });

  it("loses no text on unbalanced or odd markup", () => {
    for (const source of [
      "**open",
      "a * b * c",
      "`x",
      "[x](",
      "snake_case_name",
      "2 * 3 = 6",
      "\\*literal\\*",
    ]) {
      const shown = text(parseInline(source));
      expect(shown.replace(/\\/g, ""), source).toBe(source.replace(/\\/g, ""));
    }
  });
});

/** Every node of a tree, depth first. */
function* nodes(blocks: Block[]): Generator<Block | Inline> {
  for (const b of blocks) {
    yield b;
    if (b.type === "quote") yield* nodes(b.children);
    else if (b.type === "paragraph" || b.type === "heading") yield* inlineNodes(b.children);
    else if (b.type === "list") for (const item of b.items) yield* inlineNodes(item);
  }
}
function* inlineNodes(inlines: Inline[]): Generator<Inline> {
  for (const i of inlines) {
    yield i;
    if ("children" in i) yield* inlineNodes(i.children);
  }
}

const BLOCK_TYPES = new Set(["paragraph", "heading", "code", "list", "quote", "rule", "text"]);
const INLINE_TYPES = new Set(["text", "code", "strong", "em", "del", "link", "image", "br"]);

/** Repetitions that made the old parser rescan the rest of the text at every character. */
const ADVERSARIAL = [
  "_a",
  "*a",
  "a_",
  "[",
  "![",
  "[a](",
  "(",
  "`",
  "``a",
  "**",
  "**a",
  "__a",
  "~~a",
  "*",
  ">",
  "> ",
  "- ",
  "  - a\n",
  "1. a\n   ",
  "    a\n\n",
  "# a #",
  "#",
  "   ",
  "\\",
  "http://a.",
  "(http://a",
  ".",
  "\u2028",
  "a",
  "\n",
];

/**
 * The CPU time `fn` takes, in ms. CPU time, not wall-clock: other processes keeping the cores
 * busy delay this one without adding to its CPU time, so a loaded machine cannot fail the test.
 */
function cpuMs(fn: () => void): number {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

describe("the page's markdown on hostile bodies", () => {
  const MiB = 1024 * 1024;
  // The linear parser spends 5-45 ms of CPU on 1 MiB of any repetition below; the quadratic one
  // this guards against spent 7 s on 40 KB of '_a' (some 20 s on the 64 KiB it renders as
  // markdown). So generous that only a parser of that kind fails it.
  const CPU_BUDGET_MS = 2000;

  it("renders 1 MiB of any adversarial repetition within the CPU budget, as text-only nodes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...ADVERSARIAL), { minLength: 1, maxLength: 3 }),
        fc.string({ maxLength: 8 }),
        (units, noise) => {
          const unit = units.join("") + noise;
          const body = unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB);
          let blocks: Block[] = [];
          const ms = cpuMs(() => {
            blocks = parseMarkdown(body);
          });
          expect(ms, `${JSON.stringify(unit)}: ${ms.toFixed(0)} ms`).toBeLessThan(CPU_BUDGET_MS);
          // Only the renderer's own node types, and links only to URLs it allows.
          const odd = [...nodes(blocks)].filter(
            (node) =>
              !(BLOCK_TYPES.has(node.type) || INLINE_TYPES.has(node.type)) ||
              ((node.type === "link" || node.type === "image") &&
                safeHref(node.href) !== node.href),
          );
          expect(odd).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("renders each single repetition at 1 MiB within the CPU budget", () => {
    for (const unit of ADVERSARIAL) {
      const body = unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB);
      const ms = cpuMs(() => parseMarkdown(body));
      expect(ms, `${JSON.stringify(unit)}: ${ms.toFixed(0)} ms`).toBeLessThan(CPU_BUDGET_MS);
    }
  });

  it("renders the first 64 KiB as markdown and the rest as plain text, losing nothing", () => {
    const source = `${"**bold** and _em_\n\n".repeat(4000)}tail *not em*`; // 76,013 characters
    const blocks = parseMarkdown(source);
    const last = blocks.at(-1)!;
    expect(last.type).toBe("text");
    // Cut at the last line end within the limit, so no markdown line is split, and everything
    // after it is shown as it is.
    const paragraphs = Math.floor(MARKDOWN_LIMIT / 19);
    expect(blocks.filter((b) => b.type === "paragraph")).toHaveLength(paragraphs);
    expect(last.type === "text" && last.text).toBe(source.slice(paragraphs * 19));
  });
});
