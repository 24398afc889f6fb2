// On each SIGUSR1, reads what stdin holds with the lean entries' reader and prints it as one
// JSON line: {"text": ..., "complete": ...}, or null when it left stdin to process.stdin.
import { readStdinReady } from "../../src/cli/stdio.js";

process.on("SIGUSR1", () => {
  const part = readStdinReady(1024);
  const line = part ? { text: part.bytes.toString(), complete: part.complete } : null;
  process.stdout.write(`${JSON.stringify(line)}\n`);
});
setInterval(() => {}, 1000);
process.stdout.write("ready\n");
