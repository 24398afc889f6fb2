import { spawnSync } from "node:child_process";

/**
 * Tools some tests need from the machine (python3, nats-server, the reference chat.py, root).
 * Outside CI a missing one skips those tests, and the skip says why in the test's name; in CI
 * (CI=true) it never skips: the tests run and fail, saying what is missing.
 */

/** Why tests needing `what` cannot run here, or undefined when they can or when CI requires them. */
export function missingReason(what: string, present: boolean, remedy: string): string | undefined {
  if (present || process.env.CI) return undefined;
  return `${what} missing (${remedy}): skipped`;
}

/** `name`, ending with the reason it is skipped when there is one. */
export function skipName(name: string, reason: string | undefined): string {
  return reason === undefined ? name : `${name} (${reason})`;
}

/** Throws for a tool a test needs and the machine lacks (in CI; or where a test cannot skip). */
export function requirePresent(what: string, present: boolean): void {
  if (present) return;
  const why = process.env.CI ? ", and CI requires the tests that need it to run" : "";
  throw new Error(`${what} missing${why}`);
}

export const HAS_PYTHON = spawnSync("python3", ["-c", "pass"]).status === 0;

export const pythonSkipReason = missingReason("python3", HAS_PYTHON, "apt-get install python3");

export const IS_ROOT = process.getuid?.() === 0;

/** Acting as another user (nobody) takes root; what acts for that user is python3. */
export const otherUserSkipReason =
  missingReason("root", IS_ROOT, "run the tests as root") ?? pythonSkipReason;
