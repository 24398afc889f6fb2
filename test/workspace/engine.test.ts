import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isAgentChatError } from "../../src/core/errors.js";
import { KFolder, runTurn } from "../../src/workspace/index.js";
import { tempDir } from "../helpers/tmp.js";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir("agent-chat-ws-"));
});
afterEach(() => cleanup());

const k = (update: string, clarify = "none", response = "acknowledge") =>
  `ResponseAction: ${response}\nUpdateAction: ${update}\nClarifyAction: ${clarify}\n`;

async function apply(update: string, content?: string) {
  const r = await runTurn(
    dir,
    content === undefined ? { kfile: k(update) } : { kfile: k(update), content },
  );
  return r;
}

async function tree(): Promise<string> {
  return (await runTurn(dir, { kfile: k("none", "none", "discuss") })).tree;
}

/** Everything on disk under the workspace, except the lock and the K-file of the last turn. */
function listing(): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      // The focus is checked through the tree; the K-file changes on every turn.
      if (e.name === ".kfile" || e.name === ".focus" || e.name === "_seq.lock") continue;
      if (e.isDirectory()) {
        out.push(`${p}/`);
        walk(p);
      } else out.push(`${p}=${readFileSync(join(dir, p), "utf8")}`);
    }
  };
  walk("");
  return out.sort();
}

describe("the K-folder on disk", () => {
  it("starts as the root with the focus on it, and renders the seed's tree byte for byte", async () => {
    expect(await tree()).toBe("[root]-shared workspace [focus]\n");
    await apply('create-folder([root]/[protocol], "protocol design")');
    await apply('create-folder([root]/[blog], "article about the protocol")');
    await apply("focus-folder([blog])");
    expect(await tree()).toBe(
      "[root]-shared workspace\n├── [protocol]-protocol design\n└── [blog]-article about the protocol [focus]\n",
    );
    // Real folders, so the workspace can be browsed and committed.
    expect(
      readdirSync(dir)
        .filter((n) => /^[a-z]/.test(n))
        .sort(),
    ).toEqual(["blog", "protocol"]);
    expect(readFileSync(join(dir, ".kfile"), "utf8")).toBe(k("none", "none", "discuss"));
  });

  it("applies every UpdateAction and its inverse, verified on disk", async () => {
    await apply('create-folder([root]/[protocol], "protocol design")');
    await apply('create-folder([root]/[blog], "article about the protocol")');
    const start = listing();
    const steps: Array<
      [string, string, string | undefined, (r: Awaited<ReturnType<typeof apply>>) => void]
    > = [
      [
        'create-folder([blog]/[drafts], "first drafts")',
        "delete-folder([drafts])",
        undefined,
        () => {
          expect(readFileSync(join(dir, "blog/drafts/.kfolder.json"), "utf8")).toContain(
            '"first drafts"',
          );
        },
      ],
      [
        "focus-folder([protocol])",
        "focus-folder([root])",
        undefined,
        () => {
          expect(readFileSync(join(dir, ".focus"), "utf8")).toBe("protocol");
        },
      ],
      [
        'rename-folder([blog], [posts], "blog posts")',
        'rename-folder([posts], [blog], "article about the protocol")',
        undefined,
        () => {
          expect(existsSync(join(dir, "posts"))).toBe(true);
          expect(existsSync(join(dir, "blog"))).toBe(false);
        },
      ],
      [
        "move-folder([blog], [protocol])",
        "move-folder([blog], [root])",
        undefined,
        () => {
          expect(existsSync(join(dir, "protocol/blog/.kfolder.json"))).toBe(true);
        },
      ],
      [
        'store-file([blog], "a.md")',
        'delete-file([blog], "a.md")',
        "hello",
        () => {
          expect(readFileSync(join(dir, "blog/a.md"), "utf8")).toBe("hello\n");
        },
      ],
    ];
    for (const [forward, backward, content, check] of steps) {
      const r = await apply(forward, content);
      expect(r.applied, forward).toBe(true);
      expect(r.kfile.clarify).toBe("none");
      check(r);
      expect((await apply(backward)).applied, backward).toBe(true);
      await apply("focus-folder([root])");
      expect(listing(), `${forward} then ${backward}`).toEqual(start);
    }

    // The file actions, each undone by its inverse.
    await apply('store-file([blog], "a.md")', "one");
    const withFile = listing();
    expect((await apply('edit-file([blog], "a.md", append)', "two")).applied).toBe(true);
    expect(readFileSync(join(dir, "blog/a.md"), "utf8")).toBe("one\ntwo\n");
    await apply('edit-file([blog], "a.md", replace)', "one");
    expect(listing()).toEqual(withFile);
    await apply('rename-file([blog], "a.md", "b.md")');
    expect(readFileSync(join(dir, "blog/b.md"), "utf8")).toBe("one\n");
    expect(existsSync(join(dir, "blog/a.md"))).toBe(false);
    await apply('rename-file([blog], "b.md", "a.md")');
    expect(listing()).toEqual(withFile);
    await apply('move-file([blog], "a.md", [protocol])');
    expect(readFileSync(join(dir, "protocol/a.md"), "utf8")).toBe("one\n");
    await apply('move-file([protocol], "a.md", [blog])');
    expect(listing()).toEqual(withFile);
    await apply('delete-file([blog], "a.md")');
    expect(listing()).toEqual(start);
  });

  it("keeps the focus on a renamed or moved folder and falls back to the parent when it is deleted", async () => {
    await apply('create-folder([root]/[a], "")');
    await apply('create-folder([a]/[b], "")');
    await apply("focus-folder([b])");
    await apply("rename-folder([a], [x])");
    expect((await tree()).split("\n")).toContain("    └── [b] [focus]");
    await apply("move-folder([b], [root])");
    expect(await tree()).toBe("[root]-shared workspace\n├── [x]\n└── [b] [focus]\n");
    await apply("delete-folder([b])");
    expect(await tree()).toBe("[root]-shared workspace [focus]\n└── [x]\n");
  });

  it("turns an impossible K-file into ask-target and changes nothing", async () => {
    await apply('create-folder([root]/[blog], "")');
    await apply('create-folder([blog]/[inner], "")');
    const before = listing();
    for (const update of [
      "focus-folder([nope])",
      'create-folder([root]/[blog], "again")',
      "move-folder([blog], [inner])",
      "delete-folder([root])",
      "rename-folder([root], [top])",
      'delete-file([blog], "missing.md")',
      'edit-file([blog], "missing.md", append)',
    ]) {
      const r = await apply(update, "x");
      expect(r.kfile.clarify, update).toBe("ask-target");
      expect(r.applied).toBe(false);
      expect(r.response.contents).toMatch(/^Which folder or file is meant\? /);
    }
    const r = await apply('store-file([blog], "a.md")');
    expect(r.kfile.clarify).toBe("ask-content");
    expect(listing()).toEqual(before);
  });

  it("says an ambiguous name is ambiguous instead of guessing", async () => {
    await apply('create-folder([root]/[protocol], "")');
    await apply('create-folder([root]/[blog], "")');
    await apply('create-folder([protocol]/[blog], "")');
    const r = await runTurn(dir, {
      request: "Focus on the blog folder and summarize the protocol",
    });
    expect(r.kfileText).toBe(k("focus-folder([blog])", "ask-target", "discuss"));
    expect(r.response.contents).toBe(
      "Which folder or file is meant? 2 folders are named blog; name one by its path, like protocol/blog.",
    );
    expect((await runTurn(dir, { request: "focus on protocol/blog" })).tree).toContain(
      "│   └── [blog] [focus]",
    );
  });

  it("stores nothing unless the K-file says so: a discussion leaves the disk as it was", async () => {
    await apply('create-folder([root]/[blog], "")');
    const before = listing();
    const r = await runTurn(dir, {
      request: "Summarize the protocol",
      content: "It has three steps.",
    });
    expect(r.kfile.update.action).toBe("none");
    expect(r.response.contents).toBe("It has three steps.");
    expect(listing()).toEqual(before);
  });
});

describe("confirmation of deletes", () => {
  beforeEach(async () => {
    await apply('create-folder([root]/[blog], "")');
    await apply('store-file([blog], "a.md")', "keep me");
  });

  it("asks, keeps the pending K-file, and executes it on yes", async () => {
    const ask = await runTurn(dir, { request: "delete the blog folder" });
    expect(ask.kfileText).toBe(k("delete-folder([blog])", "ask-confirmation"));
    expect(ask.pending).toBe(true);
    expect(ask.response.contents).toBe(
      'Delete [root]/[blog] with its 0 subfolders and 1 file? Answer "yes" to confirm; anything else cancels it.',
    );
    expect(existsSync(join(dir, "blog/a.md"))).toBe(true);
    expect(readFileSync(join(dir, ".kfile"), "utf8")).toBe(ask.kfileText);
    const yes = await runTurn(dir, { request: "yes" });
    expect(yes.kfileText).toBe(k("delete-folder([blog])"));
    expect(yes.applied).toBe(true);
    expect(existsSync(join(dir, "blog"))).toBe(false);
    // The pending K-file is used once.
    const again = await runTurn(dir, { request: "confirm" });
    expect(again.kfile.clarify).toBe("ask-goal");
    expect(again.response.contents).toContain("Nothing is waiting for a confirmation");
  });

  it("cancels on anything else, and still handles that other request", async () => {
    await runTurn(dir, { request: "delete a.md" });
    const no = await runTurn(dir, { request: "no" });
    expect(no.cancelled).toBe(true);
    expect(no.kfileText).toBe(k("none"));
    expect(no.response.contents).toBe(
      'Cancelled the pending delete-file([blog], "a.md"); nothing was deleted.',
    );
    expect(readFileSync(join(dir, "blog/a.md"), "utf8")).toBe("keep me\n");
    expect((await runTurn(dir, { request: "yes" })).applied).toBe(false);

    await runTurn(dir, { request: "delete blog" });
    const other = await runTurn(dir, { request: "focus on blog" });
    expect(other.cancelled).toBe(true);
    expect(other.applied).toBe(true);
    expect(other.response.contents.split("\n\n")[0]).toBe(
      "Cancelled the pending delete-folder([blog]); nothing was deleted.",
    );
    expect(existsSync(join(dir, "blog"))).toBe(true);
  });

  it("takes a confirmation only from the one who was asked", async () => {
    await runTurn(dir, { request: "delete blog", as: "alice" });
    const bob = await runTurn(dir, { request: "yes", as: "bob" });
    expect(bob.applied).toBe(false);
    expect(existsSync(join(dir, "blog"))).toBe(true);
    expect((await runTurn(dir, { request: "yes", as: "Alice" })).applied).toBe(true);
    expect(existsSync(join(dir, "blog"))).toBe(false);
  });

  it("asks before a store replaces an existing file", async () => {
    const ask = await runTurn(dir, { request: "save a.md in blog: new text" });
    expect(ask.kfile.clarify).toBe("ask-confirmation");
    expect(readFileSync(join(dir, "blog/a.md"), "utf8")).toBe("keep me\n");
    await runTurn(dir, { request: "yes" });
    expect(readFileSync(join(dir, "blog/a.md"), "utf8")).toBe("new text\n");
  });

  it("an external normaliser cannot skip the confirmation of a delete", async () => {
    const script = join(dir, "..", `norm-${process.pid}.sh`);
    writeFileSync(
      script,
      `#!/bin/sh\ncat >/dev/null\nprintf 'ResponseAction: acknowledge\\nUpdateAction: delete-folder([blog])\\nClarifyAction: none\\n'\n`,
    );
    const r = await runTurn(dir, { request: "whatever", normalizer: `sh ${script}` });
    expect(r.kfile.clarify).toBe("ask-confirmation");
    expect(existsSync(join(dir, "blog"))).toBe(true);
  });
});

describe("names that would leave the workspace", () => {
  it("are refused by the K-file parser, the normaliser and the engine", async () => {
    for (const update of [
      "focus-folder([..])",
      'store-file([root], "../x.md")',
      "create-folder([root]/[a/b])",
    ]) {
      await expect(runTurn(dir, { kfile: k(update) })).rejects.toSatisfy((e) =>
        isAgentChatError(e, "INVALID_KFILE"),
      );
    }
    const r = await runTurn(dir, { request: "create a folder ../../etc" });
    expect(r.kfile.clarify).toBe("ask-target");
    const s = await runTurn(dir, { request: "save ../../evil.md: x" });
    expect(s.applied).toBe(false);
    expect(s.kfile.clarify).toBe("ask-target");
    const ws = new KFolder(dir);
    expect(() => ws.pathOf([".."])).toThrow(/invalid folder name/);
    expect(() => ws.filePath([], "../../etc/passwd")).toThrow(/invalid file name/);
    expect(readdirSync(join(dir, "..")).some((n) => n === "etc" || n === "evil.md")).toBe(false);
  });

  it("does not follow symbolic links out of the workspace", async () => {
    const outside = `${dir}-outside`;
    mkdirSync(outside);
    writeFileSync(join(outside, "secret.md"), "secret");
    symlinkSync(outside, join(dir, "escape"));
    symlinkSync(join(outside, "secret.md"), join(dir, "link.md"));
    expect(await tree()).toBe("[root]-shared workspace [focus]\n");
    await expect(
      runTurn(dir, { kfile: k('store-file([root], "link.md")'), content: "overwrite" }),
    ).rejects.toThrow(/link.md is a symbolic link; it is never followed/);
    await expect(new KFolder(dir).readFile([], "link.md")).rejects.toSatisfy((e) =>
      isAgentChatError(e, "UNSAFE_FILE"),
    );
    expect(readFileSync(join(outside, "secret.md"), "utf8")).toBe("secret");
  });
});

describe("--normalizer: an external program", () => {
  it("gets the request and the tree as JSON on stdin and its K-file is used", async () => {
    await apply('create-folder([root]/[blog], "article")');
    const seen = join(dir, "..", `seen-${process.pid}.json`);
    const script = join(dir, "..", `norm2-${process.pid}.mjs`);
    writeFileSync(
      script,
      `import { writeFileSync } from "node:fs";\nlet s = "";\nprocess.stdin.on("data", (d) => (s += d)).on("end", () => {\n  writeFileSync(${JSON.stringify(seen)}, s);\n  process.stdout.write("ResponseAction: discuss\\nUpdateAction: focus-folder([blog])\\nClarifyAction: none\\n");\n});\n`,
    );
    const r = await runTurn(dir, {
      request: "let us talk about the article",
      normalizer: `node ${script}`,
    });
    expect(r.kfileText).toBe(k("focus-folder([blog])", "none", "discuss"));
    expect(r.applied).toBe(true);
    const payload = JSON.parse(readFileSync(seen, "utf8"));
    expect(payload.request).toBe("let us talk about the article");
    expect(payload.tree).toBe("[root]-shared workspace [focus]\n└── [blog]-article\n");
    expect(payload.focus).toBe("[root]");
    expect(payload.folders[1]).toEqual({
      path: "[root]/[blog]",
      description: "article",
      files: [],
    });
  });

  it("is validated like any K-file, and its failures are reported", async () => {
    await expect(
      runTurn(dir, { request: "x", normalizer: "echo 'ResponseAction: chat'" }),
    ).rejects.toThrow(
      /^the normalizer's output is not a valid K-file: K-file line 1: ResponseAction "chat" is not a label/,
    );
    await expect(
      runTurn(dir, { request: "x", normalizer: "echo oops >&2; exit 3" }),
    ).rejects.toThrow("the normalizer exited with 3: oops");
    await expect(
      runTurn(dir, { request: "x", normalizer: "sleep 5", normalizerTimeoutMs: 200 }),
    ).rejects.toSatisfy((e) => isAgentChatError(e, "NORMALIZER_FAILED"));
  });
});
