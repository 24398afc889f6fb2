import { spawn } from "node:child_process";
import { AgentChatError } from "../core/errors.js";
import {
  type ArgLabel,
  type FolderRef,
  formatFolderRef,
  formatKFile,
  formatUpdate,
  type KFile,
  parseKFile,
  renderTree,
  UPDATE_SYNTAX,
  type UpdateAction,
  type UpdateArgs,
} from "../core/kfile/index.js";
import { identity } from "../core/names.js";
import {
  displayPath,
  type Folder,
  findByPath,
  isInside,
  KFILE_FILE,
  KFolder,
  resolveFolder,
  type Snapshot,
  toTree,
} from "./kfolder.js";
import { type Normalized, normalize } from "./normalize.js";
import { formatResponse, type Response, renderResponse } from "./render.js";

export interface TurnInput {
  /** The user's request (normalised by the rule-based normaliser or `normalizer`). */
  request?: string;
  /** A K-file written by an agent (text or parsed); applied as it is, no normaliser. */
  kfile?: string | KFile;
  /**
   * The content of the turn: what `store-file`/`edit-file` write and the answer the Response
   * shows. Default: the request's inline content (after its first `: ` or newline).
   */
  content?: string;
  /** Who makes the request; a confirmation is only taken from the one who was asked. */
  as?: string;
  /**
   * Apply a `kfile` under the rules of a request: a delete, or a store over an existing file,
   * waits for a confirmation, and the turn cancels a K-file that was waiting for one. For a
   * K-file written by a model (the MCP tool), which must not delete without being confirmed.
   */
  guarded?: boolean;
  /** A shell command: gets the request and the tree as JSON on stdin, prints a K-file. */
  normalizer?: string;
  normalizerTimeoutMs?: number;
}

export interface TurnResult {
  workspace: string;
  /** Where the K-file of this turn was written (`<workspace>/.kfile`). */
  kfilePath: string;
  request?: string;
  kfile: KFile;
  kfileText: string;
  /** The K-folder was changed by this turn. */
  applied: boolean;
  /** A K-file now waits for confirmation ("yes" / "confirm" executes it). */
  pending: boolean;
  /** A K-file that waited for confirmation was cancelled by this turn. */
  cancelled: boolean;
  /** Why a clarification is asked. */
  reason?: string;
  response: Response;
  responseText: string;
  tree: string;
  /** Entries of the workspace the tree cannot hold (links, FIFOs, invalid names), one a line. */
  warnings: string[];
}

const CONFIRM =
  /^\s*(yes|y|yep|yeah|confirm(ed)?|ok(ay)?|sure|do it|go ahead|proceed|approved?)\s*[.!]*\s*$/i;
const NEGATE = /^\s*(no|n|nope|cancel|stop|abort|never ?mind|don'?t|do not|forget it)\b[\s\S]*$/i;
const DESTRUCTIVE = new Set(["delete-folder", "delete-file"]);

interface Pending {
  kfile: string;
  content?: string;
  request?: string;
}

/**
 * One turn of the protocol: Request → Normalize → K-file; (K-file, K-folder) → Update if
 * needed → K-folder'; K-file → Render → Response. This is the one function the CLI's
 * `ws turn` / `ws apply` and an MCP tool wrap.
 *
 * - With `request`, the K-file comes from the rule-based normaliser (or `normalizer`); every
 *   delete, and a store over an existing file, is turned into `ask-confirmation`, and the
 *   K-file waits in `.pending-<who>.json` until that person answers "yes"/"confirm" (anything
 *   else cancels it).
 * - With `kfile`, the K-file is applied as written (an agent normalised the request itself).
 * - The K-folder changes only when ClarifyAction is `none`; a target that does not exist, or
 *   that names several folders, turns the K-file into `ask-target` instead of guessing.
 * - The effective K-file is written to `<workspace>/.kfile`, where both sides can read it.
 */
export async function runTurn(workspace: string | KFolder, input: TurnInput): Promise<TurnResult> {
  const ws = typeof workspace === "string" ? new KFolder(workspace) : workspace;
  if ((input.request === undefined) === (input.kfile === undefined)) {
    throw new AgentChatError("INVALID_ARGUMENT", "a turn needs either a request or a K-file");
  }
  const pendingName = `.pending-${identity(input.as ?? "user")}.json`;
  await ws.ensure();
  const decision =
    input.kfile !== undefined
      ? await fromKFile(ws, input, input.kfile, pendingName)
      : await fromRequest(ws, input, input.request!, pendingName);
  return ws.locked(() => applyTurn(ws, input, pendingName, decision));
}

/** The K-file a turn applies, decided before the K-folder is locked. */
interface Decision {
  kfile: KFile;
  content: string | undefined;
  reason: string | undefined;
  /** Under a request's rules: a delete, or a store over a file, waits for a confirmation. */
  guard: boolean;
  /** The pending K-file was confirmed: it is the one applied. */
  confirmed: boolean;
  /** The update of the pending K-file this turn cancels. */
  cancels: UpdateAction | undefined;
}

async function fromKFile(
  ws: KFolder,
  input: TurnInput,
  text: string | KFile,
  pendingName: string,
): Promise<Decision> {
  const kfile = typeof text === "string" ? parseKFile(text) : text;
  const decision = { kfile, content: input.content, reason: undefined, confirmed: false };
  if (!input.guarded) return { ...decision, guard: false, cancels: undefined };
  const pending = await readPending(ws, pendingName);
  return { ...decision, guard: true, cancels: pending?.update };
}

async function fromRequest(
  ws: KFolder,
  input: TurnInput,
  request: string,
  pendingName: string,
): Promise<Decision> {
  const pending = await readPending(ws, pendingName);
  if (pending && CONFIRM.test(request)) {
    const kfile: KFile = { ...pending.kfile, clarify: "none" };
    const content = pending.content ?? input.content;
    return { kfile, content, reason: undefined, guard: false, confirmed: true, cancels: undefined };
  }
  const cancels = pending?.update;
  if (pending && NEGATE.test(request)) {
    const kfile: KFile = { response: "acknowledge", update: { action: "none" }, clarify: "none" };
    return {
      kfile,
      content: input.content,
      reason: undefined,
      guard: false,
      confirmed: false,
      cancels,
    };
  }
  const snapshot = await ws.snapshot();
  const normalized = input.normalizer
    ? await runNormalizer(input.normalizer, request, snapshot, input.normalizerTimeoutMs)
    : normalize(request, snapshot);
  const reason =
    !pending && CONFIRM.test(request) ? "nothing is waiting for a confirmation" : normalized.reason;
  const content = input.content ?? normalized.content;
  return { kfile: normalized.kfile, content, reason, guard: true, confirmed: false, cancels };
}

/** What checking and running the update gave. */
interface Outcome {
  kfile: KFile;
  reason: string | undefined;
  touched: string[][];
  applied: boolean;
  effect: string | undefined;
  /** The confirmation the update waits for. */
  question: string | undefined;
}

/** Under the K-folder's lock: checks the update, runs it or holds it, writes `.kfile`. */
async function applyTurn(
  ws: KFolder,
  input: TurnInput,
  pendingName: string,
  decision: Decision,
): Promise<TurnResult> {
  if (decision.cancels) await ws.removeState(pendingName);
  const before = await ws.snapshot();
  const out = await runUpdate(ws, before, decision);
  const { kfile, reason } = out;
  const pending = await holdPending(ws, pendingName, out, decision, input.request);
  const question =
    kfile.clarify !== "none" && out.question === undefined
      ? clarifyQuestion(kfile, reason)
      : out.question;
  const effect = decision.cancels ? withCancelNote(decision.cancels, out.effect) : out.effect;
  const kfileText = formatKFile(kfile);
  await ws.writeKFile(kfileText);
  const after = await ws.snapshot();
  const touched = out.touched.length === 0 ? [after.focus] : out.touched;
  const response = renderResponse({
    kfile,
    snapshot: after,
    touched,
    ...(effect !== undefined ? { effect } : {}),
    ...(question !== undefined ? { question } : {}),
    ...(decision.content !== undefined && !isStoring(kfile.update)
      ? { answer: decision.content }
      : {}),
  });
  return {
    workspace: ws.dir,
    kfilePath: `${ws.dir}/${KFILE_FILE}`,
    kfile,
    kfileText,
    applied: out.applied,
    pending,
    cancelled: decision.cancels !== undefined,
    response,
    responseText: formatResponse(response),
    tree: renderTree(toTree(after)),
    warnings: skippedWarnings(after),
    ...(input.request !== undefined ? { request: input.request } : {}),
    ...(reason !== undefined && kfile.clarify !== "none" ? { reason } : {}),
  };
}

/** Checks the update against the K-folder and runs it unless it must be confirmed or asked. */
async function runUpdate(ws: KFolder, before: Snapshot, decision: Decision): Promise<Outcome> {
  let kfile = decision.kfile;
  if (decision.guard && kfile.clarify === "none" && DESTRUCTIVE.has(kfile.update.action)) {
    kfile = { ...kfile, clarify: "ask-confirmation" };
  }
  const out: Outcome = {
    kfile,
    reason: decision.reason,
    touched: [],
    applied: false,
    effect: undefined,
    question: undefined,
  };
  if (kfile.clarify !== "none" && kfile.clarify !== "ask-confirmation") return out;
  const check = plan(before, kfile.update, decision.content);
  if ("clarify" in check) {
    return { ...out, kfile: { ...kfile, clarify: check.clarify }, reason: check.reason };
  }
  out.touched.push(...check.touched);
  if (decision.guard && kfile.clarify === "none" && check.overwrites) {
    out.kfile = { ...kfile, clarify: "ask-confirmation" };
  }
  if (out.kfile.clarify !== "none") {
    return {
      ...out,
      question: `${check.confirm} Answer "yes" to confirm; anything else cancels it.`,
    };
  }
  const effect = await check.run(ws, before.focus);
  return { ...out, effect, applied: kfile.update.action !== "none" };
}

/** Writes the K-file that waits for a confirmation, or removes the one just confirmed. */
async function holdPending(
  ws: KFolder,
  pendingName: string,
  out: Outcome,
  decision: Decision,
  request: string | undefined,
): Promise<boolean> {
  if (out.kfile.clarify === "ask-confirmation" && out.question !== undefined) {
    const record: Pending = { kfile: formatKFile(out.kfile) };
    if (decision.content !== undefined) record.content = decision.content;
    if (request !== undefined) record.request = request;
    await ws.writeState(pendingName, `${JSON.stringify(record)}\n`);
    return true;
  }
  if (decision.confirmed) await ws.removeState(pendingName);
  return false;
}

function withCancelNote(cancelled: UpdateAction, effect: string | undefined): string {
  const note = `Cancelled the pending ${formatUpdate(cancelled)}; nothing was deleted.`;
  return effect ? `${note}\n\n${effect}` : note;
}

/**
 * The K-file waiting for `who`'s confirmation. The file is in a shared folder, so one that does
 * not parse (written by hand, cut short) counts as nothing waiting rather than blocking every
 * turn; the next turn replaces it.
 */
async function readPending(
  ws: KFolder,
  name: string,
): Promise<{ kfile: KFile; update: UpdateAction; content?: string } | undefined> {
  const text = await ws.readState(name);
  if (!text) return undefined;
  try {
    const record = JSON.parse(text) as Partial<Pending> | null;
    if (typeof record?.kfile !== "string") return undefined;
    const kfile = parseKFile(record.kfile);
    return typeof record.content === "string"
      ? { kfile, update: kfile.update, content: record.content }
      : { kfile, update: kfile.update };
  } catch {
    return undefined;
  }
}

/** One line per entry of the workspace that is not part of the tree. */
export function skippedWarnings(snapshot: Snapshot): string[] {
  return snapshot.skipped.map((s) => `workspace entry ${s.path} ${s.reason}; skipped`);
}

function isStoring(update: UpdateAction): boolean {
  return update.action === "store-file" || update.action === "edit-file";
}

function clarifyQuestion(kfile: KFile, reason: string | undefined): string {
  const questions: Record<string, string> = {
    "ask-goal":
      "What should this turn do? For example: discuss a topic, create or focus a folder, store a result.",
    "ask-content": "What is the content?",
    "ask-target": "Which folder or file is meant?",
    "ask-constraint": "What are the limits?",
    "ask-format": "In which form should the result be?",
    "ask-confirmation": "Please confirm.",
  };
  const why = reason ? ` ${reason.charAt(0).toUpperCase()}${reason.slice(1)}.` : "";
  return `${questions[kfile.clarify] ?? ""}${why}`;
}

type Check =
  | { clarify: "ask-target" | "ask-content"; reason: string }
  | {
      touched: string[][];
      /** The sentence a confirmation shows. */
      confirm: string;
      overwrites?: boolean;
      run: (ws: KFolder, focus: string[]) => Promise<string>;
    };

/** The K-folder before the turn and the turn's content: what a planner checks against. */
interface PlanCtx {
  snap: Snapshot;
  content: string | undefined;
}

/** Checks an UpdateAction against the K-folder and prepares it; no change is made here. */
function plan(snap: Snapshot, update: UpdateAction, content: string | undefined): Check {
  if (update.action === "none") {
    return { touched: [], confirm: "", run: async () => "" };
  }
  if (update.args === undefined) {
    return askTarget(`the arguments are missing: ${UPDATE_SYNTAX[update.action]}`);
  }
  return planArgs(update.action, update.args, { snap, content });
}

function planArgs<K extends ArgLabel>(action: K, args: UpdateArgs[K], ctx: PlanCtx): Check {
  return PLANS[action](args, ctx);
}

function askTarget(reason: string): Check {
  return { clarify: "ask-target", reason };
}

type Found = Folder | { reason: string };

function find(snap: Snapshot, ref: FolderRef): Found {
  const r = resolveFolder(snap.root, ref);
  if (r.kind === "found") return r.folder;
  // "no folder [blog]" would be a puzzle when blog is on disk: say why it is not usable.
  const last = ref.segments[ref.segments.length - 1];
  const skipped = snap.skipped.find((s) => s.path.split("/").pop() === last);
  if (r.kind === "missing" && skipped) {
    return { reason: `${formatFolderRef({ segments: [last!] })} ${skipped.reason}` };
  }
  return { reason: r.reason };
}

/** The folder that holds `file`, or why there is none. */
function holder(snap: Snapshot, ref: FolderRef, file: string): Found {
  const folder = find(snap, ref);
  if ("reason" in folder || folder.files.includes(file)) return folder;
  return { reason: `there is no file ${nameOf(folder, file)}` };
}

function nameOf(f: Folder, file?: string): string {
  return file === undefined ? displayPath(f.path) : `${displayPath(f.path)}/${file}`;
}

/** The content as a file's text: ending with a newline; undefined when there is none. */
function textOf(content: string | undefined): string | undefined {
  if (content === undefined || content.trim() === "") return undefined;
  return content.endsWith("\n") ? content : `${content}\n`;
}

function planCreateFolder(args: UpdateArgs["create-folder"], { snap }: PlanCtx): Check {
  const segs = args.folder.segments;
  const newName = segs[segs.length - 1]!;
  const parent: Found =
    segs.length === 1
      ? findByPath(snap.root, snap.focus)!
      : find(snap, { segments: segs.slice(0, -1) });
  if ("reason" in parent) return askTarget(`the parent: ${parent.reason}`);
  if (parent.children.some((c) => c.name === newName)) {
    return askTarget(`${nameOf(parent)} already has a folder named ${newName}`);
  }
  const { description } = args;
  return {
    touched: [[...parent.path, newName]],
    confirm: "",
    run: async (ws) => {
      await ws.createFolder(parent.path, newName, description);
      return `Created ${displayPath([...parent.path, newName])}${description ? ` — ${description}` : ""}.`;
    },
  };
}

function planFocusFolder(args: UpdateArgs["focus-folder"], { snap }: PlanCtx): Check {
  const folder = find(snap, args.folder);
  if ("reason" in folder) return askTarget(folder.reason);
  return {
    touched: [folder.path],
    confirm: "",
    run: async (ws) => {
      await ws.setFocus(folder.path);
      return `Focus moved to ${nameOf(folder)}.`;
    },
  };
}

function planRenameFolder(args: UpdateArgs["rename-folder"], { snap }: PlanCtx): Check {
  const folder = find(snap, args.folder);
  if ("reason" in folder) return askTarget(folder.reason);
  const { newName, description } = args;
  const isRoot = folder.path.length === 0;
  if (isRoot && newName !== "root")
    return askTarget("the root keeps its name; only its description can change");
  const parent = folder.path.slice(0, -1);
  const siblings = findByPath(snap.root, parent)!.children;
  if (!isRoot && newName !== folder.name && siblings.some((c) => c.name === newName)) {
    return askTarget(`${displayPath(parent)} already has a folder named ${newName}`);
  }
  const to = isRoot ? [] : [...parent, newName];
  return {
    touched: [to],
    confirm: "",
    run: async (ws, focus) => {
      if (!isRoot && newName !== folder.name) await ws.relocateFolder(folder.path, to, focus);
      if (description !== undefined) await ws.setDescription(to, description);
      const d = description !== undefined ? ` — ${description}` : "";
      return `Renamed ${nameOf(folder)} to ${displayPath(to)}${d}.`;
    },
  };
}

function planMoveFolder(args: UpdateArgs["move-folder"], { snap }: PlanCtx): Check {
  const folder = find(snap, args.folder);
  if ("reason" in folder) return askTarget(folder.reason);
  const dest = find(snap, args.to);
  if ("reason" in dest) return askTarget(`the destination: ${dest.reason}`);
  if (folder.path.length === 0) return askTarget("the root cannot be moved");
  if (isInside(dest.path, folder.path)) {
    return askTarget(
      `${nameOf(dest)} is inside ${nameOf(folder)}; a folder cannot move into itself`,
    );
  }
  if (dest.children.some((c) => c.name === folder.name)) {
    return askTarget(`${nameOf(dest)} already has a folder named ${folder.name}`);
  }
  const to = [...dest.path, folder.name];
  return {
    touched: [to],
    confirm: "",
    run: async (ws, focus) => {
      await ws.relocateFolder(folder.path, to, focus);
      return `Moved ${nameOf(folder)} to ${displayPath(to)}.`;
    },
  };
}

function planDeleteFolder(args: UpdateArgs["delete-folder"], { snap }: PlanCtx): Check {
  const folder = find(snap, args.folder);
  if ("reason" in folder) return askTarget(folder.reason);
  if (folder.path.length === 0) return askTarget("the root cannot be deleted");
  const inside = allCounts(folder);
  return {
    touched: [folder.path.slice(0, -1)],
    confirm: `Delete ${nameOf(folder)} with its ${inside}?`,
    run: async (ws, focus) => {
      await ws.deleteFolder(folder.path, focus);
      return `Deleted ${nameOf(folder)} (${inside}).`;
    },
  };
}

function planStoreFile(args: UpdateArgs["store-file"], { snap, content }: PlanCtx): Check {
  const folder = find(snap, args.folder);
  if ("reason" in folder) return askTarget(folder.reason);
  const { file } = args;
  const text = textOf(content);
  if (text === undefined) {
    return { clarify: "ask-content", reason: `there is nothing to store in ${file}` };
  }
  const exists = folder.files.includes(file);
  return {
    touched: [folder.path],
    confirm: `Replace the existing ${nameOf(folder, file)}?`,
    overwrites: exists,
    run: async (ws) => {
      await ws.writeFile(folder.path, file, text);
      return `${exists ? "Replaced" : "Stored"} ${nameOf(folder, file)} (${Buffer.byteLength(text)} bytes).`;
    },
  };
}

function planEditFile(args: UpdateArgs["edit-file"], { snap, content }: PlanCtx): Check {
  const { file, mode } = args;
  const folder = holder(snap, args.folder, file);
  if ("reason" in folder) return askTarget(folder.reason);
  const text = textOf(content);
  if (text === undefined) {
    return { clarify: "ask-content", reason: `the new text for ${file} is missing` };
  }
  return {
    touched: [folder.path],
    confirm: "",
    run: async (ws) => {
      const old = mode === "append" ? await ws.readFile(folder.path, file) : "";
      const joined = old === "" || old.endsWith("\n") ? old + text : `${old}\n${text}`;
      await ws.writeFile(folder.path, file, joined);
      return `${mode === "append" ? "Appended to" : "Replaced the text of"} ${nameOf(folder, file)} (${Buffer.byteLength(joined)} bytes).`;
    },
  };
}

function planRenameFile(args: UpdateArgs["rename-file"], { snap }: PlanCtx): Check {
  const folder = holder(snap, args.folder, args.file);
  if ("reason" in folder) return askTarget(folder.reason);
  return relocateFile(folder, args.file, folder, args.newFile, "Renamed");
}

function planMoveFile(args: UpdateArgs["move-file"], { snap }: PlanCtx): Check {
  const folder = holder(snap, args.folder, args.file);
  if ("reason" in folder) return askTarget(folder.reason);
  const dest = find(snap, args.to);
  if ("reason" in dest) return askTarget(`the destination: ${dest.reason}`);
  return relocateFile(folder, args.file, dest, args.file, "Moved");
}

/** Renames or moves `file` of `from` to `newFile` in `dest`, unless that name is taken. */
function relocateFile(
  from: Folder,
  file: string,
  dest: Folder,
  newFile: string,
  done: "Moved" | "Renamed",
): Check {
  if (dest.files.includes(newFile) || dest.children.some((c) => c.name === newFile)) {
    return askTarget(`${nameOf(dest, newFile)} already exists`);
  }
  return {
    touched: [dest.path],
    confirm: "",
    run: async (ws) => {
      await ws.renameFile(from.path, file, dest.path, newFile);
      return `${done} ${nameOf(from, file)} to ${nameOf(dest, newFile)}.`;
    },
  };
}

function planDeleteFile(args: UpdateArgs["delete-file"], { snap }: PlanCtx): Check {
  const { file } = args;
  const folder = holder(snap, args.folder, file);
  if ("reason" in folder) return askTarget(folder.reason);
  return {
    touched: [folder.path],
    confirm: `Delete ${nameOf(folder, file)}?`,
    run: async (ws) => {
      await ws.deleteFile(folder.path, file);
      return `Deleted ${nameOf(folder, file)}.`;
    },
  };
}

/** One planner per UpdateAction that takes arguments: a label without one does not compile. */
const PLANS: { [K in ArgLabel]: (args: UpdateArgs[K], ctx: PlanCtx) => Check } = {
  "create-folder": planCreateFolder,
  "focus-folder": planFocusFolder,
  "rename-folder": planRenameFolder,
  "move-folder": planMoveFolder,
  "delete-folder": planDeleteFolder,
  "store-file": planStoreFile,
  "edit-file": planEditFile,
  "rename-file": planRenameFile,
  "move-file": planMoveFile,
  "delete-file": planDeleteFile,
};

function allCounts(folder: Folder): string {
  let folders = 0;
  let files = folder.files.length;
  const walk = (f: Folder) => {
    for (const c of f.children) {
      folders++;
      files += c.files.length;
      walk(c);
    }
  };
  walk(folder);
  return `${folders} subfolder${folders === 1 ? "" : "s"} and ${files} file${files === 1 ? "" : "s"}`;
}

/**
 * Runs an external normaliser: `sh -c COMMAND`, with one JSON document on stdin
 * (`{request, tree, focus, folders, labels}`), expecting the K-file's three lines on stdout.
 * Its output is validated like any K-file.
 */
export async function runNormalizer(
  command: string,
  request: string,
  snapshot: Snapshot,
  timeoutMs = 60_000,
): Promise<Normalized> {
  const payload = {
    request,
    tree: renderTree(toTree(snapshot)),
    focus: displayPath(snapshot.focus),
    folders: folderList(snapshot.root),
    syntax: UPDATE_SYNTAX,
  };
  const { code, stdout, stderr, timedOut } = await runShell(
    command,
    `${JSON.stringify(payload)}\n`,
    timeoutMs,
  );
  if (timedOut) {
    throw new AgentChatError(
      "NORMALIZER_FAILED",
      `the normalizer did not answer within ${timeoutMs / 1000} s`,
    );
  }
  if (code !== 0) {
    const tail = stderr.trim().split("\n").slice(-3).join(" | ");
    throw new AgentChatError(
      "NORMALIZER_FAILED",
      `the normalizer exited with ${code}${tail ? `: ${tail}` : ""}`,
    );
  }
  try {
    return { kfile: parseKFile(stdout) };
  } catch (err) {
    throw new AgentChatError(
      "INVALID_KFILE",
      `the normalizer's output is not a valid K-file: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/** Every folder of the tree, depth first, as the normaliser's input lists them. */
function folderList(root: Folder): Array<{ path: string; description: string; files: string[] }> {
  return [
    { path: displayPath(root.path), description: root.description, files: root.files },
    ...root.children.flatMap(folderList),
  ];
}

interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** `sh -c command` with `stdin`, killed with what it started after `timeoutMs`. */
function runShell(command: string, stdin: string, timeoutMs: number): Promise<ShellResult> {
  return new Promise<ShellResult>((resolve, reject) => {
    // Its own process group, so that a timeout also kills what the command started.
    const child = spawn("/bin/sh", ["-c", command], {
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    let err = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(
        new AgentChatError("NORMALIZER_FAILED", `cannot start the normalizer: ${e.message}`, {
          cause: e,
        }),
      );
    });
    child.on("close", (c) => {
      clearTimeout(timer);
      resolve({ code: c, stdout: out, stderr: err, timedOut });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(stdin);
  });
}
