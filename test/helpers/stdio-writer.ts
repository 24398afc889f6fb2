// Writes a large numbered output through the lean entries' writer, after making its stdout
// non-blocking as another process sharing the pipe may have (creating process.stdout on a pipe
// does that), then a last line; says on stderr when the big write has returned.
import { writeStderr, writeStdout } from "../../src/cli/stdio.js";

void process.stdout; // the pipe is now non-blocking
const lines = Number(process.argv[2]);
let text = "";
for (let i = 0; i < lines; i++) text += `line ${i}\n`;
writeStdout(text);
writeStderr("returned\n");
writeStdout("last\n");
