import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * A root on a disk that is full, or mounted read-only: a small tmpfs of its own (tests run as
 * root, as CI does). The error says what is wrong in words, and nothing is acknowledged.
 */
let tmp: ReturnType<typeof tempDir>;
const mount = (...args: string[]) => execFileSync("mount", args);

beforeEach(() => {
  tmp = tempDir();
  mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", tmp.dir);
});

afterEach(() => {
  execFileSync("umount", [tmp.dir]);
  tmp.cleanup();
});

const cli = (args: string[]) => runCli(args, { root: tmp.dir });

describe("a root that cannot be written", () => {
  it("on a full disk: 'the disk is full', and the post is not acknowledged", async () => {
    expect((await cli(["init", "c", "--members", "a,b"])).code).toBe(0);
    writeFileSync(join(tmp.dir, "filler"), Buffer.alloc(60 * 1024));
    const r = await cli(["post", "c", "--from", "a", "--body", "x".repeat(8000)]);
    expect(r).toMatchObject({ code: 1, stdout: "" });
    expect(r.stderr).toMatch(
      /^agent-chat: cannot write message to .*: the disk is full \(ENOSPC\)\n$/,
    );
  });

  it("read-only: 'the file system is read-only', for a post and a new channel", async () => {
    expect((await cli(["init", "c", "--members", "a,b"])).code).toBe(0);
    mount("-o", "remount,ro", tmp.dir);
    const post = await cli(["post", "c", "--from", "a", "--body", "hi"]);
    expect(post).toMatchObject({ code: 1, stdout: "" });
    expect(post.stderr).toMatch(/: the file system is read-only \(EROFS\)\n$/);
    const init = await cli(["init", "d"]);
    expect(init.stderr).toBe(
      "agent-chat: cannot create channel d: the file system is read-only (EROFS)\n",
    );
  });
});
