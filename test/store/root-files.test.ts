import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isAgentChatError } from "../../src/core/errors.js";
import { listRealDir, removeTreeSync } from "../../src/fsutil/root-files.js";
import { tempDir } from "../helpers/tmp.js";

let dir: string;
let cleanup: () => void;
let outside: string;
beforeEach(() => {
  ({ dir, cleanup } = tempDir("agent-chat-root-files-"));
  outside = join(dir, "outside");
  mkdirSync(join(outside, "keep"), { recursive: true });
  writeFileSync(join(outside, "keep", "precious.txt"), "precious");
  writeFileSync(join(outside, "file.txt"), "file");
});
afterEach(() => cleanup());

const unsafe = (e: unknown) => isAgentChatError(e, "UNSAFE_FILE");

describe("listRealDir", () => {
  it("says what each entry is without following links, and refuses a folder that is a link", () => {
    const d = join(dir, "d");
    mkdirSync(join(d, "sub"), { recursive: true });
    writeFileSync(join(d, "a.md"), "a");
    symlinkSync(outside, join(d, "link"));
    execFileSync("mkfifo", [join(d, "pipe")]);
    const kinds = Object.fromEntries(listRealDir(d).map((e) => [e.name, e.kind]));
    expect(kinds).toEqual({ sub: "dir", "a.md": "file", link: "link", pipe: "other" });
    symlinkSync(outside, join(dir, "alias"));
    expect(() => listRealDir(join(dir, "alias"))).toThrow(expect.toSatisfy(unsafe));
  });
});

describe("removeTreeSync", () => {
  it("removes a real tree, its links only as links, and nothing they point to", () => {
    const t = join(dir, "tree");
    mkdirSync(join(t, "a", "b"), { recursive: true });
    writeFileSync(join(t, "a", "b", "x.md"), "x");
    symlinkSync(outside, join(t, "a", "to-dir"));
    symlinkSync(join(outside, "file.txt"), join(t, "a", "b", "to-file"));
    execFileSync("mkfifo", [join(t, "pipe")]);
    removeTreeSync(t);
    expect(existsSync(t)).toBe(false);
    expect(readdirSync(outside).sort()).toEqual(["file.txt", "keep"]);
    expect(readFileSync(join(outside, "keep", "precious.txt"), "utf8")).toBe("precious");
    expect(readFileSync(join(outside, "file.txt"), "utf8")).toBe("file");
  });

  it("refuses a path that is itself a link, and leaves both the link and its target", () => {
    symlinkSync(outside, join(dir, "alias"));
    expect(() => removeTreeSync(join(dir, "alias"))).toThrow(expect.toSatisfy(unsafe));
    expect(readdirSync(join(dir, "alias")).sort()).toEqual(["file.txt", "keep"]);
  });
});
