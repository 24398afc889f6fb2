import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generatedDocs, splice } from "../scripts/harness-tables.js";
import { HOSTS } from "../src/hosts/index.js";

/*
 * The per-harness tables of docs/first-run.md and docs/delivery.md are written from the hosts'
 * profiles, setup, doctor, the agent tests and the agent-wake bench (scripts/harness-tables.ts):
 * a host added or changed without `npm run docs:harnesses` leaves its docs behind, and fails here.
 */
describe("the docs' per-harness tables", () => {
  it("are what npm run docs:harnesses writes now", async () => {
    for (const [path, text] of Object.entries(await generatedDocs())) {
      expect(readFileSync(path, "utf8"), `${path} (npm run docs:harnesses)`).toBe(text);
    }
  });

  it("have a row, a first run and a measured wake for every host", async () => {
    const firstRun = (await generatedDocs())["docs/first-run.md"]!;
    for (const host of HOSTS) {
      const line = firstRun.split("\n").find((l) => l.startsWith(`| ${host.title} `));
      expect(line, host.title).toBeDefined();
      expect(line, host.title).not.toContain("not measured");
      expect(line, host.title).toContain("`first-run`");
    }
  });

  it("replace only what lies between their marks", () => {
    const doc = "a\n<!-- generated: t (npm run docs:harnesses) -->\nold\n<!-- end: t -->\nb\n";
    expect(splice(doc, "t", "new")).toBe(
      "a\n<!-- generated: t (npm run docs:harnesses) -->\nnew\n<!-- end: t -->\nb\n",
    );
    expect(() => splice("no marks", "t", "new")).toThrow(/no "<!-- generated: t/);
  });
});
