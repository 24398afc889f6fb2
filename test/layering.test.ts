import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * docs/architecture.md: dependencies point one way, core ← fsutil ← store ⇄ features ← client ←
 * {daemon, mcp, viewer, workspace, hosts} ← cli; the five peers never import each other and nothing
 * imports cli/ (only cli/ composes the peers). A feature (src/features/<name>/) is one folder
 * cut across the layers: its cli.ts and cli-*.ts belong to the cli layer, its mcp.ts to the mcp
 * layer, the rest to the features layer. This reads every import of src/ — static,
 * `export … from`, `import type` and dynamic `import()` — so that a folder could later become a
 * package of its own.
 */
const SRC = resolve(import.meta.dirname, "../src");

/** The ways in, which may import everything below them. */
const BELOW_THE_WAYS_IN = ["core", "fsutil", "store", "features", "client"];

/**
 * What each layer may import besides itself. `index` is src/index.ts, the library's entry. A
 * feature runs over the store's contract and its message core; the store imports the features
 * only in feature-store.ts, where it composes them over the core (see below): the records a
 * backend keeps for them (a lease document, presence notes) are store/records/.
 */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  fsutil: ["core"],
  store: ["core", "fsutil", "features"],
  features: ["core", "fsutil", "store"],
  client: ["core", "fsutil", "store", "features"],
  daemon: BELOW_THE_WAYS_IN,
  mcp: BELOW_THE_WAYS_IN,
  viewer: BELOW_THE_WAYS_IN,
  workspace: BELOW_THE_WAYS_IN,
  hosts: BELOW_THE_WAYS_IN,
  index: BELOW_THE_WAYS_IN,
  cli: [...BELOW_THE_WAYS_IN, "daemon", "mcp", "viewer", "workspace", "hosts"],
};

/** The message core and the Store contract: what every backend and feature stands on. */
const MESSAGE_CORE = [/^store\/shared\//, /^store\/types\.ts$/, /^store\/find-types\.ts$/];

/**
 * Each feature, its docs page, and declarations that must live in its folder and nowhere else:
 * its store part, its CLI commands and its MCP part, so that a feature is found in one place.
 */
const FEATURES: Record<string, { docs: string; owns: string[] }> = {
  delivery: {
    docs: "docs/delivery.md",
    owns: [
      "class Delivery",
      "class DeliveryQueries",
      "function deliveryExtension",
      "function registerDeliveryCommands",
      "class NotifiedRecorder",
    ],
  },
  governance: {
    docs: "docs/governance.md",
    owns: [
      "function governanceOf",
      "function govern",
      "function guardPost",
      "class PolicyPins",
      "function registerGovernanceCommands",
      "function registerPolicyCommands",
    ],
  },
  leases: {
    docs: "docs/leases.md",
    owns: [
      "class PathLeaseBook",
      "function pathLeaseExtension",
      "function blockedPaths",
      "function registerLeaseCommands",
      "function registerGuardCommand",
      "function leaseAction",
    ],
  },
  search: {
    docs: "docs/search.md",
    owns: [
      "class Searcher",
      "function parseQuery",
      "function agentsToKeep",
      "function registerFindCommands",
      "function findText",
    ],
  },
  trust: {
    docs: "docs/signatures.md",
    owns: [
      "function signedStore",
      "function signerFor",
      "function createIdentity",
      "function fileTrust",
      "function registerIdentityCommands",
    ],
  },
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
  if (parts[0] === "features" && parts.length > 2) {
    const file = parts[2]!.replace(/\.(ts|js)$/, "");
    if (file === "cli" || file.startsWith("cli-")) return "cli";
    if (file === "mcp" || file.startsWith("mcp-")) return "mcp";
  }
  return parts.length === 1 ? parts[0]!.replace(/\.ts$/, "") : parts[0]!;
}

/** The feature a file of src/ belongs to (relative to src/), if any. */
function featureOf(file: string): string | undefined {
  const parts = file.split(sep);
  return parts[0] === "features" && parts.length > 2 ? parts[1] : undefined;
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

/** The strongly connected groups of more than one file in src/'s import graph (Tarjan). */
function importCycles(): string[][] {
  const next = new Map<string, string[]>();
  for (const e of all) {
    if (e.target === undefined) continue;
    next.set(e.file, [...(next.get(e.file) ?? []), e.target]);
  }
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    for (const to of next.get(file) ?? []) {
      if (!order.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (stack.includes(to)) low.set(file, Math.min(low.get(file)!, order.get(to)!));
    }
    if (low.get(file) !== order.get(file)) return;
    const group = stack.splice(stack.indexOf(file));
    if (group.length > 1) cycles.push(group.sort());
  };
  for (const file of next.keys()) if (!order.has(file)) visit(file);
  return cycles;
}

function violations(layer: string): string[] {
  const allowed = new Set([layer, ...ALLOWED[layer]!]);
  return all
    .filter((e) => e.from === layer && e.to !== undefined && !allowed.has(e.to))
    .map((e) => `${e.file} imports ${e.specifier} (${e.to})`);
}

describe("layering (docs/architecture.md)", () => {
  it("sees the imports it judges, in folders it knows", () => {
    // A scanner that found nothing would pass every rule below.
    expect(all.filter((e) => e.to !== undefined).length).toBeGreaterThan(100);
    expect(all).toContainEqual(
      expect.objectContaining({ from: "cli", to: "client", specifier: "../client/open.js" }),
    );
    // The agent tools' integration (setup, doctor, hooks, wake) is a peer of the MCP server.
    expect(all).toContainEqual(expect.objectContaining({ from: "cli", to: "hosts" }));
    // A feature's CLI commands are judged as the cli layer, its library part as features.
    expect(all).toContainEqual(
      expect.objectContaining({ file: join("features", "leases", "cli.ts"), from: "cli" }),
    );
    expect(all).toContainEqual(
      expect.objectContaining({ file: join("store", "feature-store.ts"), to: "features" }),
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
    // store/fs/ and store/nats/ are backends and store/shared/ the logic above them: they are
    // entered through their index.ts even from the rest of store/, so that no backend leans on
    // another's internals. A layer's own top-level files (store/types.ts, daemon/server.ts) stay
    // open to the layers above it; cli/ composes its own subfolders as it likes.
    const deep = all.filter((e) => {
      if (e.target === undefined || featureOf(e.target) !== undefined) return false;
      const folder = dirname(e.target);
      if (!folder.includes(sep)) return false; // a layer's top-level file
      if (e.from === e.to && e.to !== "store") return false;
      const home = dirname(e.file);
      const inside = home === folder || home.startsWith(`${folder}${sep}`);
      return !inside && !e.target.endsWith(`${sep}index.ts`);
    });
    expect(deep.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("the store imports the features only where it composes them, feature-store.ts (issue 41)", () => {
    // The records a backend keeps for a feature are store/records/; a backend imports no feature.
    const intoFeatures = all.filter(
      (e) =>
        e.from === "store" && e.to === "features" && e.file !== join("store", "feature-store.ts"),
    );
    expect(intoFeatures.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("nothing outside cli/ imports cli/", () => {
    const intoCli = all.filter((e) => e.to === "cli" && e.from !== "cli");
    expect(intoCli.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("src/ has no import cycles, type-only imports included (issue 41)", () => {
    // A cycle makes two files one unit: neither can be read, tested or moved without the other.
    expect(importCycles().map((group) => group.join(", "))).toEqual([]);
  });

  it("core uses neither the file system nor the network", () => {
    const impure = all.filter((e) => e.from === "core" && CORE_FORBIDDEN.test(e.specifier));
    expect(impure.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("src/ reaches none of Node's internals: public APIs only (issue 39)", () => {
    // Node's internal bindings change in any release and warn under --pending-deprecation.
    const internal =
      /\bprocess\s*\.\s*(binding|_linkedBinding)\b|\binternalBinding\b|node:internal\//;
    const reaching = sourceFiles(SRC)
      .filter((file) => internal.test(readFileSync(file, "utf8")))
      .map((file) => relative(SRC, file));
    expect(reaching).toEqual([]);
  });
});

describe('features as modules (docs/architecture.md, "Features")', () => {
  it("the message core and the Store contract import no feature", () => {
    const core = all.filter(
      (e) => MESSAGE_CORE.some((re) => re.test(e.file.split(sep).join("/"))) && e.target,
    );
    expect(core.length).toBeGreaterThan(10);
    const intoFeatures = core.filter((e) => featureOf(e.target!) !== undefined);
    expect(intoFeatures.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("a feature is entered through its index.ts (its CLI and MCP parts by those layers)", () => {
    const wrong = all.filter((e) => {
      const into = e.target === undefined ? undefined : featureOf(e.target);
      if (into === undefined || featureOf(e.file) === into) return false;
      if (e.target!.endsWith(`${sep}index.ts`)) return false;
      const part = layerOf(join(SRC, e.target!));
      return (
        !(part === "cli" && e.from === "cli") &&
        !(part === "mcp" && ["cli", "mcp"].includes(e.from))
      );
    });
    expect(wrong.map((e) => `${e.file} imports ${e.specifier}`)).toEqual([]);
  });

  it("each feature is one folder with an index.ts that links its docs page", () => {
    const folders = readdirSync(join(SRC, "features")).sort();
    expect(folders).toEqual(Object.keys(FEATURES).sort());
    for (const [name, { docs }] of Object.entries(FEATURES)) {
      const index = readFileSync(join(SRC, "features", name, "index.ts"), "utf8");
      expect(index.startsWith("/**"), name).toBe(true);
      expect(index, name).toContain(docs.replace(/^docs\//, ""));
      expect(readFileSync(resolve(SRC, "..", docs), "utf8").length, docs).toBeGreaterThan(0);
    }
  });

  it.each(Object.entries(FEATURES))(
    "%s's store part, CLI commands and MCP part live in its folder",
    (name, { owns }) => {
      const declared = new Map<string, string[]>();
      for (const path of sourceFiles(SRC)) {
        const text = readFileSync(path, "utf8");
        for (const declaration of owns) {
          if (new RegExp(`^export (async )?${declaration}\\b`, "m").test(text)) {
            declared.set(declaration, [...(declared.get(declaration) ?? []), relative(SRC, path)]);
          }
        }
      }
      for (const declaration of owns) {
        const where = declared.get(declaration) ?? [];
        expect(where, declaration).toHaveLength(1);
        expect(featureOf(where[0]!), `${declaration} in ${where[0]}`).toBe(name);
      }
    },
  );
});
