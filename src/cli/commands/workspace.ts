import { promises as fsp } from "node:fs";
import type { Command } from "commander";
import { AgentChatError, wrapIoError } from "../../core/errors.js";
import {
  type FolderRef,
  formatUpdate,
  type KFile,
  parseUpdate,
  ROOT_NAME,
  renderTree,
} from "../../core/kfile/index.js";
import {
  channelWorkspace,
  displayPath,
  type Folder,
  KFolder,
  recordTurn,
  resolveFolder,
  runTurn,
  type Snapshot,
  skippedWarnings,
  type TurnInput,
  type TurnResult,
  toTree,
} from "../../workspace/index.js";
import { readBody } from "../body.js";
import { type CliContext, UsageError } from "../context.js";

interface TargetFlags {
  workspace?: string;
  channel?: string;
  as?: string;
}

interface TurnFlags extends TargetFlags {
  normalizer?: string;
  content?: string;
  contentFile?: string;
  kfile?: string;
}

const TARGET_HELP =
  "\nThe workspace is --workspace DIR (any folder; created on first use) or --channel CH\n" +
  "(<root>/CH/_workspace, and each turn is also posted to CH as three messages: the request,\n" +
  "the K-file and the response). The K-file of the latest turn is in <workspace>/.kfile.\n";

/** `agent-chat ws …`: the shared workspace of seed 003 (docs/workspace.md). */
export function registerWorkspaceCommands(program: Command, ctx: CliContext): void {
  const ws = program
    .command("ws")
    .description("the shared workspace: K-file, K-folder and the three-step turn")
    .addHelpText(
      "after",
      `${TARGET_HELP}\nExamples:\n  agent-chat ws turn --workspace ./ws "create a folder blog for the article about the protocol"\n` +
        `  agent-chat ws turn --channel review --as alice "Focus on the blog folder and summarize the protocol"\n` +
        "  agent-chat ws tree --workspace ./ws",
    );
  registerWsTurn(ws, ctx);
  registerWsApply(ws, ctx);
  registerWsTree(ws, ctx);
  registerWsFocus(ws, ctx);
  registerWsShow(ws, ctx);
}

function registerWsTurn(ws: Command, ctx: CliContext): void {
  withTarget(
    ws
      .command("turn")
      .description(
        "normalise a request into a K-file, update the K-folder if it says so, render the response",
      )
      .argument("<request...>", "the request, in words")
      .option(
        "--normalizer <command>",
        "external normaliser: gets JSON on stdin, prints a K-file (default: $AGENT_CHAT_NORMALIZER, else the rule-based one)",
      )
      .option("--content <text>", "the turn's content (what store/edit write; the answer shown)")
      .option("--content-file <file>", "read the content from a file ('-' for stdin)"),
    `\nExamples:\n` +
      `  agent-chat ws turn --workspace ./ws "create a folder protocol for protocol design"\n` +
      `  agent-chat ws turn --workspace ./ws "Focus on the blog folder and summarize the protocol"\n` +
      `  agent-chat ws turn --workspace ./ws "save notes.md: the protocol has three steps"\n` +
      `  agent-chat ws turn --workspace ./ws "delete the protocol folder"   # asks for confirmation\n` +
      `  agent-chat ws turn --workspace ./ws yes                           # confirms it\n` +
      `  agent-chat ws turn --workspace ./ws --normalizer ./my-llm-normalizer "…"`,
  ).action(async (words: string[], opts: TurnFlags) => {
    const input: TurnInput = { request: words.join(" ") };
    const normalizer = opts.normalizer ?? ctx.env.AGENT_CHAT_NORMALIZER;
    if (normalizer) input.normalizer = normalizer;
    await turn(ctx, opts, input);
  });
}

function registerWsApply(ws: Command, ctx: CliContext): void {
  withTarget(
    ws
      .command("apply")
      .description("apply a K-file written by an agent (no normaliser)")
      .requiredOption("--kfile <file>", "the K-file ('-' for stdin)")
      .option("--content <text>", "the turn's content (what store/edit write; the answer shown)")
      .option("--content-file <file>", "read the content from a file"),
    `\nA K-file has three lines; UpdateAction arguments (docs/workspace.md):\n` +
      `  create-folder([parent]/[name], "description")   focus-folder([folder])\n` +
      `  rename-folder([folder], [new-name], "description")   move-folder([folder], [new-parent])\n` +
      `  delete-folder([folder])   store-file([folder], "name.md")   edit-file([folder], "name.md", append|replace)\n` +
      `  rename-file([folder], "old.md", "new.md")   move-file([folder], "name.md", [folder])   delete-file([folder], "name.md")\n` +
      "\nExamples:\n" +
      `  printf 'ResponseAction: acknowledge\\nUpdateAction: focus-folder([blog])\\nClarifyAction: none\\n' | agent-chat ws apply --workspace ./ws --kfile -\n` +
      `  agent-chat ws apply --workspace ./ws --kfile turn.k --content-file answer.md`,
  ).action(async (opts: TurnFlags) => {
    if (opts.kfile === "-" && opts.contentFile === "-") {
      throw new UsageError("--kfile and --content-file cannot both read stdin");
    }
    const text =
      opts.kfile === "-"
        ? await readBody({ bodyFile: "-" })
        : await readText(opts.kfile!, "K-file");
    await turn(ctx, opts, { kfile: text });
  });
}

function registerWsTree(ws: Command, ctx: CliContext): void {
  withTarget(
    ws
      .command("tree")
      .description("print the K-folder in the seed's form")
      .option("--files", "also list each folder's files"),
    `\nExamples:\n  agent-chat ws tree --workspace ./ws\n  agent-chat ws tree --channel review --files`,
  ).action(async (opts: TargetFlags & { files?: boolean }) => {
    const kf = new KFolder(await workspaceDir(ctx, opts));
    const snapshot = await snapshotOf(ctx, kf);
    const tree = renderTree(toTree(snapshot), { files: opts.files === true });
    if (ctx.json) {
      return ctx.printJson({
        workspace: kf.dir,
        focus: displayPath(snapshot.focus),
        tree,
        root: folderJson(snapshot.root),
        skipped: snapshot.skipped,
      });
    }
    ctx.out(tree);
  });
}

function registerWsFocus(ws: Command, ctx: CliContext): void {
  withTarget(
    ws
      .command("focus")
      .description("show the focused folder, or move the focus (same as a focus-folder K-file)")
      .argument("[folder]", "blog, protocol/blog, [root]/[protocol]/[blog] or root"),
    `\nExamples:\n  agent-chat ws focus --workspace ./ws\n  agent-chat ws focus blog --workspace ./ws\n  agent-chat ws focus root --workspace ./ws`,
  ).action(async (folder: string | undefined, opts: TargetFlags) => {
    if (folder === undefined) {
      const kf = new KFolder(await workspaceDir(ctx, opts));
      const snapshot = await snapshotOf(ctx, kf);
      const path = displayPath(snapshot.focus);
      if (ctx.json) return ctx.printJson({ workspace: kf.dir, focus: path });
      ctx.out(`${path}\n`);
      return;
    }
    const kfile: KFile = {
      response: "acknowledge",
      update: { action: "focus-folder", args: { folder: parseFolderArg(folder) } },
      clarify: "none",
    };
    await turn(ctx, opts, { kfile });
  });
}

function registerWsShow(ws: Command, ctx: CliContext): void {
  withTarget(
    ws
      .command("show")
      .description("print a stored file")
      .argument("<file>", "notes.md (in the focus, else the one in the tree), or blog/notes.md"),
    `\nExamples:\n  agent-chat ws show notes.md --workspace ./ws\n  agent-chat ws show protocol/blog/notes.md --channel review`,
  ).action(async (file: string, opts: TargetFlags) => {
    const kf = new KFolder(await workspaceDir(ctx, opts));
    const snapshot = await snapshotOf(ctx, kf);
    const slash = file.lastIndexOf("/");
    const name = file.slice(slash + 1);
    const folder =
      slash >= 0
        ? namedFolder(snapshot.root, file.slice(0, slash))
        : folderHolding(kf, snapshot, name);
    const content = await kf.readFile(folder.path, name);
    if (ctx.json) {
      return ctx.printJson({
        folder: displayPath(folder.path),
        file: name,
        path: kf.filePath(folder.path, name),
        content,
      });
    }
    ctx.out(content);
  });
}

/** The workspace as it is now; what the tree cannot hold is said once, on stderr. */
async function snapshotOf(ctx: CliContext, kf: KFolder): Promise<Snapshot> {
  const snapshot = await kf.snapshot();
  for (const w of skippedWarnings(snapshot)) ctx.warn(w);
  return snapshot;
}

/** The folder a `FOLDER/file` argument names. */
function namedFolder(root: Folder, arg: string): Folder {
  const r = resolveFolder(root, parseFolderArg(arg));
  if (r.kind !== "found") throw new AgentChatError("NOT_FOUND", r.reason);
  return r.folder;
}

/** The folder holding a bare file name: the focus when it has one, else the only one. */
function folderHolding(kf: KFolder, snapshot: Snapshot, name: string): Folder {
  const all: Folder[] = [];
  const walk = (f: Folder) => {
    if (f.files.includes(name)) all.push(f);
    f.children.forEach(walk);
  };
  walk(snapshot.root);
  const inFocus = all.find((f) => f.path.join("/") === snapshot.focus.join("/"));
  if (inFocus) return inFocus;
  if (all.length === 1) return all[0]!;
  if (all.length === 0) {
    kf.filePath([], name); // refuses a name that could leave the workspace
    throw new AgentChatError("NOT_FOUND", `no file ${name} in the workspace`);
  }
  throw new AgentChatError(
    "INVALID_ARGUMENT",
    `${all.length} folders hold ${name} (${all.map((f) => displayPath(f.path)).join(", ")}); give FOLDER/${name}`,
  );
}

/** A `ws` subcommand's target options, and its help after the paragraph that explains them. */
function withTarget(cmd: Command, help: string): Command {
  return cmd
    .option("--workspace <dir>", "the workspace folder")
    .option("--channel <name>", "the workspace of this channel (turns are posted to it)")
    .option("--as <name>", "who makes the request (default: $AGENT_CHAT_NAME, else user)")
    .addHelpText("after", `${TARGET_HELP}${help}`);
}

async function workspaceDir(ctx: CliContext, opts: TargetFlags): Promise<string> {
  if (opts.workspace !== undefined && opts.channel !== undefined) {
    throw new UsageError("give --workspace DIR or --channel CH, not both");
  }
  if (opts.workspace !== undefined) {
    if (opts.workspace.trim() === "") throw new UsageError("--workspace needs a folder");
    return opts.workspace;
  }
  if (opts.channel !== undefined) return channelWorkspace(await ctx.open(), opts.channel);
  throw new UsageError("give the workspace: --workspace DIR or --channel CH");
}

async function turn(ctx: CliContext, opts: TurnFlags, input: TurnInput): Promise<void> {
  if (opts.content !== undefined && opts.contentFile !== undefined) {
    throw new UsageError("give the content with --content or --content-file, not both");
  }
  if (opts.content !== undefined) input.content = opts.content;
  if (opts.contentFile !== undefined) {
    input.content = await readBody({ bodyFile: opts.contentFile }, ctx.maxBodyBytes);
  }
  const as = opts.channel !== undefined ? ctx.agent(opts.as) : (opts.as ?? ctx.env.AGENT_CHAT_NAME);
  if (as !== undefined) input.as = as;
  const dir = await workspaceDir(ctx, opts);
  const result = await runTurn(dir, input);
  for (const w of result.warnings) ctx.warn(w);
  let recorded: number[] = [];
  if (opts.channel !== undefined) {
    recorded = (await recordTurn(await ctx.open(), opts.channel, as!, result)).map((p) => p.seq);
  }
  if (ctx.json) return ctx.printJson(turnJson(result, recorded));
  ctx.out(`${result.kfileText}\n${result.responseText}\nK-folder:\n${result.tree}`);
  if (recorded.length > 0) {
    ctx.out(`\n(recorded in ${opts.channel} as ${recorded.map((s) => `#${s}`).join(", ")})\n`);
  }
}

function turnJson(r: TurnResult, recorded: number[]) {
  return {
    workspace: r.workspace,
    kfilePath: r.kfilePath,
    ...(r.request !== undefined ? { request: r.request } : {}),
    kfile: {
      response: r.kfile.response,
      update: formatUpdate(r.kfile.update),
      clarify: r.kfile.clarify,
    },
    kfileText: r.kfileText,
    applied: r.applied,
    pending: r.pending,
    cancelled: r.cancelled,
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    response: r.response,
    responseText: r.responseText,
    tree: r.tree,
    warnings: r.warnings,
    recorded,
  };
}

function folderJson(f: Folder): unknown {
  return {
    name: f.name,
    path: displayPath(f.path),
    description: f.description,
    files: f.files,
    children: f.children.map(folderJson),
  };
}

/** `blog`, `protocol/blog`, `[root]/[blog]` or `root` as a folder reference. */
function parseFolderArg(text: string): FolderRef {
  try {
    return parseFolderRef(text);
  } catch (err) {
    if (err instanceof AgentChatError && err.code === "INVALID_KFILE") {
      throw new AgentChatError("INVALID_NAME", err.message.replace(/^K-file line \d+: /, ""));
    }
    throw err;
  }
}

function parseFolderRef(text: string): FolderRef {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    const update = parseUpdate(`focus-folder(${trimmed})`, 1);
    if (update.action === "focus-folder" && update.args) return update.args.folder;
  }
  const segments = trimmed.split("/").filter((s) => s !== "");
  if (segments.length === 0) return { segments: [ROOT_NAME] };
  // Validated as a K-file would be: a name that could leave the workspace is refused here.
  const update = parseUpdate(`focus-folder(${segments.map((s) => `[${s}]`).join("/")})`, 1);
  if (update.action === "focus-folder" && update.args) return update.args.folder;
  throw new UsageError(`not a folder: ${text}`);
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await fsp.readFile(path, "utf8");
  } catch (err) {
    throw wrapIoError(err, `cannot read the ${what} ${path}`);
  }
}
