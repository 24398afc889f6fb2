// A claim of ours on a chat.py 0.7 task that stops for good at its audit message (after posting
// it with `posted`), so that the test can SIGKILL it there: `<root> <task> <agent> [posted]`.
import { join } from "node:path";
import { FsStore } from "../../../src/store/fs/fs-store.js";
import { Board } from "../../../src/store/fs/reference07/board.js";

const [root, task, agent, posted] = process.argv.slice(2) as [string, string, string, string?];
const store = new FsStore(root);
const board = new Board({
  dir: join(root, "dev"),
  channel: "dev",
  now: Date.now,
  post: async (input) => {
    if (posted === "posted") {
      await store.post("dev", input);
      // The test kills us only once the audit message is stored, not merely begun.
      process.stdout.write("posted\n");
    }
    await new Promise(() => {});
  },
});
await board.claim(task, agent, 60_000);
