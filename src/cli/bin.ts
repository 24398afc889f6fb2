// The `agent-chat` executable (bundled to dist/cli.cjs). What agents and host tools run all the
// time is served without the full CLI: `--version` here, `hook …` by dist/hook.cjs, the hot
// commands (post, read, wait, peek, channels, tasks, claim) by dist/hot.cjs, each one CommonJS
// file; every other line loads the full CLI (dist/main.js). See bench/README.md, "Start-up".
import module from "node:module";
import { parseHookLine } from "./hook-line.js";
import { parseHotLine } from "./hot-line.js";
import { exitQuietlyOnBrokenPipe } from "./pipe.js";

declare const __VERSION__: string;

// Node ≥ 22.1 keeps compiled code between runs (Node 20 has no such call).
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const argv = process.argv.slice(2);
const envRoot = process.env.AGENT_CHAT_ROOT;
const hook = parseHookLine(argv, envRoot);
const hot = hook ? undefined : parseHotLine(argv, envRoot);
if (hook) {
  // Loaded at run time, not bundled in: the executable stays a few lines for other commands.
  const { run } = require("./hook.cjs") as typeof import("./hook-entry.js");
  void run(hook);
} else if (hot) {
  const { run } = require("./hot.cjs") as typeof import("./hot-entry.js");
  void run(hot, argv);
} else if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  // What commander prints for it.
  exitQuietlyOnBrokenPipe();
  process.stdout.write(`${__VERSION__}\n`);
} else {
  void import("./main.js");
}
