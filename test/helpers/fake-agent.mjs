// A stand-in for an agent's interactive CLI, run under `agent-chat run`: it prints a prompt,
// answers each line it is given with `got: LINE`, "works" (prints for a while) on `work`, exits
// 7 on `quit`, and 130 on Ctrl-C (SIGINT from the terminal). On `hooked` it takes a turn as a
// tool with agent-chat's hooks does: `hook prompt`, then `hook stop` (of the CLI named by
// FAKE_AGENT_CLI), and from then on redraws its screen forever, as a TUI's status line does,
// and runs both hooks around every line it is given (an empty one, as a TUI, it ignores). On
// `ask` it opens a turn (`hook prompt`) and asks "Allow execution of [Shell]? (y/n)" on a quiet
// screen, as Gemini CLI does: the next line it is given answers it (`answered: LINE`), and the
// turn ends (`hook stop`).
import { execFileSync } from "node:child_process";
import { createInterface } from "node:readline";

process.on("SIGINT", () => {
  process.stdout.write("\nsigint\n");
  process.exit(130);
});
const prompt = () => process.stdout.write("> ");
const lines = createInterface({ input: process.stdin, terminal: false });
let asking = false;
lines.on("line", (line) => {
  if (asking) return answer(line);
  if (line === "quit") process.exit(7);
  if (hooked && line === "") return;
  process.stdout.write(`got: ${line}\n`);
  if (line === "ask") return ask();
  if (line === "hooked" || hooked) return hookedTurn();
  // A TUI that reads a marked paste as one (bracketed paste mode on).
  if (line === "paste-mode") process.stdout.write("\x1b[?2004h");
  if (line !== "work") return prompt();
  let ticks = 0;
  const timer = setInterval(() => {
    process.stdout.write(".");
    if (++ticks < 30) return;
    clearInterval(timer);
    process.stdout.write("\ndone\n");
    prompt();
  }, 50);
});
prompt();

function hook(event) {
  const args = [process.env.FAKE_AGENT_CLI, "hook", event, "--as", "alice", "--format", "codex"];
  execFileSync(process.execPath, args, { input: "{}", stdio: ["pipe", "ignore", "inherit"] });
}

let hooked = false;

function hookedTurn() {
  hook("prompt");
  if (!hooked) setInterval(() => process.stdout.write("\x1b[s~\x1b[u"), 20);
  hooked = true;
  hook("stop");
  process.stdout.write("turn ended\n");
  prompt();
}

function ask() {
  hook("prompt");
  asking = true;
  process.stdout.write("Allow execution of [Shell]? (y/n) ");
}

function answer(line) {
  asking = false;
  process.stdout.write(`answered: ${line}\n`);
  hook("stop");
  process.stdout.write("turn ended\n");
  prompt();
}
