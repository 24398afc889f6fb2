import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { DaemonServer } from "../../src/daemon/server.js";
import type { Store } from "../../src/store/types.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/*
 * A daemon started before an upgrade keeps running the old release, whose wire the new CLI may
 * read differently (an error's chat.py code travels as a field since 0.1): the CLI says so, and
 * how to mend it, whenever it meets a daemon of another release.
 */
const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function daemonOf(release: string): Promise<Record<string, string>> {
  const tmp = tempDir();
  const store: Store = await openStore(join(tmp.dir, "root"));
  await store.init("review");
  const daemon = new DaemonServer({ store, root: store.location, version: release });
  const socket = join(tmp.dir, "run", "d.sock");
  await daemon.listen(socket);
  cleanups.push(async () => {
    await daemon.close();
    await store.close();
    tmp.cleanup();
  });
  return { AGENT_CHAT_ROOT: store.location, AGENT_CHAT_SOCKET: socket };
}

it("a daemon of another release: the CLI works through it and tells the user to restart it", async () => {
  const env = await daemonOf("0.0.1");
  const listed = await runCli(["channels"], { env });
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain("review");
  expect(listed.stderr).toContain(
    `runs agent-chat 0.0.1, this is ${version}: restart it (stop it, then agent-chat serve)`,
  );
});

it("a daemon of this release: not a word", async () => {
  const env = await daemonOf(version);
  const listed = await runCli(["channels"], { env });
  expect(listed).toMatchObject({ code: 0, stderr: "" });
});
