// The `agent-chat` executable (bundled to dist/cli.cjs). Host tools run `agent-chat hook …` on
// every prompt, so that one command line is served by a small single-file bundle without the
// command-line parser; every other command loads the full CLI.
import { parseHookLine } from "./hook-line.js";

const argv = process.argv.slice(2);
const hook = parseHookLine(argv, process.env.AGENT_CHAT_ROOT);
if (hook) {
  // Loaded at run time, not bundled in: the executable stays a few lines for other commands.
  const { run } = require("./hook.cjs") as typeof import("./hook-entry.js");
  void run(hook);
} else {
  void import("./main.js");
}
