import type { ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatTimestamp, messageFileName, serializeMessage } from "../../src/core/message.js";
import {
  changeProfile,
  type GovernanceChange,
  profileMetaKeys,
} from "../../src/features/governance/rules.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { collect, startCli } from "../helpers/cli.js";

/** Resolves once the child's stderr contains `text`. */
export function stderrContains(
  child: ChildProcess,
  text: string,
  timeoutMs = 10_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(
      () => reject(new Error(`no ${JSON.stringify(text)} on stderr; got: ${seen}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer | string) => {
      seen += chunk.toString();
      if (seen.includes(text)) {
        clearTimeout(timer);
        child.stderr?.off("data", onData);
        resolve(seen);
      }
    };
    child.stderr?.on("data", onData);
  });
}

/** Creates channel `review` governed by alice (merge approval, refactor notify, * auto). */
export async function initGoverned(root: string, change: GovernanceChange = {}): Promise<void> {
  const store = new FsStore(root, { watch: false });
  const profile = changeProfile(
    undefined,
    {
      maintainer: "alice",
      bands: { merge: "approval", refactor: "notify", "*": "auto" },
      vetoWindowSeconds: 60,
      ...change,
    },
    "review",
  );
  await store.init("review", { extra: profileMetaKeys(profile) });
  await store.close();
}

/** Starts `request` as bob; `--interval 60` so that only the file watch can wake it in time. */
export function startRequest(root: string, action: string, ...more: string[]) {
  const child = startCli(
    ["request", "review", "--as", "bob", "--action", action, "--title", `Do ${action}`]
      .concat(["--interval", "60"])
      .concat(more),
    { root, timeoutMs: 20_000 },
  );
  const posted = stderrContains(child, "agent-chat: posted #");
  return { child, posted, done: collect(child) };
}

/**
 * Posts a reply the way the reference `chat.py` does (`post --reply N --status S`): under the
 * mkdir lock, seq = largest file number + 1, the file written in place.
 */
export async function referenceReply(
  channelDir: string,
  reply: { from: string; to: string; replyTo: number; status: string; body: string },
): Promise<number> {
  const lock = join(channelDir, "_seq.lock");
  for (let tries = 0; ; tries += 1) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if (tries > 200) throw err;
      // chat.py's own lock retry, reproduced: it waits 50 ms between tries of mkdir.
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    const seqs = readdirSync(channelDir).map((n) => Number(/^(\d+)-.*\.md$/.exec(n)?.[1] ?? 0));
    const seq = Math.max(0, ...seqs) + 1;
    const title = `Re: #${reply.replyTo}`;
    writeFileSync(
      join(channelDir, messageFileName(seq, reply.from, title)),
      serializeMessage({ ...reply, seq, channel: "review", ts: formatTimestamp(), title }),
    );
    return seq;
  } finally {
    rmdirSync(lock);
  }
}
