import { describe, expect, it } from "vitest";
import { isAgentChatError } from "../../src/core/errors.js";
import {
  CLARIFY_ACTIONS,
  formatKFile,
  type KFile,
  parseKFile,
  RESPONSE_ACTIONS,
  renderTree,
  type TreeFolder,
  UPDATE_ACTIONS,
} from "../../src/core/kfile/index.js";

function errorOf(text: string): string {
  try {
    parseKFile(text);
  } catch (err) {
    expect(isAgentChatError(err, "INVALID_KFILE")).toBe(true);
    return (err as Error).message;
  }
  throw new Error(`parsed: ${text}`);
}

describe("K-file labels", () => {
  it("are exactly the seed's closed sets", () => {
    expect(RESPONSE_ACTIONS).toEqual(["discuss", "prove", "export", "acknowledge"]);
    expect(UPDATE_ACTIONS).toEqual([
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
    ]);
    expect(CLARIFY_ACTIONS).toEqual([
      "none",
      "ask-goal",
      "ask-content",
      "ask-target",
      "ask-constraint",
      "ask-format",
      "ask-confirmation",
    ]);
  });
});

describe("K-file text form", () => {
  it("parses and prints the seed's example exactly", () => {
    const text =
      "ResponseAction: discuss\nUpdateAction: focus-folder([blog])\nClarifyAction: none\n";
    const k = parseKFile(text);
    expect(k).toEqual({
      response: "discuss",
      update: { action: "focus-folder", args: { folder: { segments: ["blog"] } } },
      clarify: "none",
    });
    expect(formatKFile(k)).toBe(text);
  });

  const roundTrips = [
    'create-folder([root]/[blog], "article about the protocol")',
    'create-folder([protocol]/[notes], "")',
    "focus-folder([root]/[protocol]/[blog])",
    "rename-folder([blog], [posts])",
    'rename-folder([blog], [posts], "blog posts")',
    "move-folder([blog], [protocol])",
    "delete-folder([blog])",
    'store-file([blog], "draft.md")',
    'edit-file([blog], "draft.md", append)',
    'edit-file([blog], "draft.md", replace)',
    'rename-file([blog], "draft.md", "final.md")',
    'move-file([blog], "draft.md", [root])',
    'delete-file([blog], "draft.md")',
    'create-folder([root]/[q], "says \\"hi\\" \\\\ there")',
    "none",
  ];
  it.each(roundTrips)("round-trips UpdateAction: %s", (update) => {
    const text = `ResponseAction: acknowledge\nUpdateAction: ${update}\nClarifyAction: none\n`;
    expect(formatKFile(parseKFile(text))).toBe(text);
  });

  it("accepts CRLF, blank lines, comments, any key order, spaces", () => {
    const k = parseKFile(
      "# turn 3\r\n\r\nClarifyAction:ask-confirmation\r\n  UpdateAction :  delete-folder( [blog] )\r\nResponseAction: acknowledge",
    );
    expect(formatKFile(k)).toBe(
      "ResponseAction: acknowledge\nUpdateAction: delete-folder([blog])\nClarifyAction: ask-confirmation\n",
    );
  });

  it("allows a bare UpdateAction only while a clarification is asked", () => {
    const k: KFile = parseKFile(
      "ResponseAction: acknowledge\nUpdateAction: delete-folder\nClarifyAction: ask-target",
    );
    expect(k.update).toEqual({ action: "delete-folder" });
    expect(
      errorOf("ResponseAction: acknowledge\nUpdateAction: delete-folder\nClarifyAction: none"),
    ).toBe(
      "K-file line 2: UpdateAction delete-folder needs its arguments when ClarifyAction is none: delete-folder([folder])",
    );
  });
});

describe("K-file parser errors name the line, what was expected and the allowed labels", () => {
  const cases: Array<[string, string]> = [
    [
      "ResponseAction: chat\nUpdateAction: none\nClarifyAction: none",
      'K-file line 1: ResponseAction "chat" is not a label; allowed: discuss | prove | export | acknowledge',
    ],
    [
      "ResponseAction: discuss\nUpdateAction: zap-folder([a])\nClarifyAction: none",
      'K-file line 2: UpdateAction "zap-folder" is not a label; allowed: none | create-folder | focus-folder | rename-folder | move-folder | delete-folder | store-file | edit-file | rename-file | move-file | delete-file',
    ],
    [
      "ResponseAction: discuss\nUpdateAction: none\nClarifyAction: ask-why",
      'K-file line 3: ClarifyAction "ask-why" is not a label; allowed: none | ask-goal | ask-content | ask-target | ask-constraint | ask-format | ask-confirmation',
    ],
    [
      "ResponseAction: discuss\nUpdateAction: none",
      'K-file: missing the line "ClarifyAction: …" (a K-file has three lines: ResponseAction, UpdateAction, ClarifyAction)',
    ],
    [
      "ResponseAction: discuss\nResponseAction: prove\nUpdateAction: none\nClarifyAction: none",
      "K-file line 2: ResponseAction given twice (first on line 1)",
    ],
    [
      "ResponseAction: discuss\nMood: happy\nUpdateAction: none\nClarifyAction: none",
      'K-file line 2: unknown key "Mood"; a K-file has exactly the keys ResponseAction, UpdateAction, ClarifyAction',
    ],
    [
      "discuss\nUpdateAction: none\nClarifyAction: none",
      'K-file line 1: expected "Key: value" with Key one of ResponseAction, UpdateAction, ClarifyAction; got "discuss"',
    ],
    [
      "ResponseAction: acknowledge\nUpdateAction: focus-folder(blog)\nClarifyAction: none",
      "K-file line 2: argument 1 of focus-folder must be a folder like [blog] or [root]/[blog]; got blog. Syntax: focus-folder([folder])",
    ],
    [
      "ResponseAction: acknowledge\nUpdateAction: move-folder([blog])\nClarifyAction: none",
      "K-file line 2: move-folder takes 2 argument(s), got 1. Syntax: move-folder([folder], [new-parent])",
    ],
    [
      "ResponseAction: acknowledge\nUpdateAction: store-file([blog], [notes])\nClarifyAction: none",
      'K-file line 2: argument 2 of store-file must be a quoted file name like "notes.md"; got [notes]. Syntax: store-file([folder], "name.md")',
    ],
    [
      'ResponseAction: acknowledge\nUpdateAction: edit-file([blog], "a.md", prepend)\nClarifyAction: none',
      "K-file line 2: edit-file mode must be append or replace, got prepend",
    ],
    [
      'ResponseAction: acknowledge\nUpdateAction: create-folder([root]/[blog], "x"\nClarifyAction: none',
      'K-file line 2: malformed UpdateAction; expected create-folder([parent]/[name], "description")',
    ],
    [
      "ResponseAction: acknowledge\nUpdateAction: none([a])\nClarifyAction: none",
      "K-file line 2: UpdateAction none takes no arguments",
    ],
  ];
  it.each(cases)("%s", (text, message) => {
    expect(errorOf(text)).toBe(message);
  });

  it.each([
    ["focus-folder([..])", '".."'],
    ["focus-folder([a]/[..]/[..])", '".."'],
    ['store-file([blog], "../../etc/passwd")', '"../../etc/passwd"'],
    ['store-file([blog], "/abs.md")', '"/abs.md"'],
    ['rename-file([blog], "a.md", ".hidden")', '".hidden"'],
    ["create-folder([root]/[_seq.lock])", '"_seq.lock"'],
    ["create-folder([root]/[a b])", '"a b"'],
    ["move-folder([blog], [root]/[root])", "[root] may only start a path"],
  ])("refuses a name that could leave the workspace or hit its own files: %s", (update, shown) => {
    const message = errorOf(
      `ResponseAction: acknowledge\nUpdateAction: ${update}\nClarifyAction: none`,
    );
    expect(message).toContain(shown);
    expect(message).toMatch(/^K-file line 2: /);
  });
});

describe("tree rendering", () => {
  const folder = (
    name: string,
    description: string,
    children: TreeFolder[] = [],
    focus = false,
  ): TreeFolder => ({
    name,
    description,
    focus,
    files: [],
    children,
  });

  it("is byte-exact with the seed's example", () => {
    const tree = folder("root", "shared workspace", [
      folder("protocol", "protocol design"),
      folder("blog", "article about the protocol", [], true),
    ]);
    expect(renderTree(tree)).toBe(
      "[root]-shared workspace\n├── [protocol]-protocol design\n└── [blog]-article about the protocol [focus]\n",
    );
  });

  it("draws deeper levels with │ and spaces, files on request, names without description", () => {
    const drafts = folder("drafts", "");
    drafts.files = ["v1.md"];
    const tree = folder("root", "shared workspace", [
      folder("protocol", "protocol design", [folder("steps", "the three steps", [], true), drafts]),
      folder("blog", "article"),
    ]);
    tree.files = ["README.md"];
    expect(renderTree(tree)).toBe(
      [
        "[root]-shared workspace",
        "├── [protocol]-protocol design",
        "│   ├── [steps]-the three steps [focus]",
        "│   └── [drafts]",
        "└── [blog]-article",
        "",
      ].join("\n"),
    );
    expect(renderTree(tree, { files: true })).toBe(
      [
        "[root]-shared workspace",
        "├── [protocol]-protocol design",
        "│   ├── [steps]-the three steps [focus]",
        "│   └── [drafts]",
        "│       └── v1.md",
        "├── [blog]-article",
        "└── README.md",
        "",
      ].join("\n"),
    );
  });
});
