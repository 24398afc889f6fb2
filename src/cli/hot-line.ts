/**
 * The commands agents run all the time, with their options as `commands/core.ts` declares them
 * to commander (test/cli/startup.test.ts checks that the two agree): a line made only of these
 * is served by `dist/hot.cjs` without loading commander or the full CLI.
 */
export const HOT_COMMANDS = {
  post: {
    operands: 1,
    values: {
      "--from": "from",
      "--title": "title",
      "--to": "to",
      "--reply": "reply",
      "--status": "status",
      "--body": "body",
      "--body-file": "bodyFile",
    },
    flags: {},
    defaults: { status: "discussion" },
  },
  read: {
    operands: 1,
    values: { "--as": "as" },
    flags: { "--all": "all", "--peek": "peek" },
    defaults: {},
  },
  wait: {
    operands: 1,
    values: { "--as": "as", "--timeout": "timeout", "--interval": "interval" },
    flags: {},
    defaults: { timeout: "900", interval: "2" },
  },
  peek: {
    operands: 1,
    values: { "-n": "count", "--count": "count" },
    flags: {},
    defaults: { count: "3" },
  },
  channels: { operands: 0, values: {}, flags: {}, defaults: {} },
  tasks: { operands: 1, values: {}, flags: {}, defaults: {} },
  claim: { operands: 2, values: { "--as": "as" }, flags: {}, defaults: {} },
} as const satisfies Record<string, HotSpec>;

export interface HotSpec {
  /** How many positional arguments the command takes (all required). */
  operands: number;
  /** Options that take a value: flag → the key commander gives it. */
  values: Readonly<Record<string, string>>;
  /** Options without a value. */
  flags: Readonly<Record<string, string>>;
  defaults: Readonly<Record<string, string>>;
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
}

/**
 * Recognises a hot command line in its plain forms (`--flag value`, `--flag=value`, global
 * options anywhere, each option at most once). Anything else — help, an option it does not
 * know, a value or operand that starts with `-`, `--`, a missing or extra argument, a NATS or
 * other URL root (its client is ESM-only) — is undefined, and the full CLI handles the line
 * with commander's own parsing and messages; so the two can only differ in speed.
 */
export function parseHotLine(argv: readonly string[], envRoot?: string): HotLine | undefined {
  let spec: HotSpec | undefined;
  let command: HotCommand | undefined;
  const operands: string[] = [];
  const options: Record<string, string | true> = {};
  const globals: HotLine["globals"] = {};
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (!word.startsWith("-") || word === "-") {
      if (word === "-") return undefined;
      if (spec) operands.push(word);
      else if (Object.hasOwn(HOT_COMMANDS, word)) {
        command = word as HotCommand;
        spec = HOT_COMMANDS[command];
      } else return undefined;
      continue;
    }
    const eq = word.startsWith("--") ? word.indexOf("=") : -1;
    const flag = eq === -1 ? word : word.slice(0, eq);
    const inline = eq === -1 ? undefined : word.slice(eq + 1);
    if (flag === "--json" && inline === undefined) {
      if (globals.json) return undefined;
      globals.json = true;
      continue;
    }
    const globalKey = Object.hasOwn(GLOBAL_VALUES, flag) ? GLOBAL_VALUES[flag] : undefined;
    const valueKey = spec && Object.hasOwn(spec.values, flag) ? spec.values[flag] : undefined;
    const flagKey = spec && Object.hasOwn(spec.flags, flag) ? spec.flags[flag] : undefined;
    if (globalKey !== undefined || valueKey !== undefined) {
      const value = inline ?? argv[++i];
      if (value === undefined || value.startsWith("-")) return undefined;
      if (globalKey !== undefined) {
        if (globals[globalKey] !== undefined) return undefined;
        globals[globalKey] = value;
      } else {
        if (Object.hasOwn(options, valueKey!)) return undefined;
        options[valueKey!] = value;
      }
    } else if (flagKey !== undefined && inline === undefined) {
      if (Object.hasOwn(options, flagKey)) return undefined;
      options[flagKey] = true;
    } else {
      return undefined;
    }
  }
  if (!spec || !command || operands.length !== spec.operands) return undefined;
  // resolveRoot's precedence: --root, else a non-blank $AGENT_CHAT_ROOT.
  const root = globals.root || (envRoot?.trim() ? envRoot : undefined);
  if (root !== undefined && /^[a-z][a-z0-9+.-]*:\/\//i.test(root)) return undefined;
  for (const [key, value] of Object.entries(spec.defaults)) {
    if (!Object.hasOwn(options, key)) options[key] = value;
  }
  return { command, operands, options, globals };
}
