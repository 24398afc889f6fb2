import { describe, expect, it } from "vitest";
import { compare, countsByFile, type Expectation, loadExpectations } from "./expectations.js";

// The judge of chat.py's own tests on ours: what makes it fail, and what it only reports.
describe("comparing a run of chat.py's own tests with the expectation file", () => {
  const expectations: Record<string, Expectation> = {
    "test_tasks.py::A::test_kept": "pass",
    "test_tasks.py::A::test_broken": "pass",
    "test_tasks.py::A::test_mended": { fail: "not built yet" },
    "test_tasks.py::A::test_patches": { "n/a": "patches chat.py's internals" },
    "test_tasks.py::A::test_gone": "pass",
  };
  const passed = { outcome: "passed", message: "" } as const;

  it("names a test expected to pass that failed or skipped, and one not run or not listed", () => {
    const result = compare(expectations, {
      "test_tasks.py::A::test_kept": passed,
      "test_tasks.py::A::test_broken": { outcome: "failed", message: "AssertionError: 3 != 2" },
      "test_tasks.py::A::test_mended": { outcome: "failed", message: "x" },
      "test_tasks.py::A::test_patches": passed,
      "test_tasks.py::A::test_new": passed,
    });
    expect(result).toEqual({
      regressions: ["test_tasks.py::A::test_broken: failed: AssertionError: 3 != 2"],
      newlyPassing: [],
      unlisted: ["test_tasks.py::A::test_new"],
      missing: ["test_tasks.py::A::test_gone"],
    });
  });

  it("only reports a test expected to fail that passes now", () => {
    const all = Object.fromEntries(Object.keys(expectations).map((id) => [id, passed]));
    expect(compare(expectations, all)).toEqual({
      regressions: [],
      newlyPassing: ["test_tasks.py::A::test_mended"],
      unlisted: [],
      missing: [],
    });
  });

  it("the checked-in file gives every test a verdict, and every failure and n/a a reason", () => {
    const checked = loadExpectations();
    const counts = [...countsByFile(checked).values()];
    const total = counts.reduce((n, c) => n + c.pass + c.fail + c["n/a"], 0);
    expect(total).toBe(Object.keys(checked).length);
    for (const [id, e] of Object.entries(checked)) {
      if (e === "pass") continue;
      expect(Object.values(e)[0]?.length, id).toBeGreaterThan(10);
    }
  });
});
