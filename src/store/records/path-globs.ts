import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import type { Glob } from "./glob.js";

/**
 * Path lease patterns: repository-relative globs, in the grammar of glob.ts, which matches in
 * linear time. Loaded lazily: the hot commands (post, read, wait) never read it. Here, below the
 * features, because a backend reads them in stored records (the folder store: chat.py 0.7's
 * lock records overlap ours); the leases feature's rules are in features/leases/.
 */
type Matcher = (path: string) => boolean;
type Globs = typeof import("./glob.js");

let loaded: Globs | undefined;

async function globs(): Promise<Globs> {
  loaded ??= await import("./glob.js");
  return loaded;
}

export const MAX_PATTERN_LENGTH = 500;

/**
 * A pattern as given, checked and put in one form: `./src/**` is `src/**`, a trailing `/` is
 * dropped. Refused: empty, too long, control characters, backslashes (a Windows path or an
 * escape, either way ambiguous), negation, anything that could name a path outside the
 * repository (an absolute path, a drive letter, a `.` or `..` segment, in any alternative of
 * its braces), and glob syntax that glob.ts does not take.
 */
export async function normalizePattern(pattern: string): Promise<string> {
  const bad = (why: string) =>
    new AgentChatError(
      "INVALID_ARGUMENT",
      `lease pattern ${JSON.stringify(pattern.slice(0, 100))} ${why}`,
    );
  const p = canonicalPath(pattern.trim());
  if (p === "") throw bad("is empty: name a path of the repository, e.g. 'src/**'");
  if (p.length > MAX_PATTERN_LENGTH) throw bad(`is longer than ${MAX_PATTERN_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(p)) throw bad("holds a control character");
  if (p.includes("\\")) throw bad("holds a backslash: use / between folders");
  if (p.startsWith("!")) throw bad("is negated: reserve what you need, not what you do not");
  const { compileGlob } = await globs();
  try {
    compileGlob(p);
  } catch (err) {
    if (isAgentChatError(err, "INVALID_ARGUMENT")) throw bad(err.message);
    throw err;
  }
  return p;
}

/**
 * chat.py's canonical spelling of a path: empty and `.` segments dropped (`./a//b/./c/` is
 * `a/b/c`, `.` is `''`), so that one path has one spelling in its lock records, which it refuses
 * in any other. An absolute path is left as it is, to be refused.
 */
export function canonicalPath(path: string): string {
  if (path.startsWith("/")) return path;
  return path
    .split("/")
    .filter((segment) => segment !== "" && segment !== ".")
    .join("/");
}

/**
 * What a stored pattern covers. One of ours passed {@link normalizePattern}; but `.leases.json`
 * and chat.py's lock records are written by others, and a pattern there that glob.ts refuses (an
 * extglob planted to stall the guard, a chat.py path such as `docs/a (1).md`, one over the
 * length bound) is never refused here: it is the literal path it spells, matched in linear time.
 */
export async function coverage(pattern: string): Promise<Glob> {
  const { compileGlob, literalPath } = await globs();
  if (pattern.length > MAX_PATTERN_LENGTH) return literalPath(pattern);
  try {
    return compileGlob(pattern);
  } catch (err) {
    if (isAgentChatError(err, "INVALID_ARGUMENT")) return literalPath(pattern);
    throw err;
  }
}

/**
 * What a lease covers. A glob matches as documented (docs/leases.md), dot files included (a
 * reservation of `src/**` covers `src/.env`); a literal covers that path and, when it is a
 * folder, everything under it (`src/store` covers `src/store/fs.ts`).
 */
export async function leaseMatcher(pattern: string): Promise<Matcher> {
  const glob = await coverage(pattern);
  return (path) => glob.covers(path);
}

/**
 * The folders of `pattern` before its first glob character (`src/store` for `src/store/*.ts`;
 * `''` for `*.md`), and whether it is a glob at all (a literal is a path).
 */
export async function staticBase(pattern: string): Promise<{ base: string; isGlob: boolean }> {
  const { base, isGlob } = await coverage(pattern);
  return { base, isGlob };
}

/** One path of a chat.py 0.7 lock record (`locks/<id>.json`), as it spells them. */
export interface LockedPath {
  display_path: string;
  kind: "file" | "directory";
  normalized_path: string;
}

/**
 * The chat.py lock path a pattern of ours reserves: the pattern itself when it is a path, else
 * its static folder (`src/store/**` is `src/store`; `*.md`, with none, is `.`, the channel).
 * chat.py refuses a record with a ':' in a path: such a pattern reserves the whole channel.
 */
export async function lockedPath(pattern: string): Promise<LockedPath> {
  const { base, isGlob } = await staticBase(pattern);
  const path = (isGlob ? base : pattern) || ".";
  const normalized = path.includes(":") ? "." : path;
  const kind = isGlob || normalized === "." ? "directory" : "file";
  return { display_path: pattern, kind, normalized_path: normalized };
}

/**
 * Whether two patterns may cover a common path. Sound (never "no" for two that share a path),
 * and exact for two literals and for a literal against a glob without `**`:
 *
 * - Every path a pattern covers lies under its static base (the folders before the first glob
 *   character; `''` for `*.ts`). Two patterns whose bases are not on one line (neither is the
 *   other or a folder above it) share nothing.
 * - Two literals overlap when they are equal or one is a folder above the other.
 * - A literal L and a glob G overlap when G matches L, or when G can match a path under the
 *   folder L: G's base lies under L, or G is unbounded in depth (`**`) or has more segments
 *   than L.
 * - Two globs on one line overlap: `src/*.ts` and `src/*.md` are refused together (an exclusive
 *   lease errs on the side of refusing; `--shared` and `--force` exist).
 */
export async function patternsOverlap(a: string, b: string): Promise<boolean> {
  const [ga, gb] = await Promise.all([coverage(a), coverage(b)]);
  if (!onOneLine(ga.base, gb.base)) return false;
  if (ga.isGlob === gb.isGlob) return true;
  const [literal, glob] = ga.isGlob ? [b, ga] : [a, gb];
  if (glob.covers(literal) || underOrAt(glob.base, literal)) return true;
  return glob.unbounded || glob.depth > literal.split("/").length;
}

/** `path` is `folder` or lies under it (`''` is the top folder, above everything). */
export function underOrAt(path: string, folder: string): boolean {
  return folder === "" || path === folder || path.startsWith(`${folder}/`);
}

function onOneLine(a: string, b: string): boolean {
  return underOrAt(a, b) || underOrAt(b, a);
}
