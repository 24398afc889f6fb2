import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseMessage } from "../../src/core/message.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

let root: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir: root, cleanup } = tempDir("agent-chat-wscli-"));
});
afterEach(() => cleanup());

const K = (update: string, clarify = "none", response = "acknowledge") =>
  `ResponseAction: ${response}\nUpdateAction: ${update}\nClarifyAction: ${clarify}\n`;

describe("agent-chat ws", () => {
  it("runs the seed's conversation in a workspace folder, human and --json output", async () => {
    const ws = join(root, "ws");
    const a = await runCli([
      "ws",
      "turn",
      "--workspace",
      ws,
      "create a folder protocol for protocol design",
    ]);
    expect(a.code).toBe(0);
    await runCli([
      "ws",
      "turn",
      "--workspace",
      ws,
      "create a folder blog for the article about the protocol",
    ]);
    const r = await runCli([
      "--json",
      "ws",
      "turn",
      "--workspace",
      ws,
      "Focus on the blog folder and summarize the protocol",
    ]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.kfileText).toBe(K("focus-folder([blog])", "none", "discuss"));
    expect(out.kfile).toEqual({
      response: "discuss",
      update: "focus-folder([blog])",
      clarify: "none",
    });
    expect(out.applied).toBe(true);
    expect(out.kfilePath).toBe(join(ws, ".kfile"));
    expect(readFileSync(out.kfilePath, "utf8")).toBe(out.kfileText);
    const tree = await runCli(["ws", "tree", "--workspace", ws]);
    expect(tree.stdout).toBe(
      "[root]-shared workspace\n├── [protocol]-protocol design\n└── [blog]-article about the protocol [focus]\n",
    );
    const human = await runCli(["ws", "turn", "--workspace", ws, "save notes.md: three steps"]);
    expect(human.stdout).toBe(
      [
        K('store-file([blog], "notes.md")'),
        "Context: [root]/[blog] — article about the protocol (focus): this turn works inside this folder (0 subfolders, 1 file).",
        "Concepts:",
        "- acknowledge: confirm an operation on the K-folder",
        "- store-file: store the current result as a persistent file",
        "- [root]/[blog]: article about the protocol",
        "Contents:",
        "Stored [root]/[blog]/notes.md (12 bytes).",
        "",
        "K-folder:",
        "[root]-shared workspace",
        "├── [protocol]-protocol design",
        "└── [blog]-article about the protocol [focus]",
        "",
      ].join("\n"),
    );
    expect((await runCli(["ws", "show", "notes.md", "--workspace", ws])).stdout).toBe(
      "three steps\n",
    );
    expect((await runCli(["ws", "focus", "--workspace", ws])).stdout).toBe("[root]/[blog]\n");
    expect((await runCli(["ws", "focus", "root", "--workspace", ws])).code).toBe(0);
    expect((await runCli(["ws", "show", "blog/notes.md", "--workspace", ws])).stdout).toBe(
      "three steps\n",
    );
    const files = await runCli(["ws", "tree", "--files", "--workspace", ws]);
    expect(files.stdout).toBe(
      "[root]-shared workspace [focus]\n├── [protocol]-protocol design\n└── [blog]-article about the protocol\n    └── notes.md\n",
    );
  });

  it("applies a K-file from stdin and reports a bad one with its line", async () => {
    const ws = join(root, "ws");
    const ok = await runCli(["ws", "apply", "--workspace", ws, "--kfile", "-"], {
      input: K('create-folder([root]/[blog], "posts")'),
    });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("Created [root]/[blog] — posts.");
    const bad = await runCli(["--json", "ws", "apply", "--workspace", ws, "--kfile", "-"], {
      input: K("focus-folder([../x])"),
    });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error.code).toBe("INVALID_KFILE");
    expect(bad.stderr).toMatch(/^agent-chat: K-file line 2: invalid folder name "\.\.\/x"/);
    const outside = await runCli(["ws", "show", "../../etc/passwd", "--workspace", ws]);
    expect(outside.code).toBe(64);
    expect(outside.stderr).toMatch(/^agent-chat: invalid folder name/);
    const usage = await runCli(["ws", "tree"]);
    expect(usage.code).toBe(64);
    expect(usage.stderr).toBe("agent-chat: give the workspace: --workspace DIR or --channel CH\n");
    const help = await runCli(["ws", "turn", "--help"]);
    expect(help.stdout).toContain("Examples:");
  });

  it("uses --normalizer, an external program, through the CLI", async () => {
    const ws = join(root, "ws");
    const script = join(root, "norm.sh");
    // A tiny normaliser: reads the JSON, answers with a create-folder named after the request.
    writeFileSync(
      script,
      `#!/bin/sh\nname=$(node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).request.split(" ").pop()))')\n` +
        `printf 'ResponseAction: acknowledge\\nUpdateAction: create-folder([root]/[%s], "made by the normalizer")\\nClarifyAction: none\\n' "$name"\n`,
    );
    const r = await runCli([
      "--json",
      "ws",
      "turn",
      "--workspace",
      ws,
      "--normalizer",
      `sh ${script}`,
      "please",
      "make",
      "ideas",
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).kfile.update).toBe(
      'create-folder([root]/[ideas], "made by the normalizer")',
    );
    const env = await runCli(["ws", "turn", "--workspace", ws, "anything", "drafts"], {
      env: { AGENT_CHAT_NORMALIZER: `sh ${script}` },
    });
    expect(env.code).toBe(0);
    expect((await runCli(["ws", "tree", "--workspace", ws])).stdout).toBe(
      "[root]-shared workspace [focus]\n├── [ideas]-made by the normalizer\n└── [drafts]-made by the normalizer\n",
    );
    const broken = await runCli([
      "ws",
      "turn",
      "--workspace",
      ws,
      "--normalizer",
      "echo nonsense",
      "x",
    ]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toBe(
      'agent-chat: the normalizer\'s output is not a valid K-file: K-file line 1: expected "Key: value" with Key one of ResponseAction, UpdateAction, ClarifyAction; got "nonsense"\n',
    );
  });

  it("records each turn in a channel: the request, the K-file and the response", async () => {
    expect((await runCli(["init", "review"], { root })).code).toBe(0);
    const r = await runCli(
      [
        "--json",
        "ws",
        "turn",
        "--channel",
        "review",
        "--as",
        "alice",
        "create a folder blog for the article",
      ],
      { root },
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).recorded).toEqual([1, 2, 3]);
    expect(JSON.parse(r.stdout).workspace).toBe(join(root, "review", "_workspace"));
    await runCli(["ws", "turn", "--channel", "review", "--as", "alice", "delete blog"], { root });
    const files = readdirSync(join(root, "review"))
      .filter((n) => /^\d+-/.test(n))
      .sort();
    expect(files).toHaveLength(6);
    const msgs = files.map((f) => {
      const parsed = parseMessage(readFileSync(join(root, "review", f), "utf8"), f, "review");
      if (!parsed.ok) throw new Error(parsed.reason);
      return parsed.message;
    });
    expect(msgs.map((m) => [m.from, m.status, m.replyTo])).toEqual([
      ["alice", "request", undefined],
      ["workspace", "kfile", 1],
      ["workspace", "response", 2],
      ["alice", "request", undefined],
      ["workspace", "kfile", 4],
      ["workspace", "ask-confirmation", 5],
    ]);
    expect(msgs[0]!.body).toBe("create a folder blog for the article");
    expect(msgs[1]!.body).toBe(K('create-folder([root]/[blog], "article")').trimEnd());
    expect(msgs[1]!.title).toBe(
      'K-file: acknowledge / create-folder([root]/[blog], "article") / none',
    );
    expect(msgs[2]!.body).toContain("Contents:\nCreated [root]/[blog] — article.");
    expect(msgs[2]!.body).toContain("└── [blog]-article\n```");
    expect(msgs[5]!.body).toContain(
      'Delete [root]/[blog] with its 0 subfolders and 0 files? Answer "yes"',
    );
    // The reference's reader sees only messages: the workspace lives under `_workspace`.
    const peek = await runCli(["--json", "peek", "review", "-n", "10"], { root });
    expect(JSON.parse(peek.stdout).messages).toHaveLength(6);
    const noName = await runCli(["ws", "turn", "--channel", "review", "yes"], { root });
    expect(noName.code).toBe(64);
    const missing = await runCli(["ws", "tree", "--channel", "nope"], { root });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no channel nope/);
  });

  it("keeps the workspace whole under concurrent turns from several processes", async () => {
    const ws = join(root, "ws");
    await runCli(["ws", "apply", "--workspace", ws, "--kfile", "-"], {
      input: K('create-folder([root]/[log], "")'),
    });
    await runCli(["ws", "apply", "--workspace", ws, "--kfile", "-", "--content", "start"], {
      input: K('store-file([log], "log.md")'),
    });
    const n = 5;
    const slow = { timeoutMs: 30_000 };
    const children = [];
    for (let i = 0; i < n; i++) {
      children.push(
        startCli(["ws", "turn", "--workspace", ws, `append to log.md: line ${i}`], slow),
      );
      children.push(
        startCli(["ws", "turn", "--workspace", ws, `create a folder f${i} in log for folder ${i}`]),
      );
      children.push(
        startCli(["ws", "turn", "--workspace", ws, i % 2 ? "focus on log" : "go to the root"]),
      );
    }
    const results = await Promise.all(children.map((c) => collect(c)));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const log = readFileSync(join(ws, "log", "log.md"), "utf8")
      .trimEnd()
      .split("\n");
    expect(log[0]).toBe("start");
    expect(log.slice(1).sort()).toEqual(Array.from({ length: n }, (_, i) => `line ${i}`).sort());
    const tree = (await runCli(["ws", "tree", "--workspace", ws])).stdout.split("\n");
    for (let i = 0; i < n; i++)
      expect(tree).toContainEqual(expect.stringMatching(new RegExp(`── \\[f${i}\\]-folder ${i}$`)));
    expect(tree.filter((l) => l.endsWith(" [focus]"))).toHaveLength(1);
    // No temporary, half-deleted or lock leftovers.
    const leftovers = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) =>
        /^(\.tmp-|\.trash-|_seq\.lock)/.test(e.name)
          ? [e.name]
          : e.isDirectory()
            ? leftovers(join(d, e.name))
            : [],
      );
    expect(leftovers(ws)).toEqual([]);
  });
});
