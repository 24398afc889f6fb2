import { isUrlRoot } from "../store/roots.js";
import { WAIT_FLAG_DEFAULTS } from "./usage.js";
/**
 * The commands agents run all the time, with their options as `commands/core.ts` declares them
 * to commander (test/cli/startup.test.ts checks that the two agree): a line made only of these
 * is served by `dist/hot.cjs` without loading commander or the full CLI.
 */
export const HOT_COMMANDS = {
  post: {
    operands: 1,
    oneOff: true,
    values: {
      "--from": "from",
      "--title": "title",
      "--to": "to",
      "--reply": "reply",
      "--status": "status",
      "--body": "body",
      "--body-file": "bodyFile",
      "--wait-for": "waitFor",
      "--timeout": "timeout",
    },
    flags: {},
    defaults: { status: "discussion" },
  },
  read: {
    operands: 1,
    oneOff: true,
    values: { "--as": "as", "--thread": "thread" },
    flags: { "--all": "all", "--peek": "peek" },
    defaults: {},
  },
  wait: {
    operands: 1,
    values: { "--as": "as", "--timeout": "timeout", "--interval": "interval" },
    flags: {},
    defaults: WAIT_FLAG_DEFAULTS,
  },
  peek: {
    operands: 1,
    oneOff: true,
    values: { "-n": "count", "--count": "count" },
    flags: { "--archived": "archived" },
    defaults: { count: "3" },
  },
  channels: { operands: 0, values: {}, flags: {}, defaults: {} },
  tasks: { operands: 1, values: {}, flags: {}, defaults: {} },
  claim: { operands: 2, values: { "--as": "as", "--ttl": "ttl" }, flags: {}, defaults: {} },
} as const satisfies Record<string, HotSpec>;

export interface HotSpec {
  /** How many positional arguments the command takes (all required). */
  operands: number;
  /** Options that take a value: flag → the key commander gives it. */
  values: Readonly<Record<string, string>>;
  /** Options without a value. */
  flags: Readonly<Record<string, string>>;
  defaults: Readonly<Record<string, string>>;
  /**
   * Run once (not a wait) it works on a folder root directly even while a daemon serves it:
   * connecting costs more than it saves (bench/README.md, issue 45).
   */
  oneOff?: true;
}

export type HotCommand = keyof typeof HOT_COMMANDS;

/** The program's own options, as `main.ts` declares them. */
const GLOBAL_VALUES: Readonly<Record<string, "root" | "maxBody">> = {
  "--root": "root",
  "--max-body": "maxBody",
};

export interface HotLine {
  command: HotCommand;
  operands: string[];
  /** The command's options, defaults filled in, keyed as commander keys them. */
  options: Record<string, string | true>;
  globals: { root?: string; json?: boolean; maxBody?: string };
  /** Its spec's {@link HotSpec.oneOff}. */
  oneOff: boolean;
}

/**
 * Recognises a hot command line in its plain forms (`--flag value`, `--flag=value`, global
 * options anywhere, each option at most once). Anything else — help, an option it does not
 * know, a value or operand that starts with `-`, `--`, a missing or extra argument, a NATS or
 * other URL root (its client is ESM-only) — is undefined, and the full CLI handles the line
 * with commander's own parsing and messages; so the two can only differ in speed.
 */
export function parseHotLine(argv: readonly string[], envRoot?: string): HotLine | undefined {
  const line: Parsing = { operands: [], options: {}, globals: {} };
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    const used =
      word.startsWith("-") && word !== "-"
        ? takeOption(line, word, argv[i + 1])
        : takeWord(line, word);
    if (used === undefined) return undefined;
    i += used;
  }
  return finish(line, envRoot);
}

/** A hot line as read so far. */
interface Parsing {
  spec?: HotSpec;
  command?: HotCommand;
  operands: string[];
  options: Record<string, string | true>;
  globals: HotLine["globals"];
}

/** The command's name or an operand; undefined when the line is not a plain hot line. */
function takeWord(line: Parsing, word: string): 0 | undefined {
  if (word === "-") return undefined;
  if (line.spec) {
    line.operands.push(word);
    return 0;
  }
  if (!Object.hasOwn(HOT_COMMANDS, word)) return undefined;
  line.command = word as HotCommand;
  line.spec = HOT_COMMANDS[line.command];
  return 0;
}

/** One option: how many following words it took as its value (0 or 1), or undefined. */
function takeOption(line: Parsing, word: string, next: string | undefined): 0 | 1 | undefined {
  const eq = word.startsWith("--") ? word.indexOf("=") : -1;
  const flag = eq === -1 ? word : word.slice(0, eq);
  const inline = eq === -1 ? undefined : word.slice(eq + 1);
  const globals = line.globals as Record<string, unknown>;
  if (flag === "--json" && inline === undefined) return setOnce(globals, "json", true);
  const globalKey = lookup(GLOBAL_VALUES, flag);
  if (globalKey !== undefined) return takeValue(globals, globalKey, inline, next);
  const valueKey = line.spec && lookup(line.spec.values, flag);
  if (valueKey !== undefined) return takeValue(line.options, valueKey, inline, next);
  const flagKey = line.spec && lookup(line.spec.flags, flag);
  if (flagKey === undefined || inline !== undefined) return undefined;
  return setOnce(line.options, flagKey, true);
}

/** An option's value, given inline (`--as=bob`) or as the next word; never one like a flag. */
function takeValue(
  target: Record<string, unknown>,
  key: string,
  inline: string | undefined,
  next: string | undefined,
): 0 | 1 | undefined {
  const value = inline ?? next;
  if (value === undefined || value.startsWith("-")) return undefined;
  if (setOnce(target, key, value) === undefined) return undefined;
  return inline === undefined ? 1 : 0;
}

function lookup<T extends string>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Each option at most once: a repeated one is left to commander (it keeps the last). */
function setOnce(target: Record<string, unknown>, key: string, value: unknown): 0 | undefined {
  if (Object.hasOwn(target, key)) return undefined;
  target[key] = value;
  return 0;
}

function finish(line: Parsing, envRoot: string | undefined): HotLine | undefined {
  const { spec, command, operands, options, globals } = line;
  if (!spec || !command || operands.length !== spec.operands) return undefined;
  // resolveRoot's precedence: --root, else a non-blank $AGENT_CHAT_ROOT.
  const root = globals.root || (envRoot?.trim() ? envRoot : undefined);
  if (root !== undefined && isUrlRoot(root)) return undefined;
  for (const [key, value] of Object.entries(spec.defaults)) {
    if (!Object.hasOwn(options, key)) options[key] = value;
  }
  return { command, operands, options, globals, oneOff: spec.oneOff === true };
}
