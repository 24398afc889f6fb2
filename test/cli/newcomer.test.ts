import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/** What a person new to the CLI expects of it (issue 44, item 8). */
let tmp: ReturnType<typeof tempDir>;
const cli = (args: string[]) => runCli(args, { root: tmp.dir });

beforeEach(async () => {
  tmp = tempDir();
  expect((await cli(["init", "review", "--members", "alice,bob"])).code).toBe(0);
});

afterEach(() => tmp.cleanup());

describe("usage errors", () => {
  it.each([
    [["bogus"]],
    [["read", "review"]],
    [["read", "review", "--as", "bob", "--bogus"]],
    [["init"]],
    [["--max-body", "abc", "channels"]],
    [["lease", "take"]],
  ])("%j is one line `agent-chat: …` on stderr, exit 64", async (args) => {
    const r = await cli(args);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/^agent-chat: [^\n]+\n$/);
    expect(r.stderr).not.toMatch(/error:/);
  });
});

describe("the version", () => {
  const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
  it.each([[["version"]], [["-v"]], [["-V"]], [["--version"]], [["--root", "/nowhere", "-v"]]])(
    "%j prints it",
    async (args) => {
      expect(await cli(args)).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
    },
  );
});
