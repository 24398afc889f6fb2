import { EXIT } from "./exit-codes.js";
import { readerGone, useStreams } from "./stdio.js";

/**
 * A reader that closes our stdout early (`agent-chat … | head -1`) is not an error to report:
 * exit at once, quietly, with the status a shell gives a program killed by SIGPIPE, so that a
 * script with `set -o pipefail` still sees that the output was cut.
 */
export function exitQuietlyOnBrokenPipe(): void {
  useStreams();
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (readerGone(err)) process.exit(EXIT.BROKEN_PIPE);
    throw err;
  });
}
