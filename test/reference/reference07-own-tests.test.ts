import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI } from "../helpers/cli.js";
import { referenceTests, referenceTestsSkipReason } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";
import {
  compare,
  countsByFile,
  EXPECTATIONS_FILE,
  loadExpectations,
  REFERENCE_TEST_FILES,
  runReferenceTests,
} from "./expectations.js";

// chat.py 0.7.5's own tests (tests/test_tasks.py, test_leases.py, test_path_locks.py,
// test_state.py, test_state_json_output.py, test_capabilities.py, test_chat.py, test_hooks.py,
// test_context_budget.py, test_plugin_manifest.py from its sdist), unmodified, with its CLI
// replaced by ours: its CLI-level tests run our implementation, its hook tests our
// `agent-chat hook` (test/reference/hooks/), the others read and write with its library a root
// that ours created. A test expected to pass that no longer
// does fails this; one expected to fail that now passes is printed, to be moved to `pass`.
const skip = referenceTestsSkipReason();
const REPO = join(import.meta.dirname, "..", "..");

describe.skipIf(skip !== undefined)(
  `chat.py 0.7.5's own test files on our CLI${skip ? ` (${skip})` : ""}`,
  () => {
    it("every test that passes on our CLI still passes, and no test goes unlisted", async () => {
      const reference = referenceTests();
      if (!reference)
        throw new Error("chat.py 0.7.5's own tests are missing, and CI requires them");
      const dir = tempDir("agent-chat-reftests-");
      try {
        const run = await runReferenceTests(reference, CLI, dir.dir);
        const result = compare(loadExpectations(), run.outcomes);
        if (result.newlyPassing.length > 0) {
          console.log(
            `now passing, to be marked "pass" in ${EXPECTATIONS_FILE}:\n  ${result.newlyPassing.join("\n  ")}`,
          );
        }
        expect(result.regressions, "expected to pass, and did not").toEqual([]);
        expect(result.unlisted, "run, but not in the expectation file").toEqual([]);
        expect(result.missing, "in the expectation file, but not run").toEqual([]);
      } finally {
        dir.cleanup();
      }
    }, 900_000);
  },
);

describe("the counts of chat.py 0.7.5's own tests in README and docs", () => {
  it("are those of the expectation file, per test file", () => {
    const counts = countsByFile(loadExpectations());
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const docs = readFileSync(join(REPO, "docs", "leases.md"), "utf8");
    for (const file of REFERENCE_TEST_FILES) {
      const c = counts.get(file) as Record<string, number>;
      const row = `| \`${file}\` | ${c.pass} | ${c.fail} | ${c["n/a"]} |`;
      expect(readme, `README.md lacks ${row}`).toContain(row);
      expect(docs, `docs/leases.md lacks ${row}`).toContain(row);
    }
  });
});
