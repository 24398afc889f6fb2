import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * What a clean `npm ci` prints on the supported Node lines is decided by the lockfile and
 * `package.json` (README, "Which Node"): these tests keep it free of EBADENGINE warnings on the
 * two Node versions CI tests with, the floor and the current LTS, which `.ci/run` pins.
 */
interface Locked {
  version?: string;
  dev?: boolean;
  engines?: { node?: string };
  hasInstallScript?: boolean;
  os?: string[];
  cpu?: string[];
}

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  engines: { node: string };
  allowScripts?: Record<string, boolean>;
};
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as {
  packages: Record<string, Locked>;
};
/** What npm installs here: a package for another system or processor it leaves out (unread). */
const installed = Object.entries(lock.packages).filter(
  ([path, p]) =>
    path !== "" &&
    (p.os === undefined || p.os.includes(process.platform)) &&
    (p.cpu === undefined || p.cpu.includes(process.arch)),
);
const nameOf = (path: string) => path.slice(path.lastIndexOf("node_modules/") + 13);

/** The versions `.ci/run` installs and tests with (`NODE_FLOOR=…`, `NODE_LTS=…`). */
const ciRun = readFileSync(".ci/run", "utf8");
const pinned = (name: string) => {
  const version = new RegExp(`^${name}=(\\d+\\.\\d+\\.\\d+)$`, "m").exec(ciRun)?.[1];
  if (!version) throw new Error(`.ci/run pins no ${name}`);
  return version;
};
const TESTED = [pinned("NODE_FLOOR"), pinned("NODE_LTS")];

/** `1.2.3` (missing parts 0) as numbers. */
const triple = (v: string) => [...v.split("."), "0", "0"].slice(0, 3).map((n) => Number(n) || 0);

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** One comparator of an engines range (`>=18`, `^20.19.0`, `<23`, `18.x`) against `v`. */
function satisfies(v: number[], comparator: string): boolean {
  if (comparator === "*" || comparator === "x") return true; // any version
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

/** Whether an `engines.node` range admits the Node version `v`. */
function admits(range: string, v: string): boolean {
  return range.split("||").some((alt) =>
    alt
      .trim()
      .replace(/(>=|<=|>|<|\^|~|=)\s+/g, "$1")
      .split(/\s+/)
      .every((comparator) => satisfies(triple(v), comparator)),
  );
}

describe.each(TESTED)("a clean npm ci on Node %s", (version) => {
  it("our engines field admits it, and no package installed refuses it", () => {
    expect(admits(pkg.engines.node, version)).toBe(true);
    const refusing = installed
      .filter(([, p]) => p.engines?.node !== undefined && !admits(p.engines.node, version))
      .map(([path, p]) => `${nameOf(path)}@${p.version} wants ${p.engines!.node}`);
    expect(refusing).toEqual([]);
  });
});

describe("the supported Node lines", () => {
  it("are the even lines from the floor CI tests, no end-of-life line and no odd one", () => {
    const [floor] = TESTED;
    expect(floor!.startsWith("22.")).toBe(true);
    for (const v of ["20.20.2", "21.7.3", "22.18.0", "23.11.0", "25.2.1"]) {
      expect(admits(pkg.engines.node, v), v).toBe(false);
    }
    for (const v of [floor!, "22.23.5", "24.0.0", "24.22.3", "26.12.1", "28.0.0"]) {
      expect(admits(pkg.engines.node, v), v).toBe(true);
    }
  });
});

describe("install scripts", () => {
  it("every package with an install script has a decision in allowScripts, and only those", () => {
    const scripted = [
      ...new Set(installed.filter(([, p]) => p.hasInstallScript).map(([path]) => nameOf(path))),
    ];
    expect(Object.keys(pkg.allowScripts ?? {}).sort()).toEqual(scripted.sort());
    expect(installed.filter(([, p]) => p.hasInstallScript && !p.dev)).toEqual([]);
  });
});
