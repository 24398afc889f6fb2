// Changes a lock record of ours through the folder store and is killed with SIGKILL at the
// audit message of that change: before it is posted (`no`) or just after (`posted`). Args:
// root, `lock` (bob's exclusive lease of src/a.ts) or `release` (of bob's lease 1), `no|posted`.
import { FsStore } from "../../src/store/fs/fs-store.js";
import type { PostInput, PostResult } from "../../src/store/types.js";

const [root, op, when] = process.argv.slice(2) as [string, string, string];

class DyingStore extends FsStore {
  protected override async postQuietly(channel: string, input: PostInput): Promise<PostResult> {
    if (!String(input.status).startsWith("path.")) return super.postQuietly(channel, input);
    if (when === "posted") await super.postQuietly(channel, input);
    process.kill(process.pid, "SIGKILL");
    return new Promise(() => {});
  }
}

const store = new DyingStore(root, { watch: false });
if (op === "lock") await store.addPathLease("dev", "src/a.ts", "bob", { ttlMs: 300_000 });
else await store.releasePathLease("dev", "1", "bob");
process.stdout.write("survived\n");
process.exit(0);
