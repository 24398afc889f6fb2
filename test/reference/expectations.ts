import { spawn } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * chat.py 0.7.5's own test files, run unmodified by pytest with `chat.main` and its commands
 * (`chat.cmd_init`, `cmd_post`, `cmd_channels`, `cmd_read`, `cmd_peek`, `cmd_claim`) routed to
 * our CLI (`ours_as_chat.py`) and its hook scripts to our `agent-chat hook` ({@link HOOK_SHIMS}),
 * and what we expect of each of their tests (`expected-0.7.5.json`): `pass`, or `{ "fail": why }`,
 * or `{ "n/a": why }` for a test that cannot say anything about our CLI (it patches the
 * reference's internals, tests its own platform or plugin packaging, or reads a file the sdist
 * lacks).
 */
export const REFERENCE_TEST_FILES = [
  "test_tasks.py",
  "test_leases.py",
  "test_path_locks.py",
  "test_state.py",
  "test_state_json_output.py",
  "test_capabilities.py",
  "test_chat.py",
  "test_hooks.py",
  "test_context_budget.py",
  "test_plugin_manifest.py",
] as const;

/**
 * chat.py's Claude Code hook scripts as test_hooks.py runs them (`hooks/*.py` beside its
 * `tests/`, which the sdist does not ship): shims that run our `agent-chat hook EVENT`.
 */
export const HOOK_SHIMS = ["prompt_inbox.py", "stop_inbox.py", "session_inbox.py"] as const;

export type Expectation = "pass" | { fail: string } | { "n/a": string };
export type Verdict = "pass" | "fail" | "n/a";

const HERE = fileURLToPath(new URL(".", import.meta.url));
export const EXPECTATIONS_FILE = join(HERE, "expected-0.7.5.json");

export function loadExpectations(): Record<string, Expectation> {
  const doc = JSON.parse(readFileSync(EXPECTATIONS_FILE, "utf8")) as {
    tests: Record<string, Expectation>;
  };
  return doc.tests;
}

export function verdictOf(e: Expectation): Verdict {
  if (e === "pass") return "pass";
  return "fail" in e ? "fail" : "n/a";
}

/** Per test file: how many of its tests pass, fail and say nothing about ours. */
export function countsByFile(
  expectations: Record<string, Expectation>,
): Map<string, Record<Verdict, number>> {
  const counts = new Map<string, Record<Verdict, number>>();
  for (const file of REFERENCE_TEST_FILES) counts.set(file, { pass: 0, fail: 0, "n/a": 0 });
  for (const [id, e] of Object.entries(expectations)) {
    const file = counts.get(id.split("::")[0] as string);
    if (file) file[verdictOf(e)]++;
  }
  return counts;
}

/** One outcome per test as the plugin reports it (pytest's passed, failed or skipped). */
export interface Outcome {
  outcome: "passed" | "failed" | "skipped";
  message: string;
}

/** How a run compares with the expectations. */
export interface Comparison {
  /** Expected to pass, and did not: what the test fails on. */
  regressions: string[];
  /** Expected to fail, and passed: worth moving to `pass`. */
  newlyPassing: string[];
  /** Run, but not in the expectation file (or listed, but not run). */
  unlisted: string[];
  missing: string[];
}

export function compare(
  expectations: Record<string, Expectation>,
  outcomes: Record<string, Outcome>,
): Comparison {
  const result: Comparison = { regressions: [], newlyPassing: [], unlisted: [], missing: [] };
  for (const [id, e] of Object.entries(expectations)) {
    const got = outcomes[id];
    if (!got) result.missing.push(id);
    else if (e === "pass" && got.outcome !== "passed") {
      result.regressions.push(`${id}: ${got.outcome}: ${got.message}`);
    } else if (e !== "pass" && "fail" in e && got.outcome === "passed") {
      result.newlyPassing.push(id);
    }
  }
  for (const id of Object.keys(outcomes)) if (!(id in expectations)) result.unlisted.push(id);
  return result;
}

/**
 * Runs the reference's test files against our built CLI; resolves with each test's outcome and
 * pytest's output (for a failure's message). The test files run from a copy of `tests/` in
 * `work` (a fresh folder), beside a `hooks/` folder holding {@link HOOK_SHIMS}. Our CLI runs with
 * the environment of the test run, minus the name, root and channels a user may have set.
 */
export function runReferenceTests(
  reference: { tests: string; python: string },
  cli: string,
  work: string,
): Promise<{ outcomes: Record<string, Outcome>; output: string; status: number | null }> {
  const tests = join(work, "tests");
  cpSync(reference.tests, tests, { recursive: true });
  mkdirSync(join(work, "hooks"));
  for (const shim of HOOK_SHIMS) copyFileSync(join(HERE, "hooks", shim), join(work, "hooks", shim));
  const report = join(work, "report.json");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENT_CHAT_OURS_CLI: cli,
    AGENT_CHAT_OURS_NODE: process.execPath,
    AGENT_CHAT_OURS_REPORT: report,
    PYTHONPATH: HERE,
    PYTHONDONTWRITEBYTECODE: "1",
  };
  delete env.AGENT_CHAT_NAME;
  delete env.AGENT_CHAT_ROOT;
  delete env.AGENT_CHAT_CHANNELS;
  delete env.CLAUDE_PLUGIN_ROOT;
  const args = ["-m", "pytest", "-p", "no:cacheprovider", "-p", "ours_as_chat", "-q"];
  args.push("--rootdir", tests, ...REFERENCE_TEST_FILES);
  return new Promise((resolve, reject) => {
    // No stdin: a hook reads its host's JSON from it, and must see its end at once.
    const child = spawn(reference.python, args, {
      cwd: tests,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.on("error", reject);
    child.on("close", (status) => {
      try {
        const { tests } = JSON.parse(readFileSync(report, "utf8")) as {
          tests: Record<string, Outcome>;
        };
        resolve({ outcomes: tests, output, status });
      } catch (err) {
        reject(
          new Error(`pytest wrote no report (exit ${status}):\n${output.slice(-4000)}`, {
            cause: err,
          }),
        );
      }
    });
  });
}
