import { describe, expect, it } from "vitest";
import {
  blockedPaths,
  normalizePattern,
  patternsOverlap,
} from "../../src/features/leases/path-globs.js";

describe("path lease patterns", () => {
  it("are put in one form, and refused when they could leave the repository", async () => {
    expect(await normalizePattern("./src/store/")).toBe("src/store");
    for (const bad of [
      "../x",
      "a/../../x",
      "/abs",
      "C:/x",
      "a\\b",
      "{..,a}/x",
      "@(..)/x",
      "!a",
      " ",
    ]) {
      await expect(normalizePattern(bad), bad).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
  });

  it.each([
    ["src/store/**", "src/store/fs.ts", true],
    ["src/store", "src/store/fs.ts", true], // a literal folder covers what is under it
    ["src/a.ts", "src/a.ts", true],
    ["src/a.ts", "src/b.ts", false],
    ["src/*.ts", "src/a.ts", true],
    ["src/*.ts", "src/a.md", false],
    ["src/*.ts", "src/a", false], // nothing under the folder src/a has one segment after src
    ["src/*/x.ts", "src/a", true],
    ["src/**", "docs/**", false],
    ["**/*.ts", "docs/x.md", true], // `**` is unbounded: docs/x.md/y.ts could exist
    ["*.md", "README.md", true],
    ["src/*.ts", "src/*.md", true], // two globs on one line: refused together (documented)
    ["{src,lib}/a.ts", "lib/a.ts", true],
    ["{src,lib}/a.ts", "test/a.ts", false],
    ["{src,lib}/*.ts", "test/*.md", true], // braces have no static base: sound, not exact
  ])("%s and %s overlap: %s", async (a, b, expected) => {
    expect(await patternsOverlap(a, b)).toBe(expected);
    expect(await patternsOverlap(b, a)).toBe(expected);
  });

  it("the guard is blocked only by others' live exclusive leases, dot files included", async () => {
    const lease = (holder: string, pattern: string, exclusive = true, state = "live") => ({
      token: 1,
      holder,
      pattern,
      exclusive,
      state,
      expiresAt: "2030-01-01T00:00:00.000Z",
    });
    const leases = [
      lease("bob", "src/**"),
      lease("carol", "docs/**", false),
      lease("dave", "README.md", true, "expired"),
    ];
    const paths = ["src/.env", "docs/a.md", "README.md", "x"];
    expect((await blockedPaths(leases, paths, "eve")).map((b) => b.path)).toEqual(["src/.env"]);
    expect(await blockedPaths(leases, paths, "bob")).toEqual([]);
  });
});
