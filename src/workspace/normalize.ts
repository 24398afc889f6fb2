import {
  type ClarifyAction,
  type FolderRef,
  type KFile,
  type ResponseAction,
  ROOT_NAME,
  type UpdateAction,
  type UpdateLabel,
  validateDescription,
  validateFileName,
  validateFolderName,
} from "../core/kfile/index.js";
import { slug } from "../core/names.js";
import { allFolders, type Folder, findByPath, type Snapshot, shortRef } from "./kfolder.js";

/**
 * The rule-based normaliser: Request → K-file, deterministic, no model. docs/workspace.md lists
 * the phrasings it understands; in short:
 *
 * 1. The request is split at its first `: ` or newline into the instruction and the inline
 *    content (what `store-file`/`edit-file` write, unless the turn brings its own content).
 * 2. The instruction is cut into clauses at `and`, `then`, `;`; a clause that does not start
 *    with a known verb (after fillers such as "please", "can you") belongs to the one before.
 * 3. The first clause whose verb changes the K-folder gives the UpdateAction; a clause with a
 *    discussion, proof or export verb gives the ResponseAction (else `acknowledge` when there is
 *    an update, else `discuss` for a question or a longer statement, else `ask-goal`).
 * 4. Targets are taken from the words after the verb; a folder is named by its short name, a
 *    path `a/b`, or `[a]/[b]`; a file by a name with a known extension (`notes.md`). A target
 *    that does not exist or that names several folders gives `ask-target` — never a guess.
 */
export interface Normalized {
  kfile: KFile;
  /** The inline content of the request (after `: ` or the first newline), if any. */
  content?: string;
  /** Why a clarification is asked, in words for the response. */
  reason?: string;
}

const FILLERS = new Set(
  "please pls kindly now ok okay so then also just can could would will you we i let's lets let us want to like need shall".split(
    " ",
  ),
);
/**
 * The extensions that make a word a file name. One list, so that a word the normaliser would take
 * for a file (`notes.py`) is also reported as an invalid name when it is path-like (`../x.py`).
 */
const FILE_EXTENSIONS =
  "md markdown txt text json csv tsv yaml yml html htm tex pdf py ts js org rst xml toml ini log".split(
    " ",
  );
const EXTENSION = `\\.(?:${FILE_EXTENSIONS.join("|")})$`;
const FILE_TOKEN = new RegExp(`^[A-Za-z0-9][A-Za-z0-9_-]*(?:\\.[A-Za-z0-9_-]+)*${EXTENSION}`, "i");
/** Ends like a file name, whatever comes before (`../x.md`, `a/b.py`). */
const LOOKS_LIKE_FILE = new RegExp(EXTENSION, "i");
const SKIP = new Set(
  "the a an my our this that these those folder folders directory dir subfolder sub-folder area section workspace-folder called named titled on to into in onto inside back over file document new".split(
    " ",
  ),
);

/** A verb that changes the K-folder; each has its planner in {@link PLANNERS}. */
type UpdateVerb =
  | "create"
  | "focus"
  | "rename"
  | "describe-as"
  | "move"
  | "delete"
  | "store"
  | "edit";
type Verb = UpdateVerb | "prove" | "export" | "discuss";

const VERBS: Array<[RegExp, Verb]> = [
  [
    /^(?:(?:create|make|start|set up|setup|add|open (?:up )?a new)\b(?=.*\b(?:folder|directory|dir|subfolder|sub-folder)s?\b)|mkdir\b|new (?:sub)?folder\b)/,
    "create",
  ],
  [
    /^(?:focus|switch|open|go|navigate|enter|cd|work (?:on|in)|jump|change (?:the )?focus|select)\b/,
    "focus",
  ],
  [
    /^(?:describe (?:the )?\S+(?: folder)? as|(?:change|set|update) the description)\b/,
    "describe-as",
  ],
  [/^(?:rename|retitle)\b/, "rename"],
  [/^(?:move|put|relocate|nest|transfer)\b/, "move"],
  [/^(?:delete|remove|erase|drop|trash|rm|discard|destroy|get rid of)\b/, "delete"],
  [/^(?:store|save|record|note down|write down|remember|file)\b/, "store"],
  [
    /^(?:edit|update|append|add|modify|change|revise|amend|rewrite|replace|fix|correct|extend)\b/,
    "edit",
  ],
  [/^(?:prove|show that|demonstrate|derive|verify that)\b/, "prove"],
  [
    /^(?:export|generate|produce|draft|create|compile|render|package|publish|write (?:a|an|the|up)\b)/,
    "export",
  ],
  [
    /^(?:summari[sz]e|explain|discuss|compare|analy[sz]e|describe|tell|what|why|how|who|when|where|which|is|are|can|does|do|should|list|show|review|think|brainstorm|develop|elaborate|outline|answer|help|give|clarify|continue|consider|evaluate|define|sketch|shorten|expand|condense|simplify|rephrase|make it|translate|critique|check)\b/,
    "discuss",
  ],
];

interface Clause {
  verb: Verb;
  /** The clause from its verb on, original case, quotes replaced by placeholders. */
  text: string;
  /** Words after the verb. */
  rest: string[];
  /** No known verb starts it: a statement or a question. */
  unknown?: boolean;
}

type UpdateClause = Clause & { verb: UpdateVerb };

function changesFolder(c: Clause): c is UpdateClause {
  return Object.hasOwn(PLANNERS, c.verb);
}

export function splitRequest(request: string): { instruction: string; content?: string } {
  const m = /:\s|\n/.exec(request);
  if (!m) return { instruction: request.trim() };
  const instruction = request.slice(0, m.index).trim();
  const content = request.slice(m.index + m[0].length).trim();
  return content === "" ? { instruction } : { instruction, content };
}

export function normalize(request: string, snapshot: Snapshot): Normalized {
  const { instruction, content } = splitRequest(request);
  const quotes: string[] = [];
  const masked = instruction.replace(/"([^"]*)"|“([^”]*)”/g, (_m, a, b) => {
    quotes.push((a ?? b) as string);
    return ` \u0000${quotes.length - 1} `;
  });
  const clauses = toClauses(masked);
  const result = decide(clauses, instruction, snapshot, quotes, content);
  if (content !== undefined) result.content = content;
  return result;
}

function toClauses(text: string): Clause[] {
  const parts = text
    .split(/\s*(?:;|,?\s+and then\s+|,?\s+then\s+|,?\s+and\s+|,\s+)\s*/i)
    .filter((p) => p.trim() !== "");
  const clauses: Clause[] = [];
  for (const part of parts) {
    const words = part
      .trim()
      .replace(/[.!?]+$/, "")
      .split(/\s+/);
    while (words.length > 1 && FILLERS.has(words[0]!.toLowerCase().replace(/[,']/g, ""))) {
      words.shift();
    }
    const body = words.join(" ");
    const lower = body.toLowerCase();
    const hit = VERBS.find(([re]) => re.test(lower));
    if (hit) {
      const verbLen = (hit[0].exec(lower) as RegExpExecArray)[0].split(/\s+/).length;
      clauses.push({ verb: hit[1], text: body, rest: words.slice(verbLen) });
    } else if (clauses.length > 0) {
      const prev = clauses[clauses.length - 1]!;
      prev.text += ` and ${body}`;
      prev.rest.push("and", ...words);
    } else {
      clauses.push({ verb: "discuss", text: body, rest: words, unknown: true });
    }
  }
  return clauses;
}

type UpdatePlan = { update: UpdateAction; clarify: ClarifyAction; reason?: string };

function decide(
  clauses: Clause[],
  instruction: string,
  snapshot: Snapshot,
  quotes: string[],
  content: string | undefined,
): Normalized {
  const ask = (clarify: ClarifyAction, reason: string): Normalized => ({
    kfile: { response: "discuss", update: { action: "none" }, clarify },
    reason,
  });
  if (instruction.replace(/[\s?.!]/g, "") === "" && content === undefined) {
    return ask("ask-goal", "the request is empty");
  }
  const known = clauses.some((c) => !c.unknown);
  const isQuestion = /\?\s*$/.test(instruction);
  if (!known && !isQuestion && instruction.split(/\s+/).length <= 3) {
    return ask(
      "ask-goal",
      `"${instruction}" does not say what to do (discuss, create, focus, store, …)`,
    );
  }
  const plan = planUpdates(clauses.filter(changesFolder), { snapshot, quotes, content });
  const first = clauses.find((c) => !changesFolder(c));
  const response = first
    ? talkResponse(first)
    : plan.update.action === "none"
      ? "discuss"
      : "acknowledge";
  const talkClarify = first ? responseClarify(first) : undefined;
  if (plan.clarify !== "none") {
    return {
      kfile: { response, update: plan.update, clarify: plan.clarify },
      ...(plan.reason ? { reason: plan.reason } : {}),
    };
  }
  if (talkClarify) {
    return {
      kfile: { response, update: plan.update, clarify: talkClarify.clarify },
      reason: talkClarify.reason,
    };
  }
  return { kfile: { response, update: plan.update, clarify: "none" } };
}

/** The first update clause gives the UpdateAction; a second one is asked for on its own. */
function planUpdates(updates: UpdateClause[], ctx: Ctx): UpdatePlan {
  const first = updates[0];
  if (!first) return { update: { action: "none" }, clarify: "none" };
  const plan = PLANNERS[first.verb](first, ctx);
  if (updates.length === 1 || plan.clarify !== "none") return plan;
  return {
    update: plan.update,
    clarify: "ask-goal",
    reason: `one turn makes one change to the K-folder, and this request asks for ${updates.length} (${updates.map((u) => u.verb).join(", ")}): ask for them one at a time`,
  };
}

function talkResponse(c: Clause): ResponseAction {
  return c.verb === "prove" ? "prove" : c.verb === "export" ? "export" : "discuss";
}

const FORMATS =
  /\b(markdown|md|pdf|html|json|csv|table|list|slides?|article|report|document|summary|outline|text|latex|tex|docx|yaml|essay|post|letter|email|readme|spec|checklist|diagram)\b/i;

function responseClarify(c: Clause): { clarify: ClarifyAction; reason: string } | undefined {
  const rest = c.rest.map((w) => w.toLowerCase().replace(/[^a-z0-9.]/g, "")).filter((w) => w);
  const meaningful = rest.filter(
    (w) => !["it", "this", "that", "the", "a", "an", "something"].includes(w),
  );
  if (c.verb === "prove" && meaningful.length === 0) {
    return { clarify: "ask-content", reason: "there is no proposition to prove" };
  }
  if (
    c.verb === "export" &&
    !FORMATS.test(c.text) &&
    !c.rest.some((w) => FILE_TOKEN.test(clean(w)))
  ) {
    return {
      clarify: "ask-format",
      reason: "the form of the artifact is not given (markdown, html, json, a report, slides, …)",
    };
  }
  const lower = c.text.toLowerCase();
  if (c.verb === "discuss") {
    if (/^compare\b/.test(lower) && !/\b(and|with|to|vs|versus|against)\b/.test(lower)) {
      return {
        clarify: "ask-content",
        reason: "a comparison needs at least two things to compare",
      };
    }
    if (
      /\b(shorter|longer|briefer|more concise|shorten|condense|expand|more detail(?:ed)?)\b/.test(
        lower,
      ) &&
      !/\d/.test(lower)
    ) {
      return {
        clarify: "ask-constraint",
        reason: "the limit is not given (for example: in 100 words, to 3 points)",
      };
    }
    if (
      meaningful.length === 0 &&
      /^(explain|describe|define|clarify|analy[sz]e|discuss|answer)$/.test(lower)
    ) {
      return { clarify: "ask-content", reason: `nothing to ${lower} was named` };
    }
  }
  return undefined;
}

interface Ctx {
  snapshot: Snapshot;
  quotes: string[];
  content: string | undefined;
}

function clean(word: string): string {
  return word.replace(/^["'`([{]+|["'`)\]},.!?;:]+$/g, "");
}

/** A word naming an existing folder: `blog`, `a/b`, `[a]/[b]`, `root`. */
type FolderHit =
  | { kind: "found"; ref: FolderRef; folder: Folder }
  | { kind: "missing"; word: string }
  | { kind: "ambiguous"; word: string; ref: FolderRef; count: number }
  | { kind: "none" };

function lookupFolder(word: string, ctx: Ctx): FolderHit {
  const raw = word.replace(/^\[|\]$/g, "");
  const lower = raw.toLowerCase();
  const root = ctx.snapshot.root;
  if (["root", "top", "home", "workspace", "top-level"].includes(lower)) {
    return { kind: "found", ref: { segments: [ROOT_NAME] }, folder: root };
  }
  if (["parent", "up"].includes(lower)) {
    const path = ctx.snapshot.focus.slice(0, -1);
    return { kind: "found", ref: shortRef(root, path), folder: findByPath(root, path)! };
  }
  const segs = raw
    .split("/")
    .map((s) => s.replace(/^\[|\]$/g, ""))
    .filter((s) => s !== "");
  if (segs.length === 0) return { kind: "none" };
  const starts =
    segs[0]!.toLowerCase() === ROOT_NAME
      ? [root]
      : allFolders(root).filter(
          (f) => f.path.length > 0 && f.name.toLowerCase() === segs[0]!.toLowerCase(),
        );
  const ends: Folder[] = [];
  for (const s of starts) {
    let at: Folder | undefined = s;
    for (const seg of segs.slice(1))
      at = at?.children.find((c) => c.name.toLowerCase() === seg.toLowerCase());
    if (at) ends.push(at);
  }
  if (ends.length === 1)
    return { kind: "found", ref: shortRef(root, ends[0]!.path), folder: ends[0]! };
  if (ends.length === 0) return { kind: "missing", word: raw };
  const segments = segs.length === 1 ? [ends[0]!.name] : segs;
  return { kind: "ambiguous", word: raw, ref: { segments }, count: ends.length };
}

/** The first word after `from`, skipping articles and "folder": the candidate name. */
function candidate(
  words: string[],
  from = 0,
  stop: RegExp = STOP,
): { word?: string; index: number } {
  for (let i = from; i < words.length; i++) {
    const w = clean(words[i]!);
    const lower = w.toLowerCase();
    if (stop.test(lower)) return { index: i };
    if (w === "" || SKIP.has(lower) || FILLERS.has(lower)) continue;
    return { word: w, index: i };
  }
  return { index: words.length };
}

const NEVER = /(?!)/;
const STOP = /^(for|about|with|described|description|and|as)$/;
const PLACE = /^(in|inside|into|under|within|to|onto|from|at)$/;

/** The folder named after one of `preps` (e.g. "in blog", "to the protocol folder"). */
function folderAfter(words: string[], preps: RegExp, ctx: Ctx): { hit: FolderHit; index: number } {
  for (let i = 0; i < words.length; i++) {
    if (preps.test(clean(words[i]!).toLowerCase())) {
      const c = candidate(words, i + 1, /^(for|about|with|described|and|as|from|to|into)$/);
      if (c.word !== undefined && !FILE_TOKEN.test(c.word))
        return { hit: lookupFolder(c.word, ctx), index: i };
    }
  }
  return { hit: { kind: "none" }, index: -1 };
}

function missingReason(hit: FolderHit): string {
  if (hit.kind === "missing") return `there is no folder named ${hit.word}`;
  if (hit.kind === "ambiguous")
    return `${hit.count} folders are named ${hit.word}; name one by its path, like protocol/${hit.word}`;
  return "no folder is named";
}

function clarifyTarget(action: UpdateLabel, reason: string, update?: UpdateAction): UpdatePlan {
  return { update: update ?? { action }, clarify: "ask-target", reason };
}

/** The message of `check`'s error for `value`, or undefined when `value` passes. */
function invalid(check: (value: string) => unknown, value: string): string | undefined {
  try {
    check(value);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** A word without its punctuation, lower case. */
function lower(word: string): string {
  return clean(word).toLowerCase();
}

/** The focus folder, where a clause that names no folder acts. */
function focusOf(ctx: Ctx): { ref: FolderRef; folder: Folder } {
  const { root, focus } = ctx.snapshot;
  return { ref: shortRef(root, focus), folder: findByPath(root, focus)! };
}

function quoted(word: string | undefined, ctx: Ctx): string | undefined {
  const m = word === undefined ? null : /^\u0000(\d+)$/.exec(word);
  return m ? ctx.quotes[Number(m[1])] : undefined;
}

function descriptionOf(words: string[], ctx: Ctx): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const q = quoted(words[i], ctx);
    if (
      q !== undefined &&
      i > 0 &&
      /^(for|about|described|description|as|-)$/.test(clean(words[i - 1]!).toLowerCase())
    )
      return q;
  }
  const text = words.map((w) => quoted(w, ctx) ?? w).join(" ");
  const m = /\b(?:for|about|described as|with (?:the )?description|description)\s+(.+)$/i.exec(
    text,
  );
  if (!m) {
    const q = words.map((w) => quoted(w, ctx)).find((x) => x !== undefined);
    return q;
  }
  return m[1]!
    .replace(/^(?:the|a|an)\s+/i, "")
    .replace(/[.!?]+$/, "")
    .trim();
}

type Planner = (c: UpdateClause, ctx: Ctx) => UpdatePlan;

function planFocus(c: Clause, ctx: Ctx): UpdatePlan {
  const cand = candidate(c.rest);
  if (cand.word === undefined)
    return clarifyTarget("focus-folder", "no folder to focus on was named");
  const hit = lookupFolder(quoted(cand.word, ctx) ?? cand.word, ctx);
  if (hit.kind === "found")
    return { update: { action: "focus-folder", args: { folder: hit.ref } }, clarify: "none" };
  const update: UpdateAction | undefined =
    hit.kind === "ambiguous" ? { action: "focus-folder", args: { folder: hit.ref } } : undefined;
  return clarifyTarget("focus-folder", missingReason(hit), update);
}

const INSIDE = /^(in|inside|under|within)$/;

function planCreate(c: Clause, ctx: Ctx): UpdatePlan {
  const words = c.rest;
  const placeAt = words.findIndex((w) => INSIDE.test(lower(w)));
  const descAt = words.findIndex((w) => STOP.test(lower(w)) && !/^(and|as)$/.test(lower(w)));
  const nameEnd = [placeAt, descAt]
    .filter((i) => i >= 0)
    .reduce((a, b) => Math.min(a, b), words.length);
  const cand = candidate(words.slice(0, nameEnd), 0, NEVER);
  const name = quoted(cand.word, ctx) ?? cand.word;
  if (name === undefined)
    return clarifyTarget(
      "create-folder",
      "the new folder's name is missing (create a folder NAME)",
    );
  const badName = invalid(validateFolderName, name);
  if (badName) return clarifyTarget("create-folder", badName);
  const parent = createParent(words, placeAt, descAt, ctx);
  if ("reason" in parent) return clarifyTarget("create-folder", parent.reason);
  const description = descriptionOf(descAt >= 0 ? words.slice(descAt) : words, ctx) ?? "";
  const badDescription = invalid(validateDescription, description);
  if (badDescription) return clarifyTarget("create-folder", badDescription);
  const update: UpdateAction = {
    action: "create-folder",
    args: { folder: { segments: [...parent.ref.segments, name] }, description },
  };
  if (parent.folder.children.some((f) => f.name === name))
    return clarifyTarget("create-folder", `a folder named ${name} already exists there`, update);
  return { update, clarify: "none" };
}

/** The parent a create names before its description ("in blog"), else the focus. */
function createParent(
  words: string[],
  placeAt: number,
  descAt: number,
  ctx: Ctx,
): { ref: FolderRef; folder: Folder } | { reason: string } {
  if (placeAt < 0 || (descAt >= 0 && placeAt >= descAt)) return focusOf(ctx);
  const p = folderAfter(words.slice(placeAt, descAt >= 0 ? descAt : undefined), INSIDE, ctx);
  if (p.hit.kind !== "found") return { reason: `the parent folder: ${missingReason(p.hit)}` };
  return { ref: p.hit.ref, folder: p.hit.folder };
}

const DESCRIBE_AS = /^describe\s+(?:the\s+)?(\S+?)(?:\s+folder)?\s+as\s+(.+)$/i;
const SET_DESCRIPTION =
  /^(?:change|set|update)\s+the\s+description\s+of\s+(?:the\s+)?(\S+?)(?:\s+folder)?\s+(?:to|as)\s+(.+)$/i;

function planDescribe(c: Clause, ctx: Ctx): UpdatePlan {
  const m = DESCRIBE_AS.exec(c.text) ?? SET_DESCRIPTION.exec(c.text);
  if (!m) return clarifyTarget("rename-folder", "say: describe FOLDER as DESCRIPTION");
  const hit = lookupFolder(m[1]!, ctx);
  if (hit.kind !== "found") return clarifyTarget("rename-folder", missingReason(hit));
  const description = (quoted(m[2]!.trim(), ctx) ?? m[2]!).trim();
  const bad = invalid(validateDescription, description);
  if (bad) return clarifyTarget("rename-folder", bad);
  const newName = hit.folder.path.length === 0 ? ROOT_NAME : hit.folder.name;
  return {
    update: { action: "rename-folder", args: { folder: hit.ref, newName, description } },
    clarify: "none",
  };
}

function planRename(c: Clause, ctx: Ctx): UpdatePlan {
  const words = c.rest;
  const toAt = words.findIndex((w) => /^(to|as|into)$/.test(lower(w)));
  const cand = candidate(words.slice(0, toAt >= 0 ? toAt : undefined), 0, NEVER);
  const newCand = toAt >= 0 ? candidate(words, toAt + 1, STOP) : { word: undefined, index: -1 };
  const newWord = quoted(newCand.word, ctx) ?? newCand.word;
  if (cand.word !== undefined && FILE_TOKEN.test(cand.word))
    return planRenameFile(cand.word, words, newWord, ctx);
  if (cand.word === undefined)
    return clarifyTarget("rename-folder", "the folder to rename is not named");
  return planRenameFolder(cand.word, newWord, words.slice(newCand.index + 1), ctx);
}

function planRenameFile(
  file: string,
  words: string[],
  newFile: string | undefined,
  ctx: Ctx,
): UpdatePlan {
  const loc = locateFile(file, words, ctx);
  if ("reason" in loc) return clarifyTarget("rename-file", loc.reason);
  if (newFile === undefined)
    return clarifyTarget("rename-file", "the new file name is missing (rename A.md to B.md)");
  const bad = invalid(validateFileName, newFile);
  if (bad) return clarifyTarget("rename-file", bad);
  return {
    update: { action: "rename-file", args: { folder: loc.ref, file, newFile } },
    clarify: "none",
  };
}

/** `rest` is what follows the new name: it may hold a new description. */
function planRenameFolder(
  word: string,
  newName: string | undefined,
  rest: string[],
  ctx: Ctx,
): UpdatePlan {
  const hit = lookupFolder(word, ctx);
  if (hit.kind !== "found") return clarifyTarget("rename-folder", missingReason(hit));
  if (newName === undefined)
    return clarifyTarget("rename-folder", "the new name is missing (rename OLD to NEW)");
  const bad = invalid(validateFolderName, newName);
  if (bad) return clarifyTarget("rename-folder", bad);
  const description = descriptionOf(rest, ctx);
  const args =
    description === undefined
      ? { folder: hit.ref, newName }
      : { folder: hit.ref, newName, description };
  return { update: { action: "rename-folder", args }, clarify: "none" };
}

function planMove(c: Clause, ctx: Ctx): UpdatePlan {
  const words = c.rest;
  const toAt = words.findIndex((w) => /^(to|into|under|inside|onto)$/.test(lower(w)));
  const objectWords = words.slice(0, toAt >= 0 ? toAt : undefined);
  const cand = candidate(objectWords, 0, /^(from)$/);
  const dest = toAt >= 0 ? candidate(words, toAt + 1, STOP).word : undefined;
  const destHit: FolderHit = dest === undefined ? { kind: "none" } : lookupFolder(dest, ctx);
  if (cand.word !== undefined && FILE_TOKEN.test(cand.word))
    return planMoveFile(cand.word, objectWords, destHit, ctx);
  if (cand.word === undefined)
    return clarifyTarget("move-folder", "the folder or file to move is not named");
  return planMoveFolder(cand.word, destHit, ctx);
}

function planMoveFile(file: string, words: string[], dest: FolderHit, ctx: Ctx): UpdatePlan {
  const loc = locateFile(file, words, ctx);
  if ("reason" in loc) return clarifyTarget("move-file", loc.reason);
  if (dest.kind !== "found")
    return clarifyTarget("move-file", `the destination: ${missingReason(dest)}`);
  return {
    update: { action: "move-file", args: { folder: loc.ref, file, to: dest.ref } },
    clarify: "none",
  };
}

function planMoveFolder(word: string, dest: FolderHit, ctx: Ctx): UpdatePlan {
  const hit = lookupFolder(word, ctx);
  if (hit.kind !== "found") return clarifyTarget("move-folder", missingReason(hit));
  if (dest.kind !== "found")
    return clarifyTarget("move-folder", `the destination: ${missingReason(dest)}`);
  return {
    update: { action: "move-folder", args: { folder: hit.ref, to: dest.ref } },
    clarify: "none",
  };
}

function planDelete(c: Clause, ctx: Ctx): UpdatePlan {
  const cand = candidate(c.rest, 0, /^(from|in|inside)$/);
  if (cand.word !== undefined && FILE_TOKEN.test(cand.word))
    return planDeleteFile(cand.word, c.rest, ctx);
  if (cand.word === undefined) return clarifyTarget("delete-folder", "nothing to delete was named");
  return planDeleteFolder(cand.word, ctx);
}

function planDeleteFile(file: string, words: string[], ctx: Ctx): UpdatePlan {
  const loc = locateFile(file, words, ctx);
  if ("reason" in loc) return clarifyTarget("delete-file", loc.reason);
  return {
    update: { action: "delete-file", args: { folder: loc.ref, file } },
    clarify: "ask-confirmation",
  };
}

function planDeleteFolder(word: string, ctx: Ctx): UpdatePlan {
  const hit = lookupFolder(word, ctx);
  if (hit.kind === "ambiguous") {
    return clarifyTarget("delete-folder", missingReason(hit), {
      action: "delete-folder",
      args: { folder: hit.ref },
    });
  }
  if (hit.kind !== "found") return clarifyTarget("delete-folder", missingReason(hit));
  if (hit.folder.path.length === 0)
    return clarifyTarget("delete-folder", "the root cannot be deleted");
  return {
    update: { action: "delete-folder", args: { folder: hit.ref } },
    clarify: "ask-confirmation",
  };
}

function planStore(c: Clause, ctx: Ctx): UpdatePlan {
  const mention = fileMention(c.rest, ctx);
  if (mention.invalid) return clarifyTarget("store-file", mention.invalid);
  const place = folderAfter(c.rest, PLACE, ctx).hit;
  if (place.kind !== "found" && place.kind !== "none")
    return clarifyTarget("store-file", `where to store: ${missingReason(place)}`);
  const folder = place.kind === "found" ? place.ref : focusOf(ctx).ref;
  const content = ctx.content;
  const file =
    mention.file ?? (content === undefined ? undefined : `${slug(content.split("\n")[0]!)}.md`);
  if (file === undefined) {
    return {
      update: { action: "store-file" },
      clarify: "ask-content",
      reason:
        "there is nothing to store: give the text after a colon (save to blog: …) or with --content",
    };
  }
  const bad = invalid(validateFileName, file);
  if (bad) return clarifyTarget("store-file", bad);
  const update: UpdateAction = { action: "store-file", args: { folder, file } };
  if (content === undefined) {
    return {
      update,
      clarify: "ask-content",
      reason: `there is nothing to store in ${file}: give the text after a colon or with --content`,
    };
  }
  return { update, clarify: "none" };
}

function planEdit(c: Clause, ctx: Ctx): UpdatePlan {
  const mode = /^(append|add|extend)\b/.test(c.text.toLowerCase()) ? "append" : "replace";
  const mention = fileMention(c.rest, ctx);
  if (mention.invalid) return clarifyTarget("edit-file", mention.invalid);
  const file = mention.file;
  if (file === undefined)
    return clarifyTarget("edit-file", "the file to edit is not named (like notes.md)");
  const loc = locateFile(file, c.rest, ctx);
  if ("reason" in loc) return clarifyTarget("edit-file", loc.reason);
  const update: UpdateAction = { action: "edit-file", args: { folder: loc.ref, file, mode } };
  if (ctx.content === undefined) {
    return {
      update,
      clarify: "ask-content",
      reason: `the new text for ${file} is missing: give it after a colon or with --content`,
    };
  }
  return { update, clarify: "none" };
}

/** One planner per verb that changes the K-folder: a new verb without one does not compile. */
const PLANNERS: Record<UpdateVerb, Planner> = {
  create: planCreate,
  focus: planFocus,
  rename: planRename,
  "describe-as": planDescribe,
  move: planMove,
  delete: planDelete,
  store: planStore,
  edit: planEdit,
};

/** The file a clause names; a path-like name (`../x.md`, `a/b.md`) is reported as invalid. */
function fileMention(words: string[], ctx: Ctx): { file?: string; invalid?: string } {
  for (const w of words.map((x) => quoted(x, ctx) ?? clean(x))) {
    if (FILE_TOKEN.test(w)) return { file: w };
    const bad = LOOKS_LIKE_FILE.test(w) ? invalid(validateFileName, w) : undefined;
    if (bad) return { invalid: bad };
  }
  return {};
}

/** Finds the folder holding `file`: a folder named in the clause, else the focus, else unique. */
function locateFile(
  file: string,
  words: string[],
  ctx: Ctx,
): { ref: FolderRef } | { reason: string } {
  const root = ctx.snapshot.root;
  const named = folderAfter(words, /^(in|inside|from|within|of)$/, ctx);
  if (named.hit.kind === "found") {
    if (!named.hit.folder.files.includes(file))
      return { reason: `there is no file ${file} in ${named.hit.folder.name}` };
    return { ref: named.hit.ref };
  }
  if (named.hit.kind !== "none") return { reason: missingReason(named.hit) };
  const focus = findByPath(root, ctx.snapshot.focus)!;
  if (focus.files.includes(file)) return { ref: shortRef(root, focus.path) };
  const holders = allFolders(root).filter((f) => f.files.includes(file));
  if (holders.length === 1) return { ref: shortRef(root, holders[0]!.path) };
  if (holders.length === 0) return { reason: `there is no file named ${file} in the workspace` };
  return { reason: `${holders.length} folders hold a file ${file}; say which (… in FOLDER)` };
}
