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
  const line: Partial<HookLine> = {};
  let sawHook = false;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    const eq = word.indexOf("=");
    const flag = word.startsWith("--") && eq !== -1 ? word.slice(0, eq) : word;
    if (flag in VALUE_FLAGS) {
      const value = eq !== -1 && flag !== word ? word.slice(eq + 1) : argv[++i];
      const key = VALUE_FLAGS[flag as keyof typeof VALUE_FLAGS];
      if (value === undefined || value.startsWith("-") || line[key] !== undefined) return undefined;
      // --root is a global option (before the command); the others are the hook's own.
      if ((key === "root") === sawHook) return undefined;
      line[key] = value;
    } else if (word === "--block" && sawHook) {
      line.block = true;
    } else if (word === "hook" && !sawHook) {
      sawHook = true;
    } else if (sawHook && line.event === undefined && !word.startsWith("-")) {
      line.event = word;
    } else {
      return undefined;
    }
  }
  if (!sawHook || line.event === undefined) return undefined;
  const root = line.root ?? envRoot;
  // A URL root (NATS) is served by the full CLI, as in the lean entry of the hot commands.
  if (root !== undefined && isUrlRoot(root)) return undefined;
  return line as HookLine;
}
