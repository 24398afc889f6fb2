import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * docs/design.md §3: dependencies point one way, core ← store ← client ← {daemon, mcp, viewer,
 * workspace, cli}; the four peers never import each other and nothing imports cli/ (only cli/
 * composes the peers). This reads every import of src/ — static, `export … from`, `import type`
 * and dynamic `import()` — so that a folder could later become a package of its own.
 */
const SRC = resolve(import.meta.dirname, "../src");

/** What each layer may import besides itself. `index` is src/index.ts, the library's entry. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  fsutil: ["core"],
  store: ["core", "fsutil"],
  client: ["core", "fsutil", "store"],
  daemon: ["core", "fsutil", "store", "client"],
  mcp: ["core", "fsutil", "store", "client"],
  viewer: ["core", "fsutil", "store", "client"],
  workspace: ["core", "fsutil", "store", "client"],
  index: ["core", "fsutil", "store", "client"],
  cli: ["core", "fsutil", "store", "client", "daemon", "mcp", "viewer", "workspace"],
};

/** core is pure: no file system, no network. */
const CORE_FORBIDDEN = /^node:(fs|fs\/promises|net)$/;

interface Edge {
  file: string;
  specifier: string;
  from: string;
  /** The layer the import resolves into; undefined for a package or a Node built-in. */
  to: string | undefined;
  /** The file the import resolves to, relative to src/ (for a relative import). */
  target: string | undefined;
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
      target: specifier.startsWith(".")
        ? relative(SRC, resolve(dirname(path), specifier)).replace(/\.js$/, ".ts")
        : undefined,
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

describe("layering (docs/design.md §3)", () => {
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

  it("a folder inside a layer is entered from other layers only through its index.ts", () => {
    // store/fs/ and store/nats/ are backends and store/core/ the logic above them: they are
    // entered through their index.ts even from the rest of store/, so that no backend leans on
    // another's internals. A layer's own top-level files (store/types.ts, daemon/server.ts) stay
    // open to the layers above it; cli/ composes its own subfolders as it likes.
    const deep = all.filter((e) => {
      if (e.target === undefined) return false;
      const folder = dirname(e.target);
      if (!folder.includes(sep)) return false; // a layer's top-level file
      if (e.from === e.to && e.to !== "store") return false;
      const home = dirname(e.file);
      const inside = home === folder || home.startsWith(`${folder}${sep}`);
      return !inside && !e.target.endsWith(`${sep}index.ts`);
    });
    expect(deep.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
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
