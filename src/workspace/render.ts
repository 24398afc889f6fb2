import { type KFile, LABEL_MEANINGS } from "../core/kfile/index.js";
import { displayPath, type Folder, findByPath, type Snapshot } from "./kfolder.js";

/** The seed's Response = (Context, Concepts, Contents). */
export interface Response {
  /** The current working area and its boundary. */
  context: string;
  /** Only the concepts this turn needed: its labels and the folders it touched. */
  concepts: string[];
  /** The result: what changed, the question to answer, or the answer given with the turn. */
  contents: string;
}

export interface RenderInput {
  kfile: KFile;
  /** The K-folder after the turn. */
  snapshot: Snapshot;
  /** What the update did, in one sentence (absent when nothing changed). */
  effect?: string;
  /** The question a clarification asks. */
  question?: string;
  /** Folders the turn touched, as paths from the root. */
  touched: string[][];
  /** The answer text supplied with the turn (by an agent), if any. */
  answer?: string;
  request?: string;
}

/** Step 3 of the protocol: KFile → Render → Response. Deterministic; no model involved. */
export function renderResponse(input: RenderInput): Response {
  const focus = findByPath(input.snapshot.root, input.snapshot.focus)!;
  return {
    context: contextOf(focus),
    concepts: conceptsOf(input),
    contents: contentsOf(input, focus),
  };
}

function contextOf(focus: Folder): string {
  const desc = focus.description === "" ? "" : ` — ${focus.description}`;
  return (
    `${displayPath(focus.path)}${desc} (focus): this turn works inside this folder ` +
    `(${count(focus.children.length, "subfolder")}, ${count(focus.files.length, "file")}).`
  );
}

/** The turn's labels with their meanings, then each folder it touched with its description. */
function conceptsOf({ kfile, snapshot, touched }: RenderInput): string[] {
  const concepts: string[] = [`${kfile.response}: ${LABEL_MEANINGS[kfile.response]}`];
  if (kfile.update.action !== "none") {
    concepts.push(`${kfile.update.action}: ${LABEL_MEANINGS[kfile.update.action]}`);
  }
  if (kfile.clarify !== "none") concepts.push(`${kfile.clarify}: ${LABEL_MEANINGS[kfile.clarify]}`);
  const seen = new Set<string>();
  for (const path of touched) {
    const key = path.join("/");
    const folder = findByPath(snapshot.root, path);
    if (!folder || seen.has(key)) continue;
    seen.add(key);
    concepts.push(`${displayPath(path)}: ${folder.description || "(no description)"}`);
  }
  return concepts;
}

function contentsOf(input: RenderInput, focus: Folder): string {
  const { kfile } = input;
  const parts: string[] = [];
  if (input.effect) parts.push(input.effect);
  if (input.question) parts.push(input.question);
  if (kfile.clarify === "none" && kfile.response !== "acknowledge") {
    parts.push(answerOf(input, focus));
  }
  if (parts.length === 0) parts.push("Nothing changed.");
  return parts.join("\n\n");
}

/** The answer that came with the turn, else where the agent is to write it. */
function answerOf({ kfile, answer }: RenderInput, focus: Folder): string {
  if (answer !== undefined && answer.trim() !== "") return answer.trim();
  const files = focus.files.length > 0 ? focus.files.join(", ") : "no files";
  return (
    `No answer text came with this turn: the workspace engine interprets and updates, the ` +
    `answer (${kfile.response}) is written by an agent in the context above ` +
    `(material in scope: ${files}).`
  );
}

export function formatResponse(r: Response): string {
  return (
    `Context: ${r.context}\nConcepts:\n${r.concepts.map((c) => `- ${c}`).join("\n")}\n` +
    `Contents:\n${r.contents}\n`
  );
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}
