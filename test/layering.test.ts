import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * DESIGN.md §3: dependencies point one way, core ← store ← client ← {daemon, mcp, viewer,
 * workspace, cli}; the four peers never import each other and nothing imports cli/ (only cli/
 * composes the peers). This reads every import of src/ — static, `export … from`, `import type`
 * and dynamic `import()` — so that a folder could later become a package of its own.
 */
const SRC = resolve(import.meta.dirname, "../src");

/** What each layer may import besides itself. `index` is src/index.ts, the library's entry. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  store: ["core"],
  client: ["core", "store"],
  daemon: ["core", "store", "client"],
  mcp: ["core", "store", "client"],
  viewer: ["core", "store", "client"],
  workspace: ["core", "store", "client"],
  index: ["core", "store", "client"],
  cli: ["core", "store", "client", "daemon", "mcp", "viewer", "workspace"],
};

/** core is pure: no file system, no network. */
const CORE_FORBIDDEN = /^node:(fs|fs\/promises|net)$/;

interface Edge {
  file: string;
  specifier: string;
  from: string;
  /** The layer the import resolves into; undefined for a package or a Node built-in. */
  to: string | undefined;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

function layerOf(path: string): string {
  const parts = relative(SRC, path).split(sep);
  return parts.length === 1 ? parts[0]!.replace(/\.ts$/, "") : parts[0]!;
}

function edges(): Edge[] {
  return sourceFiles(SRC).flatMap((path) => {
    const info = ts.preProcessFile(readFileSync(path, "utf8"), true, true);
    return info.importedFiles.map(({ fileName: specifier }) => ({
      file: relative(SRC, path),
      specifier,
      from: layerOf(path),
      to: specifier.startsWith(".") ? layerOf(resolve(dirname(path), specifier)) : undefined,
    }));
  });
}

const all = edges();

function violations(layer: string): string[] {
  const allowed = new Set([layer, ...ALLOWED[layer]!]);
  return all
    .filter((e) => e.from === layer && e.to !== undefined && !allowed.has(e.to))
    .map((e) => `${e.file} imports ${e.specifier} (${e.to})`);
}

describe("layering (DESIGN.md §3)", () => {
  it("sees the imports it judges, in folders it knows", () => {
    // A scanner that found nothing would pass every rule below.
    expect(all.filter((e) => e.to !== undefined).length).toBeGreaterThan(100);
    expect(all).toContainEqual(
      expect.objectContaining({ from: "cli", to: "client", specifier: "../client/open.js" }),
    );
    expect(all.some((e) => e.specifier === "@modelcontextprotocol/sdk/server/mcp.js")).toBe(true);
    // A new top-level folder must be given its place in the layering here.
    const unknown = [...new Set(all.map((e) => e.from))].filter((l) => !(l in ALLOWED));
    expect(unknown).toEqual([]);
  });

  it.each(Object.keys(ALLOWED))("%s imports only what lies below it", (layer) => {
    expect(violations(layer)).toEqual([]);
  });

  it("nothing outside cli/ imports cli/", () => {
    const intoCli = all.filter((e) => e.to === "cli" && e.from !== "cli");
    expect(intoCli.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("core uses neither the file system nor the network", () => {
    const impure = all.filter((e) => e.from === "core" && CORE_FORBIDDEN.test(e.specifier));
    expect(impure.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });
});
