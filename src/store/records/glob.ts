import { AgentChatError } from "../../core/errors.js";

/**
 * The glob grammar of path leases, and its matcher, written by hand. picomatch, used before,
 * compiles a glob to a backtracking RegExp: `**\/+(*?)+(*?)+(*?)+(*?)Q` ran for minutes and even
 * plain stars (`**\/*a*a*a*a*a*a*a*a*a*aQ`) for seconds against one path of 40 characters,
 * synchronously (SIGTERM unheard), `lease add` holding the channel lock meanwhile. Here braces
 * are expanded (to a bounded number of alternatives) and each alternative is matched by the
 * greedy wildcard walk ({@link wildcard}): at the level of folders for `**`, within a folder name
 * for `*`. Its time is at most the product of the lengths of alternative and path, whatever the
 * pattern; a syntax whose matching could cost more (extglobs, `|` alternation) is refused.
 */

/** What lease patterns take, as a refusal says it. */
const SUPPORTED = "lease patterns take *, **, ?, [abc], [a-z], [!abc] and {a,b}";
/** Braces expand to at most this many alternatives, nesting and products included. */
const MAX_ALTERNATIVES = 32;

/** One character of a name, tested. */
type Char = (c: string) => boolean;
/** Any run of characters in a name (`*`), or of folders in a path (`**`). */
const STAR = Symbol("star");
type Star = typeof STAR;
type Name = ReadonlyArray<Char | Star>;
type Alternative = ReadonlyArray<Name | Star>;

/** A pattern, compiled: what it covers, and what the overlap rule needs to know of it. */
export interface Glob {
  /** Whether it holds glob syntax; one without is a literal path (a file or a folder). */
  isGlob: boolean;
  /** The folders before its first glob character (`src` for `src/*.ts`); a literal: itself. */
  base: string;
  /** Whether some alternative has a `**`, matching paths of any depth. */
  unbounded: boolean;
  /** The most folders of any alternative. */
  depth: number;
  covers(path: string): boolean;
}

function refuse(why: string): AgentChatError {
  return new AgentChatError("INVALID_ARGUMENT", why);
}

/**
 * `pattern` compiled, or refused (INVALID_ARGUMENT, saying why) when it uses a syntax leases do
 * not take or could name a path outside the repository (absolute, a `.` or `..` folder, in any
 * alternative of its braces).
 */
export function compileGlob(pattern: string): Glob {
  const alternatives = expandBraces(pattern).map(parseAlternative);
  if (!isGlobText(pattern)) return literalPath(pattern);
  const names = pattern.split("/");
  const first = names.findIndex(isGlobText);
  return {
    isGlob: true,
    base: names.slice(0, first).join("/"),
    unbounded: alternatives.some((alt) => alt.includes(STAR)),
    depth: Math.max(...alternatives.map((alt) => alt.length)),
    covers: (path) => {
      const items = path.split("/").map((name) => Array.from(name));
      return alternatives.some((alt) => wildcard(alt, items, matchesName));
    },
  };
}

/** A pattern taken as the path it spells: that path, and what is under it when a folder. */
export function literalPath(path: string): Glob {
  return {
    isGlob: false,
    base: path,
    unbounded: false,
    depth: path.split("/").length,
    covers: (p) => p === path || p.startsWith(`${path}/`),
  };
}

/** After {@link compileGlob}'s checks, each of these starts a glob construct. */
function isGlobText(text: string): boolean {
  return /[*?[{]/.test(text);
}

function matchesName(name: Name, chars: readonly string[]): boolean {
  return wildcard(name, chars, (test, c) => test(c));
}

/**
 * Whether `items` match `pattern`, where STAR takes any run of items (none included) and every
 * other entry one item, as `one` says. The greedy walk: on a mismatch it goes back to the last
 * star only, which takes one item more. An earlier star is never revisited (whatever it could
 * take more, the last one can take instead), so `one` is called at most |pattern| × |items|
 * times, where a backtracking RegExp may try exponentially many splits.
 */
function wildcard<P, I>(
  pattern: ReadonlyArray<P | Star>,
  items: readonly I[],
  one: (entry: P, item: I) => boolean,
): boolean {
  let p = 0;
  let i = 0;
  let star = -1;
  let resume = 0;
  while (i < items.length) {
    const entry = pattern[p];
    if (entry === STAR) {
      star = p++;
      resume = i;
    } else if (p < pattern.length && one(entry as P, items[i] as I)) {
      p++;
      i++;
    } else if (star < 0) {
      return false;
    } else {
      p = star + 1;
      i = ++resume;
    }
  }
  while (pattern[p] === STAR) p++;
  return p === pattern.length;
}

/**
 * The alternatives `{a,b}` spells, braces nested and multiplied out; refused past
 * {@link MAX_ALTERNATIVES}. Each step replaces one group by one of its alternatives, so every
 * string waiting still ends as one alternative at least: the count is checked as it grows.
 */
function expandBraces(pattern: string): string[] {
  const done: string[] = [];
  const todo = [pattern];
  for (let text = todo.pop(); text !== undefined; text = todo.pop()) {
    const group = firstGroup(text);
    if (group === undefined) done.push(text);
    else {
      const before = text.slice(0, group.start);
      const after = text.slice(group.end);
      todo.push(...group.alternatives.map((alt) => before + alt + after));
    }
    if (done.length + todo.length > MAX_ALTERNATIVES) {
      throw refuse(`has braces that make more than ${MAX_ALTERNATIVES} alternatives`);
    }
  }
  return done;
}

interface Group {
  start: number;
  end: number;
  alternatives: string[];
}

/** The first `{…}` of `text` outside a class, or none. */
function firstGroup(text: string): Group | undefined {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "[") i = classEnd(text, i) - 1;
    else if (text[i] === "{") return groupAt(text, i);
  }
  return undefined;
}

/** The group opening at `start`, split at its own commas (not those of a group inside it). */
function groupAt(text: string, start: number): Group {
  const cuts = groupCuts(text, start);
  if (cuts.length < 2) {
    throw refuse(
      `has a brace group without a comma: braces list alternatives ({a,b}); ranges such as {1..9} are not supported (${SUPPORTED})`,
    );
  }
  const from = [start, ...cuts];
  const alternatives = cuts.map((cut, k) => text.slice((from[k] as number) + 1, cut));
  return { start, end: (cuts.at(-1) as number) + 1, alternatives };
}

/** Where the group opening at `start` has its own commas, and its `}` last. */
function groupCuts(text: string, start: number): number[] {
  const cuts: number[] = [];
  let depth = 0;
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (c === "[") i = classEnd(text, i) - 1;
    else if (c === "{") depth++;
    else if (c === "," && depth === 0) cuts.push(i);
    else if (c === "}") {
      if (depth === 0) return [...cuts, i];
      depth--;
    }
  }
  throw refuse(`has an unclosed '{' (${SUPPORTED})`);
}

/**
 * Where the class opening at `start` ends (just after its `]`). A `]` first, after the optional
 * `!` or `^`, is a member; a class stays within one folder name.
 */
function classEnd(text: string, start: number): number {
  const first = text[start + 1] === "!" || text[start + 1] === "^" ? start + 2 : start + 1;
  const close = text.indexOf("]", first + 1);
  const slash = text.indexOf("/", first);
  if (close < 0 || (slash >= 0 && slash < close)) {
    throw refuse(
      "has an unclosed '[': a class such as [abc] ends with ']' within one folder name ([[] is a literal '[')",
    );
  }
  return close + 1;
}

function parseAlternative(text: string): Alternative {
  if (text.startsWith("/") || /^[A-Za-z]:/.test(text)) {
    throw refuse("is absolute: patterns are relative to the repository's top folder");
  }
  return text.split("/").map(parseName);
}

function parseName(text: string): Name | Star {
  if (text === "." || text === "..") {
    throw refuse("has a '.' or '..' segment: patterns stay inside the repository");
  }
  if (text === "**") return STAR;
  const name: Array<Char | Star> = [];
  for (let i = 0; i < text.length; ) {
    const c = String.fromCodePoint(text.codePointAt(i) as number);
    if (c === "*") {
      if (name.at(-1) !== STAR) name.push(STAR);
    } else if (c === "?") name.push(() => true);
    else if (c === "[") {
      const end = classEnd(text, i);
      name.push(parseClass(text.slice(i + 1, end - 1)));
      i = end;
      continue;
    } else name.push(literal(text, i, c));
    i += c.length;
  }
  return name;
}

/** A character outside a class, refused where picomatch would have read a group or an extglob. */
function literal(text: string, at: number, c: string): Char {
  if (c === "(" && /[@*+?!]/.test(text[at - 1] ?? "")) {
    throw refuse(
      `uses an extglob (${text[at - 1]}(…)), whose matching can take exponential time: ${SUPPORTED}, matched in linear time`,
    );
  }
  if (c === "|") {
    throw refuse(`uses '|': for alternatives, use braces ({a,b}); ${SUPPORTED}`);
  }
  return (x) => x === c;
}

/** `[abc]`, `[a-z]`, `[!abc]` or `[^abc]` (its text between the brackets): one character. */
function parseClass(body: string): Char {
  const negated = body.startsWith("!") || body.startsWith("^");
  const members = Array.from(negated ? body.slice(1) : body);
  if (members.join("").includes("[:")) {
    throw refuse(`uses POSIX class names ([[:alpha:]]): spell the set ([a-zA-Z]); ${SUPPORTED}`);
  }
  const ranges: Array<[number, number]> = [];
  for (let k = 0; k < members.length; k++) {
    const low = members[k] as string;
    const high = members[k + 1] === "-" && k + 2 < members.length ? members[k + 2] : undefined;
    if (high !== undefined) k += 2;
    const range: [number, number] = [code(low), code(high ?? low)];
    if (range[0] > range[1]) throw refuse(`has a range [${low}-${high}] out of order`);
    ranges.push(range);
  }
  return (c) => negated !== ranges.some(([low, high]) => code(c) >= low && code(c) <= high);
}

function code(c: string): number {
  return c.codePointAt(0) as number;
}
