import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * What a clean `npm ci` on Node 20 prints is decided by the lockfile and `package.json`
 * (README, "What `npm ci` prints on Node 20"): these tests keep the explanation true.
 */
interface Locked {
  version?: string;
  dev?: boolean;
  engines?: { node?: string };
  hasInstallScript?: boolean;
}

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  engines: { node: string };
  allowScripts?: Record<string, boolean>;
};
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as {
  packages: Record<string, Locked>;
};
const installed = Object.entries(lock.packages).filter(([path]) => path !== "");
const nameOf = (path: string) => path.slice(path.lastIndexOf("node_modules/") + 13);

const NODE_20 = [20, 20, 2];

/** `1.2.3` (missing parts 0) as numbers. */
const triple = (v: string) => [...v.split("."), "0", "0"].slice(0, 3).map((n) => Number(n) || 0);

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** One comparator of an engines range (`>=18`, `^20.19.0`, `<23`, `18.x`) against `v`. */
function satisfies(v: number[], comparator: string): boolean {
  const [, op = "", ver = ""] = /^(>=|<=|>|<|\^|~|=)?\s*v?([\d.x*]+)$/.exec(comparator) ?? [];
  if (ver === "")
    throw new Error(`an engines.node comparator this test does not read: ${comparator}`);
  const c = compare(v, triple(ver.replace(/[x*]/g, "0")));
  const major = Number(ver.split(".")[0]);
  if (op === ">=") return c >= 0;
  if (op === ">") return c > 0;
  if (op === "<=") return c <= 0;
  if (op === "<") return c < 0;
  if (op === "^" || op === "~" || ver.includes("x")) return c >= 0 && v[0] === major;
  return c === 0;
}

/** Whether an `engines.node` range admits Node 20 (the release CI runs). */
function admitsNode20(range: string): boolean {
  return range.split("||").some((alt) =>
    alt
      .trim()
      .replace(/(>=|<=|>|<|\^|~|=)\s+/g, "$1")
      .split(/\s+/)
      .every((comparator) => satisfies(NODE_20, comparator)),
  );
}

describe("a clean npm ci on Node 20", () => {
  it("every runtime dependency supports the Node our engines field names", () => {
    expect(pkg.engines.node).toBe(">=20");
    const tooNew = installed
      .filter(([, p]) => !p.dev && p.engines?.node !== undefined)
      .filter(([, p]) => !admitsNode20(p.engines!.node!))
      .map(([path]) => nameOf(path));
    expect(tooNew).toEqual([]);
  });

  it("the only packages that want a newer Node are the dev dependencies the README names", () => {
    const wanting = installed
      .filter(([, p]) => p.engines?.node !== undefined && !admitsNode20(p.engines.node))
      .map(([path, p]) => `${nameOf(path)}@${p.version}`)
      .sort();
    expect(wanting).toEqual([
      "@anthropic-ai/claude-code@2.1.332",
      "@modelcontextprotocol/inspector@2.12.0",
      "commander@15.1.0",
      "undici@8.13.1",
    ]);
    const readme = readFileSync("README.md", "utf8");
    for (const name of ["@anthropic-ai/claude-code", "@modelcontextprotocol/inspector"]) {
      expect(readme).toContain(`\`${name}\``);
    }
  });

  it("every package with an install script has a decision in allowScripts, and only those", () => {
    const scripted = [
      ...new Set(installed.filter(([, p]) => p.hasInstallScript).map(([path]) => nameOf(path))),
    ];
    expect(Object.keys(pkg.allowScripts ?? {}).sort()).toEqual(scripted.sort());
    expect(installed.filter(([, p]) => p.hasInstallScript && !p.dev)).toEqual([]);
  });
});
