// The end of `.ci/run`'s log: what failed, by file and test, then one line "N passed, N failed".
// It reads each vitest run's JSON report, exit status and output from the folder given, so that
// the tail of a CI log is enough to tell what broke, without scrolling back through thousands of
// lines. Exits 1 when anything failed.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";

const dir = process.argv[2];
/**
 * At most this many lines name failures: with the phases' line before them and the lines
 * around them (a count per run, the skipped and the total), the summary stays within the log's
 * last 32 lines.
 */
const MAX_FAILURE_LINES = 24;

const ANSI = /\u001b\[[0-9;]*m/g;

function summarize(run) {
  const status = Number(readFileSync(`${dir}/${run}.status`, "utf8"));
  const log = existsSync(`${dir}/${run}.log`)
    ? readFileSync(`${dir}/${run}.log`, "utf8").replace(ANSI, "")
    : "";
  let report;
  try {
    report = JSON.parse(readFileSync(`${dir}/${run}.json`, "utf8"));
  } catch {
    return {
      passed: 0,
      skipped: 0,
      failures: [
        `${run}: no report (exit ${status}): the build or vitest failed before reporting; ` +
          `its last line: ${log.trim().split("\n").at(-1)?.slice(0, 160) || "(none)"}`,
      ],
    };
  }
  const failures = [...failedTests(report), ...errorsOutsideTests(log)].map((f) => `${run}: ${f}`);
  if (status !== 0 && failures.length === 0) {
    failures.push(
      `${run}: exit ${status} with no failed test: errors outside the tests (see above)`,
    );
  }
  return {
    passed: report.numPassedTests,
    skipped: report.numPendingTests + report.numTodoTests,
    failures,
  };
}

function* failedTests(report) {
  for (const file of report.testResults ?? []) {
    const name = file.name.startsWith(process.cwd())
      ? file.name.slice(process.cwd().length + 1)
      : file.name;
    const failed = file.assertionResults.filter((t) => t.status === "failed");
    for (const t of failed) yield `FAIL ${name} > ${t.fullName}`;
    // A file that failed to load, or whose hooks failed, has no failed test of its own.
    if (file.status === "failed" && failed.length === 0) {
      const why = (file.message ?? "").split("\n")[0].slice(0, 160);
      yield `FAIL ${name} (the file itself: ${why || "see above"})`;
    }
  }
}

/**
 * Errors thrown outside any test (an unhandled rejection in a socket callback) are missing from
 * the JSON report; vitest's own output says which file and test they came from.
 */
function* errorsOutsideTests(log) {
  for (const m of log.matchAll(/This error originated in "([^"]+)" test file/g)) {
    const after = log.slice(m.index, m.index + 800);
    const latest = /The latest test that might've caused the error is "([^"]+)"/.exec(after);
    yield `UNHANDLED ERROR from ${m[1]}${latest ? ` > ${latest[1]}` : ""}`;
  }
}

// In the order they ran: the whole suite on the LTS, the floor's suites, the torture run.
const runs = readdirSync(dir)
  .filter((n) => n.endsWith(".status"))
  .map((n) => ({ run: n.slice(0, -".status".length), at: statSync(`${dir}/${n}`).mtimeMs }))
  .sort((a, b) => a.at - b.at)
  .map((r) => r.run);
let passed = 0;
let skipped = 0;
const failures = [];
const counts = [];
for (const run of runs) {
  const r = summarize(run);
  passed += r.passed;
  skipped += r.skipped;
  failures.push(...r.failures);
  counts.push(`${run}: ${r.passed} passed, ${r.failures.length} failed`);
}
if (runs.length === 0) failures.push("no test run left a report");

if (failures.length > 0) {
  console.log(`failed (${failures.length}):`);
  const shown = failures.slice(0, MAX_FAILURE_LINES);
  for (const line of shown) console.log(`  ${line}`);
  if (failures.length > shown.length) {
    console.log(`  ... and ${failures.length - shown.length} more, each marked with × above`);
  }
}
// Each run's own count (each Node line's), then the total as the last line.
for (const line of counts) console.log(line);
console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length > 0 ? 1 : 0);
