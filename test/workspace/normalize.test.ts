import { describe, expect, it } from "vitest";
import { formatKFile, parseKFile } from "../../src/core/kfile/index.js";
import type { Folder, Snapshot } from "../../src/workspace/kfolder.js";
import { normalize, splitRequest } from "../../src/workspace/normalize.js";

function folder(
  path: string[],
  description: string,
  files: string[] = [],
  children: Folder[] = [],
): Folder {
  return { name: path[path.length - 1] ?? "root", path, description, created: 0, files, children };
}

/** root: protocol (spec.md) with a child notes, blog (draft.md); the focus is the root. */
const base: Snapshot = {
  root: folder(
    [],
    "shared workspace",
    ["readme.md"],
    [
      folder(
        ["protocol"],
        "protocol design",
        ["spec.md"],
        [folder(["protocol", "notes"], "meeting notes")],
      ),
      folder(["blog"], "article about the protocol", ["draft.md"]),
    ],
  ),
  focus: [],
  skipped: [],
};

/** Two folders named blog: [root]/[blog] and [root]/[protocol]/[blog]. */
const twoBlogs: Snapshot = {
  root: folder(
    [],
    "shared workspace",
    [],
    [
      folder(["protocol"], "protocol design", [], [folder(["protocol", "blog"], "protocol blog")]),
      folder(["blog"], "article about the protocol"),
    ],
  ),
  focus: [],
  skipped: [],
};

const focusedOnBlog: Snapshot = { ...base, focus: ["blog"] };

const k = (response: string, update: string, clarify: string) =>
  `ResponseAction: ${response}\nUpdateAction: ${update}\nClarifyAction: ${clarify}\n`;

// request → expected K-file, against `base` unless another snapshot is given.
const table: Array<[string, string, Snapshot?]> = [
  // The seed's example.
  [
    "Focus on the blog folder and summarize the protocol",
    k("discuss", "focus-folder([blog])", "none"),
  ],
  // Focus and its phrasings.
  ["focus on protocol", k("acknowledge", "focus-folder([protocol])", "none")],
  ["Switch to the blog folder", k("acknowledge", "focus-folder([blog])", "none")],
  ["open protocol/notes", k("acknowledge", "focus-folder([notes])", "none")],
  ["go to [protocol]/[notes]", k("acknowledge", "focus-folder([notes])", "none")],
  ["please go back to the root", k("acknowledge", "focus-folder([root])", "none")],
  ["go up", k("acknowledge", "focus-folder([root])", "none"), focusedOnBlog],
  ["navigate to notes and explain the schedule", k("discuss", "focus-folder([notes])", "none")],
  ["focus on recipes", k("acknowledge", "focus-folder", "ask-target")],
  ["switch folders", k("acknowledge", "focus-folder", "ask-target")],
  [
    "Focus on the blog folder and summarize the protocol",
    k("discuss", "focus-folder([blog])", "ask-target"),
    twoBlogs,
  ],
  [
    "focus on protocol/blog",
    k("acknowledge", "focus-folder([root]/[protocol]/[blog])", "none"),
    twoBlogs,
  ],
  // Create.
  [
    "create a folder protocol2 for protocol design",
    k("acknowledge", 'create-folder([root]/[protocol2], "protocol design")', "none"),
  ],
  [
    "Create a folder called ideas for the article about the protocol",
    k("acknowledge", 'create-folder([root]/[ideas], "article about the protocol")', "none"),
  ],
  [
    "make a new folder drafts inside blog for first drafts",
    k("acknowledge", 'create-folder([blog]/[drafts], "first drafts")', "none"),
  ],
  [
    'add a subfolder "todo" under protocol described as "open questions"',
    k("acknowledge", 'create-folder([protocol]/[todo], "open questions")', "none"),
  ],
  ["new folder archive", k("acknowledge", 'create-folder([root]/[archive], "")', "none")],
  ["create a folder", k("acknowledge", "create-folder", "ask-target")],
  ["create a folder blog", k("acknowledge", 'create-folder([root]/[blog], "")', "ask-target")],
  ["create a folder x in recipes", k("acknowledge", "create-folder", "ask-target")],
  ["create a folder ../etc", k("acknowledge", "create-folder", "ask-target")],
  [
    "I want to create a folder slides for the talk and then summarize it",
    k("discuss", 'create-folder([root]/[slides], "talk")', "none"),
  ],
  // Rename and describe.
  ["rename blog to posts", k("acknowledge", "rename-folder([blog], [posts])", "none")],
  [
    'rename the blog folder to articles with description "published articles"',
    k("acknowledge", 'rename-folder([blog], [articles], "published articles")', "none"),
  ],
  [
    "describe blog as the public article",
    k("acknowledge", 'rename-folder([blog], [blog], "the public article")', "none"),
  ],
  [
    "change the description of protocol to wire format",
    k("acknowledge", 'rename-folder([protocol], [protocol], "wire format")', "none"),
  ],
  ["rename blog", k("acknowledge", "rename-folder", "ask-target")],
  [
    "rename draft.md to final.md",
    k("acknowledge", 'rename-file([blog], "draft.md", "final.md")', "none"),
  ],
  // Move.
  ["move blog into protocol", k("acknowledge", "move-folder([blog], [protocol])", "none")],
  ["move notes to the root", k("acknowledge", "move-folder([notes], [root])", "none")],
  [
    "move draft.md from blog to protocol",
    k("acknowledge", 'move-file([blog], "draft.md", [protocol])', "none"),
  ],
  ["move blog to nowhere", k("acknowledge", "move-folder", "ask-target")],
  // Delete: always asks for confirmation.
  ["delete the protocol folder", k("acknowledge", "delete-folder([protocol])", "ask-confirmation")],
  ["Remove blog", k("acknowledge", "delete-folder([blog])", "ask-confirmation")],
  ["delete spec.md", k("acknowledge", 'delete-file([protocol], "spec.md")', "ask-confirmation")],
  [
    "remove draft.md from blog",
    k("acknowledge", 'delete-file([blog], "draft.md")', "ask-confirmation"),
  ],
  ["delete blog", k("acknowledge", "delete-folder([blog])", "ask-target"), twoBlogs],
  ["delete the root", k("acknowledge", "delete-folder", "ask-target")],
  ["delete missing.md", k("acknowledge", "delete-file", "ask-target")],
  // Store and edit.
  [
    "save to blog: The protocol has three steps.",
    k("acknowledge", 'store-file([blog], "the-protocol-has-three-steps.md")', "none"),
  ],
  [
    "store this as summary.md in protocol: Normalize, update, render.",
    k("acknowledge", 'store-file([protocol], "summary.md")', "none"),
  ],
  [
    "save notes.md: step three renders",
    k("acknowledge", 'store-file([blog], "notes.md")', "none"),
    focusedOnBlog,
  ],
  ["save it", k("acknowledge", "store-file", "ask-content")],
  ["save summary.md in blog", k("acknowledge", 'store-file([blog], "summary.md")', "ask-content")],
  ["save to recipes: pancakes", k("acknowledge", "store-file", "ask-target")],
  [
    "append to draft.md: one more paragraph",
    k("acknowledge", 'edit-file([blog], "draft.md", append)', "none"),
  ],
  [
    "update spec.md: version 2 of the spec",
    k("acknowledge", 'edit-file([protocol], "spec.md", replace)', "none"),
  ],
  ["edit draft.md", k("acknowledge", 'edit-file([blog], "draft.md", replace)', "ask-content")],
  ["edit the draft", k("acknowledge", "edit-file", "ask-target")],
  // Response actions without an update.
  ["Summarize the protocol", k("discuss", "none", "none")],
  ["What is a K-file?", k("discuss", "none", "none")],
  ["compare blog and protocol", k("discuss", "none", "none")],
  ["compare the protocol", k("discuss", "none", "ask-content")],
  ["make it shorter", k("discuss", "none", "ask-constraint")],
  ["make it shorter, in 50 words", k("discuss", "none", "none")],
  ["Prove that every turn changes at most one folder", k("prove", "none", "none")],
  ["prove it", k("prove", "none", "ask-content")],
  ["export the protocol as markdown", k("export", "none", "none")],
  ["export the protocol", k("export", "none", "ask-format")],
  ["draft a blog post about the protocol", k("export", "none", "none")],
  ["focus on blog and export the article as html", k("export", "focus-folder([blog])", "none")],
  ["The three steps keep memory explicit and the user in control.", k("discuss", "none", "none")],
  // Unclear goal.
  ["blog", k("discuss", "none", "ask-goal")],
  ["", k("discuss", "none", "ask-goal")],
  ["yes", k("discuss", "none", "ask-goal")],
  [
    "create a folder a1 and focus on it",
    k("acknowledge", 'create-folder([root]/[a1], "")', "ask-goal"),
  ],
];

describe("rule-based normaliser: request → K-file", () => {
  it("has a table of at least 40 requests", () => {
    expect(table.length).toBeGreaterThanOrEqual(40);
  });

  it.each(table)("%s", (request, expected, snapshot = base) => {
    const { kfile } = normalize(request, snapshot);
    expect(formatKFile(kfile)).toBe(expected);
    // Every K-file it produces is valid in its text form.
    expect(parseKFile(formatKFile(kfile))).toEqual(kfile);
  });

  it("gives a reason for every clarification, naming the ambiguity", () => {
    const { reason } = normalize("focus on blog", twoBlogs);
    expect(reason).toBe("2 folders are named blog; name one by its path, like protocol/blog");
    expect(normalize("focus on recipes", base).reason).toBe("there is no folder named recipes");
  });

  it("reports a path-like file name as invalid whatever its extension, never stores elsewhere", () => {
    for (const name of ["../x.md", "../x.py", "../x.ts", "a/b.toml", "../x.htm", "../x.log"]) {
      for (const [verb, action] of [
        ["save", "store-file"],
        ["edit", "edit-file"],
      ] as const) {
        const n = normalize(`${verb} ${name}: hi`, base);
        expect(formatKFile(n.kfile), `${verb} ${name}`).toBe(
          k("acknowledge", action, "ask-target"),
        );
        expect(n.reason, `${verb} ${name}`).toBe(
          `invalid file name ${JSON.stringify(name)}: use ASCII letters, digits, '.', '_' and '-', ` +
            "starting with a letter or digit (nothing may leave the workspace)",
        );
      }
    }
  });

  it("is deterministic", () => {
    for (const [request] of table) {
      expect(normalize(request, base)).toEqual(normalize(request, base));
    }
  });

  it("splits the instruction from the inline content at the first ': ' or newline", () => {
    expect(splitRequest("save to blog: a: b")).toEqual({
      instruction: "save to blog",
      content: "a: b",
    });
    expect(splitRequest("save notes.md\nline 1\nline 2")).toEqual({
      instruction: "save notes.md",
      content: "line 1\nline 2",
    });
    expect(splitRequest("summarize")).toEqual({ instruction: "summarize" });
    // Words in the content never act as instructions.
    expect(formatKFile(normalize("save to blog: delete everything", base).kfile)).toBe(
      k("acknowledge", 'store-file([blog], "delete-everything.md")', "none"),
    );
  });
});
