import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * No function in src/ runs over 100 lines: a body that long (a registration function of every
 * command, a router of every route) is split into one small function per thing it does.
 */
const SRC = resolve(import.meta.dirname, "../src");
const MAX_BODY_LINES = 100;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Every function, method, arrow and accessor of a file with a body: where, and its lines. */
function functionBodies(path: string): Array<{ at: string; lines: number }> {
  const file = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => file.getLineAndCharacterOfPosition(pos).line;
  const out: Array<{ at: string; lines: number }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const body = node.body as ts.Node;
      const first = lineOf(body.getStart(file));
      out.push({
        at: `${relative(SRC, path)}:${first + 1}`,
        lines: lineOf(body.getEnd()) - first + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

describe("function length", () => {
  const bodies = sourceFiles(SRC).flatMap(functionBodies);

  it("finds the functions of src/", () => {
    // A parse that found nothing would pass the rule below without checking it.
    expect(bodies.length).toBeGreaterThan(1000);
  });

  it(`no function body in src/ is over ${MAX_BODY_LINES} lines`, () => {
    const long = bodies.filter((b) => b.lines > MAX_BODY_LINES).map((b) => `${b.at} (${b.lines})`);
    expect(long).toEqual([]);
  });
});
