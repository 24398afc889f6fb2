import { AgentChatError } from "../../core/errors.js";

/**
 * Path lease patterns: repository-relative globs (picomatch syntax). Loaded lazily: the hot
 * commands (post, read, wait) never evaluate picomatch.
 */
type Matcher = (path: string) => boolean;
type Picomatch = typeof import("picomatch");

let loaded: Picomatch | undefined;

async function picomatch(): Promise<Picomatch> {
  loaded ??= ((await import("picomatch")) as unknown as { default: Picomatch }).default;
  return loaded;
}

export const MAX_PATTERN_LENGTH = 500;

/**
 * A pattern as given, checked and put in one form: `./src/**` is `src/**`, a trailing `/` is
 * dropped. Refused: empty, too long, control characters, backslashes (a Windows path or an
 * escape, either way ambiguous), negation, and anything that could name a path outside the
 * repository: an absolute path, a drive letter, a `..` segment.
 */
export async function normalizePattern(pattern: string): Promise<string> {
  const bad = (why: string) =>
    new AgentChatError(
      "INVALID_ARGUMENT",
      `lease pattern ${JSON.stringify(pattern.slice(0, 100))} ${why}`,
    );
  let p = pattern.trim();
  while (p.startsWith("./")) p = p.slice(2);
  while (p.endsWith("/") && p.length > 1) p = p.slice(0, -1);
  if (p === "" || p === ".") throw bad("is empty: name a path of the repository, e.g. 'src/**'");
  if (p.length > MAX_PATTERN_LENGTH) throw bad(`is longer than ${MAX_PATTERN_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(p)) throw bad("holds a control character");
  if (p.includes("\\")) throw bad("holds a backslash: use / between folders");
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) {
    throw bad("is absolute: patterns are relative to the repository's top folder");
  }
  if (p.startsWith("!")) throw bad("is negated: reserve what you need, not what you do not");
  // A `.` or `..` anywhere a path segment can start or end, braces and extglobs included.
  if (/(^|[/{,(|])\.\.?($|[/},)|])/.test(p)) {
    throw bad("has a '.' or '..' segment: patterns stay inside the repository");
  }
  const pm = await picomatch();
  try {
    pm.makeRe(p, { dot: true });
  } catch (err) {
    throw bad(`is not a valid glob (${(err as Error).message})`);
  }
  return p;
}

/** Whether `pattern` holds glob syntax; one without is a literal path (a file or a folder). */
export async function isGlob(pattern: string): Promise<boolean> {
  return (await picomatch()).scan(pattern).isGlob;
}

/**
 * What a lease covers. A glob matches as picomatch does, dot files included (a reservation of
 * `src/**` covers `src/.env`); a literal covers that path and, when it is a folder, everything
 * under it (`src/store` covers `src/store/fs.ts`).
 */
export async function leaseMatcher(pattern: string): Promise<Matcher> {
  const pm = await picomatch();
  if (!pm.scan(pattern).isGlob) {
    return (path) => path === pattern || path.startsWith(`${pattern}/`);
  }
  const glob = pm(pattern, { dot: true });
  return (path) => glob(path);
}

/**
 * The folders of `pattern` before its first glob character (`src/store` for `src/store/*.ts`;
 * `''` for `*.md`), and whether it is a glob at all (a literal is a path).
 */
export async function staticBase(pattern: string): Promise<{ base: string; isGlob: boolean }> {
  const { base, isGlob } = (await picomatch()).scan(pattern);
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
 * and exact for two literals and for a literal against a glob without `**` or extglobs:
 *
 * - Every path a pattern covers lies under its static base (the folders before the first glob
 *   character; `''` for `*.ts`). Two patterns whose bases are not on one line (neither is the
 *   other or a folder above it) share nothing.
 * - Two literals overlap when they are equal or one is a folder above the other.
 * - A literal L and a glob G overlap when G matches L, or when G can match a path under the
 *   folder L: G's base lies under L, or G is unbounded in depth (`**`, extglobs) or has more
 *   segments than L.
 * - Two globs on one line overlap: `src/*.ts` and `src/*.md` are refused together (an exclusive
 *   lease errs on the side of refusing; `--shared` and `--force` exist).
 */
export async function patternsOverlap(a: string, b: string): Promise<boolean> {
  const pm = await picomatch();
  const sa = pm.scan(a);
  const sb = pm.scan(b);
  if (!onOneLine(sa.base, sb.base)) return false;
  if (!sa.isGlob && !sb.isGlob) return true;
  if (sa.isGlob && sb.isGlob) return true;
  const [literal, glob, globBase] = sa.isGlob ? [b, a, sa.base] : [a, b, sb.base];
  if (pm(glob, { dot: true })(literal)) return true;
  if (underOrAt(globBase, literal)) return true;
  const unbounded = glob.includes("**") || /[@*+?!]\(/.test(glob);
  return unbounded || glob.split("/").length > literal.split("/").length;
}

/** `path` is `folder` or lies under it (`''` is the top folder, above everything). */
function underOrAt(path: string, folder: string): boolean {
  return folder === "" || path === folder || path.startsWith(`${folder}/`);
}

function onOneLine(a: string, b: string): boolean {
  return underOrAt(a, b) || underOrAt(b, a);
}

/** A live exclusive lease of another agent that covers a path, as the git guard reports it. */
export interface Blocked {
  path: string;
  lease: {
    token: number;
    pattern: string;
    holder: string;
    expiresAt: string;
    reason?: string;
    lock?: string;
  };
}

/**
 * The paths that live exclusive leases of agents other than `me` cover (each with the first
 * such lease): what a commit of `paths` by `me` would step on. Shared and expired leases, and
 * `me`'s own, never block.
 */
export async function blockedPaths(
  leases: ReadonlyArray<Blocked["lease"] & { exclusive: boolean; state: string }>,
  paths: readonly string[],
  me: string,
): Promise<Blocked[]> {
  const others = leases.filter((l) => l.exclusive && l.state === "live" && l.holder !== me);
  const matchers = await Promise.all(
    others.map(async (l) => [l, await leaseMatcher(l.pattern)] as const),
  );
  const out: Blocked[] = [];
  for (const path of paths) {
    const hit = matchers.find(([, matches]) => matches(path));
    if (hit) out.push({ path, lease: hit[0] });
  }
  return out;
}
