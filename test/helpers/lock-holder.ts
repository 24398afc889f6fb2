// Takes a channel's sequence lock, says so, and holds it until killed: the crash tests kill it
// with SIGKILL to leave a lock whose owner is dead.
import { acquireDirLock } from "../../src/fsutil/dir-lock.js";

const [channelDir] = process.argv.slice(2);
await acquireDirLock(channelDir!);
process.stdout.write("held\n");
setInterval(() => {}, 1000);
