import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * docs/architecture.md walks one message from the CLI to the disk to a waiter. Each of its ```sh
 * blocks is run here as a reader would paste it, in a shell (`set -e`) whose `agent-chat` is the
 * built CLI and whose root is a fresh folder: a doc whose example a user cannot run is caught
 * here, not by the user.
 */
const DOC = new URL("../../docs/architecture.md", import.meta.url);

function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe("docs/architecture.md's commands", () => {
  const tmp = tempDir();
  const bin = join(tmp.dir, "bin");
  const root = join(tmp.dir, "root");

  beforeAll(() => {
    mkdirSync(bin);
    const shim = join(bin, "agent-chat");
    writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(shim, 0o755);
  });
  afterAll(() => tmp.cleanup());

  const blocks = shellBlocks(readFileSync(DOC, "utf8"));

  it("show the message's journey: a post and the wait that receives it", () => {
    expect(blocks.some((block) => /^agent-chat post dev\b/m.test(block))).toBe(true);
    expect(blocks.some((block) => /^agent-chat wait dev\b/m.test(block))).toBe(true);
  });

  it("run on a fresh root, each block exiting 0", () => {
    const env = {
      ...process.env,
      PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
      AGENT_CHAT_ROOT: root,
      AGENT_CHAT_NAME: undefined,
    };
    for (const block of blocks) {
      const run = spawnSync("sh", ["-e", "-c", block], { env, encoding: "utf8", timeout: 90_000 });
      expect({ block, code: run.status, stderr: run.stderr }).toEqual({
        block,
        code: 0,
        stderr: "",
      });
    }
    // The wait received what the post wrote: the journey ends at Bob.
    const peek = spawnSync("sh", ["-c", "agent-chat --json read dev --as bob --all --peek"], {
      env,
      encoding: "utf8",
    });
    expect(peek.stdout).toContain("build is green");
  });
});
