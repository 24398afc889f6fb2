import { mkdirSync, readdirSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatTimestamp, messageFileName, serializeMessage } from "../../src/core/message.js";

/**
 * Posts the way the reference `chat.py` does, defects included: it takes `_seq.lock` with mkdir
 * (retrying every 50 ms, stealing after 30 s), computes the next seq as the largest number among
 * the file names plus one (it knows no high-water mark), writes the message IN PLACE (a reader
 * can see it half-written) and removes the lock. `pauseMidWrite` lets a test look at the file
 * while it is half-written.
 */
export async function referencePost(
  channelDir: string,
  message: { from: string; title: string; body: string; to?: string },
  options: { pauseMidWrite?: (path: string) => Promise<void> } = {},
): Promise<number> {
  const lock = join(channelDir, "_seq.lock");
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      const st = statSync(lock, { throwIfNoEntry: false });
      if (st && Date.now() - st.mtimeMs > 30_000) {
        rmdirSync(lock);
        continue;
      }
      if (Date.now() > deadline) throw new Error("reference writer: lock timeout");
      // chat.py's own lock retry, reproduced: it waits 50 ms between tries of mkdir.
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    let max = 0;
    for (const name of readdirSync(channelDir)) {
      const m = /^(\d+)-.*\.md$/.exec(name);
      if (m) max = Math.max(max, Number(m[1]));
    }
    const seq = max + 1;
    const path = join(channelDir, messageFileName(seq, message.from, message.title));
    const text = serializeMessage({
      seq,
      from: message.from,
      to: message.to ?? "all",
      channel: channelDir.split("/").pop()!,
      ts: formatTimestamp(),
      title: message.title,
      body: message.body,
    });
    if (options.pauseMidWrite) {
      writeFileSync(path, text.slice(0, 20));
      await options.pauseMidWrite(path);
    }
    writeFileSync(path, text);
    return seq;
  } finally {
    rmdirSync(lock);
  }
}
