// The `agent-chat` executable (bundled to dist/cli.cjs). What agents and host tools run all the
// time is served without the full CLI: `--version` and `--help` (to a pipe) here, `hook …` by
// dist/hook.cjs, the hot commands (post, read, wait, peek, channels, tasks, claim) by
// dist/hot.cjs, each one CommonJS file; every other line loads the full CLI (dist/main.js).
// See bench/README.md, "Start-up".
import { join } from "node:path";
import { enableUserCompileCache } from "./compile-cache.js";
import { EXIT } from "./exit-codes.js";
import { parseHookLine } from "./hook-line.js";
import { parseHotLine } from "./hot-line.js";
import { exitQuietlyOnBrokenPipe } from "./pipe.js";
import { writeStderr, writeStdout } from "./stdio.js";
import { compileCacheDir } from "./user-dirs.js";

declare const __VERSION__: string;
/** The full CLI's `--help` output to a pipe, taken at build time (scripts/build.mjs). */
declare const __HELP__: string;
/** The oldest Node we support, `[major, minor]`: package.json's `engines`, at build time. */
declare const __NODE_FLOOR__: [number, number];

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
const [floorMajor, floorMinor] = __NODE_FLOOR__;
if (major < floorMajor || (major === floorMajor && minor < floorMinor)) {
  // Said plainly, before anything newer than that Node is touched and fails with a stack.
  writeStderr(
    `agent-chat: Node ${floorMajor}.${floorMinor} or later is needed; this is Node v${process.versions.node}. ` +
      'Use a supported line (22, 24 or 26): README.md, "Which Node".\n',
  );
  process.exit(EXIT.ERROR);
}
enableUserCompileCache(compileCacheDir(process.env));
/** One of the lean files beside this one. */
const lean = (name: string): unknown => require(join(__dirname, name));

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
} else if (argv.length === 1 && ["--version", "-v", "-V", "version"].includes(argv[0]!)) {
  // What the full CLI prints for it.
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
