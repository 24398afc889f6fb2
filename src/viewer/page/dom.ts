import type { Block, Inline } from "./markdown.js";

type Child = Node | string | null | undefined | false;

/** An element of index.html, which is always there: the script runs after the page is parsed. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id)! as T;
}

/**
 * Creates an element. Strings become text nodes, never markup; attributes are set one by one,
 * so nothing from a message is ever parsed as HTML.
 */
export function h(
  tag: string,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): HTMLElement {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key === "class") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

export function renderBlocks(blocks: Block[]): DocumentFragment {
  return fragmentOf(blocks, renderBlock);
}

/** One fragment of every item rendered, in order (one DOM insertion for the caller). */
function fragmentOf<T>(items: readonly T[], render: (item: T) => Node): DocumentFragment {
  const frag = document.createDocumentFragment();
  for (const item of items) frag.appendChild(render(item));
  return frag;
}

function renderBlock(block: Block): Node {
  switch (block.type) {
    case "paragraph":
      return h("p", {}, renderInlines(block.children));
    case "heading":
      // Message headings sit below the message title: shift them down a level or two.
      return h(`h${Math.min(6, block.level + 2)}`, {}, renderInlines(block.children));
    case "code": {
      const code = h("code", {}, block.text);
      return h("pre", block.lang ? { "data-lang": block.lang } : {}, code);
    }
    case "list": {
      const attrs = block.ordered && block.start !== 1 ? { start: block.start } : {};
      const list = h(block.ordered ? "ol" : "ul", attrs);
      for (const item of block.items) list.appendChild(h("li", {}, renderInlines(item)));
      return list;
    }
    case "quote":
      return h("blockquote", {}, renderBlocks(block.children));
    case "rule":
      return h("hr");
    case "text":
      return h("div", { class: "plain" }, block.text);
  }
}

function renderInlines(inlines: Inline[]): DocumentFragment {
  return fragmentOf(inlines, renderInline);
}

function renderInline(inline: Inline): Node {
  switch (inline.type) {
    case "text":
      return document.createTextNode(inline.text);
    case "code":
      return h("code", {}, inline.text);
    case "strong":
    case "em":
    case "del":
      return h(inline.type, {}, renderInlines(inline.children));
    case "br":
      return h("br");
    case "link":
      return h(
        "a",
        { href: inline.href, target: "_blank", rel: "noopener noreferrer nofollow" },
        renderInlines(inline.children),
      );
    case "image":
      // Never loaded: a remote image would tell its server who reads the channel, and when.
      return h(
        "a",
        {
          class: "image-link",
          href: inline.href,
          target: "_blank",
          rel: "noopener noreferrer nofollow",
        },
        `image: ${inline.alt || inline.href}`,
      );
  }
}
