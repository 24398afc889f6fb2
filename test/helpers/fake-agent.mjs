// A stand-in for an agent's interactive CLI, run under `agent-chat run`: it prints a prompt,
// answers each line it is given with `got: LINE`, "works" (prints for a while) on `work`, exits
// 7 on `quit`, and 130 on Ctrl-C (SIGINT from the terminal).
import { createInterface } from "node:readline";

process.on("SIGINT", () => {
  process.stdout.write("\nsigint\n");
  process.exit(130);
});
const prompt = () => process.stdout.write("> ");
const lines = createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  if (line === "quit") process.exit(7);
  process.stdout.write(`got: ${line}\n`);
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
