import { describe, expect, it } from "vitest";
import {
  type Inline,
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
