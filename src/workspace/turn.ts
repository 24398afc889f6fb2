import { spawn } from "node:child_process";
import { AgentChatError } from "../core/errors.js";
import {
  type FolderRef,
  formatFolderRef,
  formatKFile,
  type KFile,
  parseKFile,
  renderTree,
  UPDATE_SYNTAX,
  type UpdateAction,
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
  const who = identity(input.as ?? "user");
  const pendingName = `.pending-${who}.json`;
  let kfile: KFile;
  let content = input.content;
  let reason: string | undefined;
  let confirmDestructive = false;
  let cancelled = false;
  let confirmed = false;
  let cancelledWhat: UpdateAction | undefined;

  await ws.ensure();
  if (input.kfile !== undefined) {
    kfile = typeof input.kfile === "string" ? parseKFile(input.kfile) : input.kfile;
    if (input.guarded) {
      const pending = await readPending(ws, pendingName);
      if (pending) {
        cancelled = true;
        cancelledWhat = pending.update;
      }
      confirmDestructive = true;
    }
  } else {
    const request = input.request!;
    const pending = await readPending(ws, pendingName);
    if (pending && CONFIRM.test(request)) {
      kfile = { ...pending.kfile, clarify: "none" };
      if (pending.content !== undefined) content = pending.content;
      confirmed = true;
    } else {
      if (pending) {
        cancelled = true;
        cancelledWhat = pending.update;
      }
      if (pending && NEGATE.test(request)) {
        kfile = { response: "acknowledge", update: { action: "none" }, clarify: "none" };
      } else {
        const snapshot = await ws.snapshot();
        const normalized = input.normalizer
          ? await runNormalizer(input.normalizer, request, snapshot, input.normalizerTimeoutMs)
          : normalize(request, snapshot);
        kfile = normalized.kfile;
        if (content === undefined) content = normalized.content;
        reason = normalized.reason;
        if (!pending && CONFIRM.test(request)) reason = "nothing is waiting for a confirmation";
        confirmDestructive = true;
      }
    }
  }

  return ws.locked(async () => {
    if (cancelled) await ws.removeState(pendingName);
    const before = await ws.snapshot();
    const touched: string[][] = [];
    if (confirmDestructive && kfile.clarify === "none" && DESTRUCTIVE.has(kfile.update.action)) {
      kfile = { ...kfile, clarify: "ask-confirmation" };
    }
    let applied = false;
    let effect: string | undefined;
    let question: string | undefined;
    const check =
      kfile.clarify === "none" || kfile.clarify === "ask-confirmation"
        ? plan(before, kfile.update, content)
        : undefined;
    if (check && "clarify" in check) {
      kfile = { ...kfile, clarify: check.clarify };
      reason = check.reason;
    } else if (check) {
      touched.push(...check.touched);
      if (confirmDestructive && kfile.clarify === "none" && check.overwrites) {
        kfile = { ...kfile, clarify: "ask-confirmation" };
      }
      if (kfile.clarify === "none") {
        effect = await check.run(ws, before.focus);
        applied = kfile.update.action !== "none";
      } else {
        question = `${check.confirm} Answer "yes" to confirm; anything else cancels it.`;
      }
    }
    let pending = false;
    if (kfile.clarify === "ask-confirmation" && question !== undefined) {
      const record: Pending = { kfile: formatKFile(kfile) };
      if (content !== undefined) record.content = content;
      if (input.request !== undefined) record.request = input.request;
      await ws.writeState(pendingName, `${JSON.stringify(record)}\n`);
      pending = true;
    } else if (confirmed) {
      await ws.removeState(pendingName);
    }
    if (kfile.clarify !== "none" && question === undefined) {
      question = clarifyQuestion(kfile, reason);
    }
    if (cancelled) {
      const note = `Cancelled the pending ${formatUpdateShort(cancelledWhat)}; nothing was deleted.`;
      effect = effect ? `${note}\n\n${effect}` : note;
    }
    const kfileText = formatKFile(kfile);
    await ws.writeKFile(kfileText);
    const after = await ws.snapshot();
    if (touched.length === 0) touched.push(after.focus);
    const renderInput: Parameters<typeof renderResponse>[0] = { kfile, snapshot: after, touched };
    if (effect !== undefined) renderInput.effect = effect;
    if (question !== undefined) renderInput.question = question;
    if (content !== undefined && !isStoring(kfile.update)) renderInput.answer = content;
    const response = renderResponse(renderInput);
    const result: TurnResult = {
      workspace: ws.dir,
      kfilePath: `${ws.dir}/${KFILE_FILE}`,
      kfile,
      kfileText,
      applied,
      pending,
      cancelled,
      response,
      responseText: formatResponse(response),
      tree: renderTree(toTree(after)),
      warnings: skippedWarnings(after),
    };
    if (input.request !== undefined) result.request = input.request;
    if (reason !== undefined && kfile.clarify !== "none") result.reason = reason;
    return result;
  });
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

function formatUpdateShort(update: UpdateAction | undefined): string {
  if (!update) return "operation";
  return formatKFile({ response: "acknowledge", update, clarify: "none" })
    .split("\n")[1]!
    .replace("UpdateAction: ", "");
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

/** Checks an UpdateAction against the K-folder and prepares it; no change is made here. */
function plan(snap: Snapshot, update: UpdateAction, content: string | undefined): Check {
  if (update.action === "none") {
    return { touched: [], confirm: "", run: async () => "" };
  }
  if (update.args === undefined) {
    return {
      clarify: "ask-target",
      reason: `the arguments are missing: ${UPDATE_SYNTAX[update.action]}`,
    };
  }
  const find = (ref: FolderRef): Folder | { reason: string } => {
    const r = resolveFolder(snap.root, ref);
    if (r.kind === "found") return r.folder;
    // "no folder [blog]" would be a puzzle when blog is on disk: say why it is not usable.
    const last = ref.segments[ref.segments.length - 1];
    const skipped = snap.skipped.find((s) => s.path.split("/").pop() === last);
    if (r.kind === "missing" && skipped) {
      return { reason: `${formatFolderRef({ segments: [last!] })} ${skipped.reason}` };
    }
    return { reason: r.reason };
  };
  const target = (f: Folder | { reason: string }) =>
    "reason" in f ? { clarify: "ask-target" as const, reason: f.reason } : undefined;
  const name = (f: Folder, file?: string) =>
    file === undefined ? displayPath(f.path) : `${displayPath(f.path)}/${file}`;
  const a = update.args as Record<string, unknown>;
  const folder = find(a.folder as FolderRef);
  switch (update.action) {
    case "create-folder": {
      const segs = (a.folder as FolderRef).segments;
      const newName = segs[segs.length - 1]!;
      const parent: Folder | { reason: string } =
        segs.length === 1
          ? findByPath(snap.root, snap.focus)!
          : find({ segments: segs.slice(0, -1) });
      if ("reason" in parent)
        return { clarify: "ask-target", reason: `the parent: ${parent.reason}` };
      if (parent.children.some((c) => c.name === newName)) {
        return {
          clarify: "ask-target",
          reason: `${name(parent)} already has a folder named ${newName}`,
        };
      }
      const description = update.args.description;
      return {
        touched: [[...parent.path, newName]],
        confirm: "",
        run: async (ws) => {
          await ws.createFolder(parent.path, newName, description);
          return `Created ${displayPath([...parent.path, newName])}${description ? ` — ${description}` : ""}.`;
        },
      };
    }
    case "focus-folder": {
      if ("reason" in folder) return target(folder)!;
      return {
        touched: [folder.path],
        confirm: "",
        run: async (ws) => {
          await ws.setFocus(folder.path);
          return `Focus moved to ${name(folder)}.`;
        },
      };
    }
    case "rename-folder": {
      if ("reason" in folder) return target(folder)!;
      const { newName, description } = update.args;
      const isRoot = folder.path.length === 0;
      if (isRoot && newName !== "root")
        return {
          clarify: "ask-target",
          reason: "the root keeps its name; only its description can change",
        };
      const parent = folder.path.slice(0, -1);
      const siblings = findByPath(snap.root, parent)!.children;
      if (!isRoot && newName !== folder.name && siblings.some((c) => c.name === newName)) {
        return {
          clarify: "ask-target",
          reason: `${displayPath(parent)} already has a folder named ${newName}`,
        };
      }
      const to = isRoot ? [] : [...parent, newName];
      return {
        touched: [to],
        confirm: "",
        run: async (ws, focus) => {
          if (!isRoot && newName !== folder.name) await ws.relocateFolder(folder.path, to, focus);
          if (description !== undefined) await ws.setDescription(to, description);
          const d = description !== undefined ? ` — ${description}` : "";
          return `Renamed ${name(folder)} to ${displayPath(to)}${d}.`;
        },
      };
    }
    case "move-folder": {
      if ("reason" in folder) return target(folder)!;
      const dest = find(update.args.to);
      if ("reason" in dest)
        return { clarify: "ask-target", reason: `the destination: ${dest.reason}` };
      if (folder.path.length === 0)
        return { clarify: "ask-target", reason: "the root cannot be moved" };
      if (isInside(dest.path, folder.path)) {
        return {
          clarify: "ask-target",
          reason: `${name(dest)} is inside ${name(folder)}; a folder cannot move into itself`,
        };
      }
      if (dest.children.some((c) => c.name === folder.name)) {
        return {
          clarify: "ask-target",
          reason: `${name(dest)} already has a folder named ${folder.name}`,
        };
      }
      const to = [...dest.path, folder.name];
      return {
        touched: [to],
        confirm: "",
        run: async (ws, focus) => {
          await ws.relocateFolder(folder.path, to, focus);
          return `Moved ${name(folder)} to ${displayPath(to)}.`;
        },
      };
    }
    case "delete-folder": {
      if ("reason" in folder) return target(folder)!;
      if (folder.path.length === 0)
        return { clarify: "ask-target", reason: "the root cannot be deleted" };
      const inside = allCounts(folder);
      return {
        touched: [folder.path.slice(0, -1)],
        confirm: `Delete ${name(folder)} with its ${inside}?`,
        run: async (ws, focus) => {
          await ws.deleteFolder(folder.path, focus);
          return `Deleted ${name(folder)} (${inside}).`;
        },
      };
    }
    case "store-file": {
      if ("reason" in folder) return target(folder)!;
      const { file } = update.args;
      if (content === undefined || content.trim() === "") {
        return { clarify: "ask-content", reason: `there is nothing to store in ${file}` };
      }
      const text = content.endsWith("\n") ? content : `${content}\n`;
      const exists = folder.files.includes(file);
      return {
        touched: [folder.path],
        confirm: `Replace the existing ${name(folder, file)}?`,
        overwrites: exists,
        run: async (ws) => {
          await ws.writeFile(folder.path, file, text);
          return `${exists ? "Replaced" : "Stored"} ${name(folder, file)} (${Buffer.byteLength(text)} bytes).`;
        },
      };
    }
    case "edit-file": {
      if ("reason" in folder) return target(folder)!;
      const { file, mode } = update.args;
      if (!folder.files.includes(file))
        return { clarify: "ask-target", reason: `there is no file ${name(folder, file)}` };
      if (content === undefined || content.trim() === "") {
        return { clarify: "ask-content", reason: `the new text for ${file} is missing` };
      }
      const text = content.endsWith("\n") ? content : `${content}\n`;
      return {
        touched: [folder.path],
        confirm: "",
        run: async (ws) => {
          const old = mode === "append" ? await ws.readFile(folder.path, file) : "";
          const joined = old === "" || old.endsWith("\n") ? old + text : `${old}\n${text}`;
          await ws.writeFile(folder.path, file, joined);
          return `${mode === "append" ? "Appended to" : "Replaced the text of"} ${name(folder, file)} (${Buffer.byteLength(joined)} bytes).`;
        },
      };
    }
    case "rename-file":
    case "move-file":
    case "delete-file": {
      if ("reason" in folder) return target(folder)!;
      const { file } = update.args;
      if (!folder.files.includes(file))
        return { clarify: "ask-target", reason: `there is no file ${name(folder, file)}` };
      if (update.action === "delete-file") {
        return {
          touched: [folder.path],
          confirm: `Delete ${name(folder, file)}?`,
          run: async (ws) => {
            await ws.deleteFile(folder.path, file);
            return `Deleted ${name(folder, file)}.`;
          },
        };
      }
      let dest: Folder = folder;
      let newFile = file;
      if (update.action === "move-file") {
        const d = find(update.args.to);
        if ("reason" in d) return { clarify: "ask-target", reason: `the destination: ${d.reason}` };
        dest = d;
      } else {
        newFile = update.args.newFile;
      }
      if (dest.files.includes(newFile) || dest.children.some((c) => c.name === newFile)) {
        return { clarify: "ask-target", reason: `${name(dest, newFile)} already exists` };
      }
      return {
        touched: [dest.path],
        confirm: "",
        run: async (ws) => {
          await ws.renameFile(folder.path, file, dest.path, newFile);
          return `${update.action === "move-file" ? "Moved" : "Renamed"} ${name(folder, file)} to ${name(dest, newFile)}.`;
        },
      };
    }
  }
}

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
  const folders: Array<{ path: string; description: string; files: string[] }> = [];
  const walk = (f: Folder) => {
    folders.push({ path: displayPath(f.path), description: f.description, files: f.files });
    for (const c of f.children) walk(c);
  };
  walk(snapshot.root);
  const payload = {
    request,
    tree: renderTree(toTree(snapshot)),
    focus: displayPath(snapshot.focus),
    folders,
    syntax: UPDATE_SYNTAX,
  };
  const { code, stdout, stderr, timedOut } = await new Promise<{
    code: number | null;
    stdout: string;
    stderr: string;
    timedOut: boolean;
  }>((resolve, reject) => {
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
    child.stdin.end(`${JSON.stringify(payload)}\n`);
  });
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
