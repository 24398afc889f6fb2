import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { viewerPanels } from "../../src/cli/plugins/viewer-panels.js";
import { isAgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { channelWorkspace, KFolder, runTurn } from "../../src/workspace/index.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/*
 * A workspace lives in a shared root (docs/design.md §10): its folder, its sub-folders, its state
 * files may all be links or FIFOs planted by someone else. A sentinel folder OUTSIDE the root
 * is compared, path by path, type, size and content, before and after each attack.
 */

let tmp: string;
let cleanup: () => void;
let root: string;
let sentinel: string;
let store: FsStore;
beforeEach(async () => {
  ({ dir: tmp, cleanup } = tempDir("agent-chat-ws-untrusted-"));
  root = join(tmp, "root");
  sentinel = join(tmp, "sentinel");
  mkdirSync(root);
  // Shaped like a workspace, so that a link to it would be taken for one.
  mkdirSync(join(sentinel, "photos", "2024"), { recursive: true });
  writeFileSync(join(sentinel, ".kfolder.json"), '{"description":"SECRET home","created":0}\n');
  writeFileSync(
    join(sentinel, "photos", ".kfolder.json"),
    '{"description":"SECRET","created":1}\n',
  );
  writeFileSync(join(sentinel, "photos", "2024", "beach.jpg"), "jpeg bytes");
  writeFileSync(join(sentinel, "notes.md"), "SECRET notes\n");
  store = new FsStore(root);
  await store.init("review");
});
afterEach(async () => {
  await store.close();
  cleanup();
});

/** Every entry under `dir`: path, type, size, content or link target; links are not followed. */
function contents(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, p));
      if (st.isSymbolicLink()) out.push(`${p} -> ${readlinkSync(join(dir, p))}`);
      else if (st.isDirectory()) {
        out.push(`${p}/`);
        walk(p);
      } else out.push(`${p} ${st.size} ${readFileSync(join(dir, p), "utf8")}`);
    }
  };
  walk("");
  return out;
}

const k = (update: string, clarify = "none", response = "acknowledge") =>
  `ResponseAction: ${response}\nUpdateAction: ${update}\nClarifyAction: ${clarify}\n`;

const unsafe = (e: unknown) => isAgentChatError(e, "UNSAFE_FILE");

describe("a channel's _workspace that is a link out of the root", () => {
  it("is refused by tree, show and every turn, and nothing outside is read, created or deleted", async () => {
    const before = contents(sentinel);
    symlinkSync(sentinel, join(root, "review", "_workspace"));
    await expect(channelWorkspace(store, "review")).rejects.toSatisfy(unsafe);
    const ws = join(root, "review", "_workspace");
    await expect(new KFolder(ws).snapshot()).rejects.toSatisfy(unsafe);
    await expect(new KFolder(ws).readFile([], "notes.md")).rejects.toSatisfy(unsafe);
    for (const update of [
      'create-folder([root]/[new], "planted")',
      "delete-folder([photos])",
      "focus-folder([photos])",
      'store-file([root], "x.md")',
    ]) {
      await expect(runTurn(ws, { kfile: k(update), content: "x" })).rejects.toSatisfy(unsafe);
    }
    await expect(runTurn(ws, { request: "delete the photos folder" })).rejects.toSatisfy(unsafe);
    await expect(runTurn(ws, { request: "yes" })).rejects.toSatisfy(unsafe);
    expect(contents(sentinel)).toEqual(before);
  });

  it("through the CLI: ws tree, show, turn and focus fail with UNSAFE_FILE and the sentinel is intact", async () => {
    const before = contents(sentinel);
    symlinkSync(sentinel, join(root, "review", "_workspace"));
    const as = ["--channel", "review", "--as", "alice"];
    for (const args of [
      ["ws", "tree", ...as],
      ["ws", "show", "notes.md", ...as],
      ["ws", "focus", "photos", ...as],
      ["ws", "turn", ...as, "create a folder planted for nothing"],
      ["ws", "turn", ...as, "delete the photos folder"],
      ["ws", "turn", ...as, "yes"],
    ]) {
      const r = await runCli(args, { root });
      expect(r.code, args.join(" ")).not.toBe(0);
      expect(r.stderr).toMatch(/_workspace is a symbolic link; it is never followed/);
      expect(r.stdout).not.toMatch(/SECRET/);
    }
    expect(contents(sentinel)).toEqual(before);
  });

  it("is not shown by the viewer's workspace panel", async () => {
    const before = contents(sentinel);
    symlinkSync(sentinel, join(root, "review", "_workspace"));
    const panel = viewerPanels.find((p) => p.id === "workspace")!;
    expect(await panel.load({ store, channel: "review" } as never)).toBeUndefined();
    expect(panel.watch?.(store, "review", () => {})).toBeUndefined();
    expect(contents(sentinel)).toEqual(before);
  });
});

describe("links inside the workspace", () => {
  let ws: string;
  beforeEach(async () => {
    ws = await channelWorkspace(store, "review");
    await runTurn(ws, { kfile: k('create-folder([root]/[real], "a real folder")') });
  });

  it("a sub-folder that is a link is not in the tree, cannot be used, and deleting it leaves the target", async () => {
    const before = contents(sentinel);
    symlinkSync(sentinel, join(ws, "blog"));
    const kf = new KFolder(ws);
    const snap = await kf.snapshot();
    expect(snap.root.children.map((c) => c.name)).toEqual(["real"]);
    expect(snap.skipped).toEqual([
      { path: "blog", reason: "is a symbolic link; it is never followed" },
    ]);
    const del = await runTurn(ws, { kfile: k("delete-folder([blog])") });
    expect(del.applied).toBe(false);
    expect(del.kfile.clarify).toBe("ask-target");
    expect(del.reason).toBe("[blog] is a symbolic link; it is never followed");
    // The engine's own operations refuse a path through the link, whoever calls them.
    await expect(kf.readFile(["blog"], "notes.md")).rejects.toSatisfy(unsafe);
    await expect(kf.writeFile(["blog"], "x.md", "x")).rejects.toSatisfy(unsafe);
    await expect(kf.createFolder(["blog"], "new", "")).rejects.toSatisfy(unsafe);
    await expect(kf.setDescription(["blog"], "changed")).rejects.toSatisfy(unsafe);
    await expect(kf.deleteFolder(["blog", "photos"], [])).rejects.toSatisfy(unsafe);
    await expect(kf.relocateFolder(["real"], ["blog", "real"], [])).rejects.toSatisfy(unsafe);
    // Deleting the link itself removes the link, never what it points to.
    await kf.locked(() => kf.deleteFolder(["blog"], []));
    expect(existsSync(join(ws, "blog"))).toBe(false);
    expect(contents(sentinel)).toEqual(before);
  });

  it("deleting a folder removes what is really in it, and links inside it only as links", async () => {
    const before = contents(sentinel);
    mkdirSync(join(ws, "real", "deep"));
    writeFileSync(join(ws, "real", "deep", "a.md"), "a");
    symlinkSync(sentinel, join(ws, "real", "deep", "everything"));
    symlinkSync(join(sentinel, "notes.md"), join(ws, "real", "notes.md"));
    execFileSync("mkfifo", [join(ws, "real", "pipe")]);
    await runTurn(ws, { request: "delete the real folder" });
    const yes = await runTurn(ws, { request: "yes" });
    expect(yes.applied).toBe(true);
    expect(readdirSync(ws).filter((n) => !n.startsWith(".") && !n.startsWith("_"))).toEqual([]);
    expect(contents(sentinel)).toEqual(before);
  });

  it(".kfolder.json, .focus and a file that are links are neither read nor written through", async () => {
    const before = contents(sentinel);
    unlinkSync(join(ws, "real", ".kfolder.json"));
    symlinkSync(join(sentinel, ".kfolder.json"), join(ws, "real", ".kfolder.json"));
    symlinkSync(join(sentinel, "notes.md"), join(ws, "notes.md"));
    writeFileSync(join(sentinel, "focus"), "real");
    const withFocus = contents(sentinel);
    symlinkSync(join(sentinel, "focus"), join(ws, ".focus"));
    const t = await runTurn(ws, { kfile: k("none", "none", "discuss") });
    expect(t.tree).toBe("[root]-shared workspace [focus]\n└── [real]\n");
    expect(t.tree).not.toMatch(/SECRET/);
    const kf = new KFolder(ws);
    await expect(kf.readFile([], "notes.md")).rejects.toSatisfy(unsafe);
    // Writes replace the link itself, never its target.
    await runTurn(ws, { kfile: k('rename-folder([real], [real], "described")') });
    await runTurn(ws, { kfile: k("focus-folder([real])") });
    await expect(kf.writeFile([], "notes.md", "overwrite")).rejects.toSatisfy(unsafe);
    expect(lstatSync(join(ws, "real", ".kfolder.json")).isFile()).toBe(true);
    expect(lstatSync(join(ws, ".focus")).isFile()).toBe(true);
    expect(contents(sentinel)).toEqual(withFocus);
    expect(before).not.toEqual(withFocus);
  });
});

describe("FIFOs in the workspace", () => {
  it("never hang tree, show or a turn (CLI, within a time budget)", async () => {
    const ws = join(tmp, "ws");
    mkdirSync(join(ws, "blog"), { recursive: true });
    writeFileSync(join(ws, "blog", "notes.md"), "notes\n");
    for (const fifo of [
      ".kfolder.json",
      ".focus",
      "blog/.kfolder.json",
      "pipe.md",
      ".pending-user.json",
    ]) {
      execFileSync("mkfifo", [join(ws, fifo)]);
    }
    const budget = { timeoutMs: 15_000 };
    const tree = await runCli(["ws", "tree", "--files", "--workspace", ws], budget);
    expect(tree.code).toBe(0);
    expect(tree.stdout).toBe("[root]-shared workspace [focus]\n└── [blog]\n    └── notes.md\n");
    expect(tree.stderr).toMatch(/pipe\.md is not a regular file/);
    const show = await runCli(["ws", "show", "notes.md", "--workspace", ws], budget);
    expect(show.stdout).toBe("notes\n");
    const pipe = await runCli(["ws", "show", "pipe.md", "--workspace", ws], budget);
    expect(pipe.code).not.toBe(0);
    const turn = await runCli(
      ["ws", "turn", "--workspace", ws, "focus on the blog folder"],
      budget,
    );
    expect(turn.code).toBe(0);
    expect(turn.stdout).toMatch(/\[blog\] \[focus\]/);
  });
});

describe("state files written by someone else", () => {
  it("a pending confirmation that is not JSON counts as nothing waiting, and is replaced", async () => {
    const ws = join(tmp, "ws");
    await runTurn(ws, { kfile: k('create-folder([root]/[blog], "the article")') });
    writeFileSync(join(ws, ".pending-user.json"), "{ not json");
    const yes = await runTurn(ws, { request: "yes" });
    expect(yes.applied).toBe(false);
    expect(yes.reason).toBe("nothing is waiting for a confirmation");
    const del = await runTurn(ws, { request: "delete the blog folder" });
    expect(del.pending).toBe(true);
    expect((await runTurn(ws, { request: "yes" })).applied).toBe(true);
  });
});

describe("names the K-folder rules do not allow", () => {
  it("a folder named c++ is skipped with one warning; the rest of the tree is shown", async () => {
    const ws = join(tmp, "ws");
    await runTurn(ws, { kfile: k('create-folder([root]/[blog], "the article")') });
    mkdirSync(join(ws, "c++"));
    writeFileSync(join(ws, "c++", "main.cpp"), "int main() {}\n");
    mkdirSync(join(ws, "blog", "a b"));
    const snap = await new KFolder(ws).snapshot();
    expect(snap.root.children.map((c) => c.name)).toEqual(["blog"]);
    expect(snap.skipped.map((s) => s.path)).toEqual(["blog/a b", "c++"]);
    const r = await runCli(["ws", "tree", "--workspace", ws]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("[root]-shared workspace [focus]\n└── [blog]-the article\n");
    expect(r.stderr.match(/c\+\+/g)).toHaveLength(1);
    expect(r.stderr).toMatch(/c\+\+ is not a valid folder name.*; skipped/);
    const turn = await runTurn(ws, { kfile: k("focus-folder([blog])") });
    expect(turn.applied).toBe(true);
    expect(turn.warnings).toHaveLength(2);
  });
});
