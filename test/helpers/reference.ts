import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { missingReason } from "./tools.js";

/**
 * The real reference chat.py, installed from PyPI (`agent-chat-plugin`), one virtual environment
 * per version: `.ci/run` installs 0.3.1 and 0.7.5 and names their console commands in
 * $AGENT_CHAT_REFERENCE_0_3 and $AGENT_CHAT_REFERENCE_0_7. Elsewhere set them by hand:
 *   python3 -m venv /tmp/ref07 && /tmp/ref07/bin/pip install agent-chat-plugin==0.7.5
 *   export AGENT_CHAT_REFERENCE_0_7=/tmp/ref07/bin/agent-chat
 */
export type ReferenceVersion = "0.3" | "0.7";

const ENV: Record<ReferenceVersion, string> = {
  "0.3": "AGENT_CHAT_REFERENCE_0_3",
  "0.7": "AGENT_CHAT_REFERENCE_0_7",
};

/** The command of that reference version, or undefined when it is not installed here. */
export function referenceCommand(version: ReferenceVersion): string | undefined {
  const path = process.env[ENV[version]];
  return path && existsSync(path) ? path : undefined;
}

/**
 * Why the tests of that version cannot run here, for `describe.skipIf(...)` names; undefined when
 * they can. In CI a missing reference is a failure, never a skip: `requireReference` throws.
 */
export function referenceSkipReason(version: ReferenceVersion): string | undefined {
  const present = referenceCommand(version) !== undefined;
  return missingReason(`reference chat.py ${version}`, present, `$${ENV[version]} unset`);
}

export function requireReference(version: ReferenceVersion): string {
  const command = referenceCommand(version);
  if (command === undefined) {
    throw new Error(`$${ENV[version]} names no reference chat.py ${version}, and CI requires it`);
  }
  return command;
}

/**
 * The reference 0.7.5's own test files (its sdist's `tests/`, which the wheel lacks) and the
 * Python of its environment, with pytest: `.ci/run` fetches them and names the folder in
 * $AGENT_CHAT_REFERENCE_0_7_TESTS. Elsewhere, beside the environment above:
 *   /tmp/ref07/bin/pip install pytest==8.4.2
 *   /tmp/ref07/bin/pip download --no-binary :all: --no-deps -d /tmp agent-chat-plugin==0.7.5
 *   tar -xzf /tmp/agent_chat_plugin-0.7.5.tar.gz -C /tmp
 *   export AGENT_CHAT_REFERENCE_0_7_TESTS=/tmp/agent_chat_plugin-0.7.5/tests
 */
export function referenceTests(): { tests: string; python: string } | undefined {
  const tests = process.env.AGENT_CHAT_REFERENCE_0_7_TESTS;
  const command = referenceCommand("0.7");
  if (!tests || !command || !existsSync(join(tests, "test_tasks.py"))) return undefined;
  const python = join(dirname(command), "python");
  return existsSync(python) ? { tests, python } : undefined;
}

/** Why the reference's own tests cannot run here: undefined when they can, or in CI. */
export function referenceTestsSkipReason(): string | undefined {
  const present = referenceTests() !== undefined;
  return missingReason(
    "chat.py 0.7.5's own tests",
    present,
    "$AGENT_CHAT_REFERENCE_0_7_TESTS unset, or no $AGENT_CHAT_REFERENCE_0_7",
  );
}

/** Runs the reference on a root; returns its stdout, stderr and exit status (never throws). */
export function runReference(
  version: ReferenceVersion,
  root: string,
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): { stdout: string; stderr: string; status: number } {
  try {
    const stdout = execFileSync(requireReference(version), ["--root", root, ...args], {
      encoding: "utf8",
      input: options.input ?? "",
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      // A reference that spins (on a lock it cannot remove) is killed, and fails.
      timeout: options.timeoutMs,
    });
    return { stdout, stderr: "", status: 0 };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; status?: number };
    return { stdout: e.stdout ?? "", stderr: e.stderr ?? "", status: e.status ?? 1 };
  }
}
