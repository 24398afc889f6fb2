import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The newcomer's checklists (docs/architecture.md, "How to add a message field" and "How to add
 * a command"; docs/daemon.md, "how to add an operation") name files and what lies in them. A
 * file moved or a name changed without its checklist leaves a newcomer reading the wrong place:
 * every path they name must exist, and every name given "in `path`" or "(`path`)" be in it.
 */
const REPO = resolve(import.meta.dirname, "..");

const CHECKLISTS: ReadonlyArray<[doc: string, heading: string]> = [
  ["docs/architecture.md", "## How to add a message field"],
  ["docs/architecture.md", "## How to add a command"],
  ["docs/daemon.md", "## The operation table, and how to add an operation"],
];

/** The section under `heading`, up to the next heading of its level. */
function section(doc: string, heading: string): string {
  const text = readFileSync(resolve(REPO, doc), "utf8");
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${doc} has no "${heading}"`);
  const end = text.indexOf("\n## ", start + heading.length + 2);
  return text.slice(start, end < 0 ? undefined : end);
}

const PATH = String.raw`((?:src|test)/[\w/.-]+)`;
const NAME = String.raw`\x60([A-Za-z_]\w*)\x60`;

/** [name, path] for each `name` in `path`, `a`, `b` and `c` in `path`, and `name` (`path`). */
function namedIn(text: string): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  const list = new RegExp(
    String.raw`((?:${NAME}(?:,\s+|\s+and\s+))*${NAME})\s+in\s+\x60${PATH}\x60`,
    "g",
  );
  for (const m of text.matchAll(list)) {
    const path = m.at(-1)!;
    for (const name of m[1]!.matchAll(new RegExp(NAME, "g"))) pairs.push([name[1]!, path]);
  }
  for (const m of text.matchAll(new RegExp(String.raw`${NAME}\s+\(\x60${PATH}\x60\)`, "g"))) {
    pairs.push([m[1]!, m[2]!]);
  }
  return pairs;
}

describe("the docs' checklists for a newcomer", () => {
  it("read the names given in a path, in each form the checklists use", () => {
    expect(namedIn("`a`, `b` and `c` in `src/x.ts`; `d` (`test/y.ts`)")).toEqual([
      ["a", "src/x.ts"],
      ["b", "src/x.ts"],
      ["c", "src/x.ts"],
      ["d", "test/y.ts"],
    ]);
  });

  it.each(CHECKLISTS)(
    "%s, %s: every file named exists and holds what is named in it",
    (doc, heading) => {
      const text = section(doc, heading);
      const paths = [...text.matchAll(new RegExp(`\x60${PATH}\x60`, "g"))].map((m) => m[1]!);
      expect(paths.length, "names no file").toBeGreaterThan(2);
      expect(paths.filter((p) => !existsSync(resolve(REPO, p)))).toEqual([]);
      const pairs = namedIn(text);
      expect(pairs.length, "names nothing in a file").toBeGreaterThan(0);
      const missing = pairs.filter(
        ([name, path]) =>
          !new RegExp(`\\b${name}\\b`).test(readFileSync(resolve(REPO, path), "utf8")),
      );
      expect(missing.map(([name, path]) => `${name} in ${path}`)).toEqual([]);
    },
  );
});
