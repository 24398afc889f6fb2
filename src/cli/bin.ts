// The `agent-chat` executable (bundled to dist/cli.cjs). What agents and host tools run all the
// time is served without the full CLI: `--version` and `--help` (to a pipe) here, `hook …` by
// dist/hook.cjs, the hot commands (post, read, wait, peek, channels, tasks, claim) by
// dist/hot.cjs, each one CommonJS file; every other line loads the full CLI (dist/main.js).
// See bench/README.md, "Start-up".
import { join } from "node:path";
import { codeCacheDir, nodeCompileCache, requireCached } from "./code-cache.js";
import { parseHookLine } from "./hook-line.js";
import { parseHotLine } from "./hot-line.js";
import { exitQuietlyOnBrokenPipe } from "./pipe.js";
import { writeStdout } from "./stdio.js";

declare const __VERSION__: string;
/** The full CLI's `--help` output to a pipe, taken at build time (scripts/build.mjs). */
declare const __HELP__: string;

// Compiled code is kept between runs: by Node itself from 22.1 on, else by V8's code cache
// (code-cache.ts). Either lives in the user's cache folder; none there means compiling afresh.
const cacheDir = codeCacheDir(process.env);
const enableCompileCache = nodeCompileCache();
if (enableCompileCache && cacheDir) enableCompileCache(join(cacheDir, "..", "node"));
/** One of the lean files beside this one, through the code cache where Node has none. */
const lean = (name: string) =>
  requireCached(join(__dirname, name), enableCompileCache ? undefined : cacheDir, require);

const argv = process.argv.slice(2);
const envRoot = process.env.AGENT_CHAT_ROOT;
const hook = parseHookLine(argv, envRoot);
const hot = hook ? undefined : parseHotLine(argv, envRoot);
if (hook) {
  // Loaded at run time, not bundled in: the executable stays a few lines for other commands.
  const { run } = lean("hook.cjs") as typeof import("./hook-entry.js");
  void run(hook);
} else if (hot) {
  const { run } = lean("hot.cjs") as typeof import("./hot-entry.js");
  void run(hot, argv);
} else if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  // What commander prints for it.
  writeStdout(`${__VERSION__}\n`);
} else if (
  argv.length === 1 &&
  (argv[0] === "--help" || argv[0] === "-h") &&
  !process.stdout.isTTY
) {
  // A terminal gets the full CLI, which fits the help to its width.
  exitQuietlyOnBrokenPipe();
  process.stdout.write(__HELP__);
} else {
  void import("./main.js");
}
