import type { ChildProcess } from "node:child_process";
import {
  changeProfile,
  type GovernanceChange,
  profileMetaKeys,
} from "../../src/core/governance.js";
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
      vetoWindowSeconds: 5,
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
    { root },
  );
  const posted = stderrContains(child, "agent-chat: posted #");
  return { child, posted, done: collect(child, { timeoutMs: 20_000 }) };
}
