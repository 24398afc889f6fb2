import { isUrlRoot } from "../store/roots.js";
import type { HookArgs } from "./hook.js";

/** A hook invocation the fast path serves: the request and the `--root` given, if any. */
export interface HookLine extends HookArgs {
  root?: string;
}

const VALUE_FLAGS = {
  "--root": "root",
  "--as": "as",
  "--format": "format",
  "--timeout": "timeout",
} as const;

/**
 * Recognises the one command line host tools run on every prompt,
 * `[--root DIR] hook EVENT [--as NAME] [--format TOOL] [--block] [--timeout S]` (as `setup` writes
 * it), so
 * that it can skip loading the full command-line parser. Anything else, including `--help`, a
 * flag it does not know or a NATS root (whose client is ESM-only), is undefined: the full CLI
 * then handles it, with its checks and messages.
 */
export function parseHookLine(argv: readonly string[], envRoot?: string): HookLine | undefined {
  const parsing: Parsing = { line: {}, sawHook: false };
  for (let i = 0; i < argv.length; ) {
    const next = takeWord(argv, i, parsing);
    if (next < 0) return undefined;
    i = next;
  }
  const { line, sawHook } = parsing;
  if (!sawHook || line.event === undefined) return undefined;
  const root = line.root ?? envRoot;
  // A URL root (NATS) is served by the full CLI, as in the lean entry of the hot commands.
  if (root !== undefined && isUrlRoot(root)) return undefined;
  return line as HookLine;
}

interface Parsing {
  line: Partial<HookLine>;
  sawHook: boolean;
}

/** Takes the word at `i` into the line: the index after it, or -1 when the fast path cannot serve it. */
function takeWord(argv: readonly string[], i: number, parsing: Parsing): number {
  const word = argv[i]!;
  const eq = word.indexOf("=");
  const flag = word.startsWith("--") && eq !== -1 ? word.slice(0, eq) : word;
  if (flag in VALUE_FLAGS) return takeValue(argv, i, flag as keyof typeof VALUE_FLAGS, parsing);
  const { line } = parsing;
  if (word === "--block" && parsing.sawHook) line.block = true;
  else if (word === "hook" && !parsing.sawHook) parsing.sawHook = true;
  else if (parsing.sawHook && line.event === undefined && !word.startsWith("-")) line.event = word;
  else return -1;
  return i + 1;
}

/** A value flag, `--flag=value` or `--flag value`: the index after it, or -1 as in {@link takeWord}. */
function takeValue(
  argv: readonly string[],
  i: number,
  flag: keyof typeof VALUE_FLAGS,
  parsing: Parsing,
): number {
  const word = argv[i]!;
  const inline = flag !== word;
  const value = inline ? word.slice(flag.length + 1) : argv[i + 1];
  const key = VALUE_FLAGS[flag];
  if (value === undefined || value.startsWith("-") || parsing.line[key] !== undefined) return -1;
  // --root is a global option (before the command); the others are the hook's own.
  if ((key === "root") === parsing.sawHook) return -1;
  parsing.line[key] = value;
  return inline ? i + 1 : i + 2;
}
