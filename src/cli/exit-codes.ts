import { type ErrorCode, referenceMessage } from "../core/errors.js";

/**
 * Exit codes, kept from the reference where it has one: 0 ok, 1 error, 2 wait timed out,
 * 3 claim lost (also a task that is no longer yours: `NOT_HOLDER`, a `fence` that fails),
 * 130 interrupted. Usage errors get their own code (64, EX_USAGE) instead of the reference's 2,
 * so that a script can tell a typo from a timeout: a flag commander refuses, and every argument
 * the library refuses as such (`INVALID_ARGUMENT`, `INVALID_NAME`: an empty query, a missing
 * selection, a pattern outside the repository, a name off the rules), which no retry mends. Ours: 4, a governed request that the
 * maintainer rejected or vetoed (docs/governance.md); 5, `serve` found a live daemon already
 * owning the root; 141 (128 + SIGPIPE, what a shell reports for a program killed by a
 * closed pipe), stdout was closed before all the output was written (`… | head -1`). chat.py
 * 0.7's commands (task, lock, check, unlock, recover, event, state) exit as chat.py's do
 * instead (`asReference07`).
 */
export const EXIT = {
  OK: 0,
  ERROR: 1,
  TIMEOUT: 2,
  CLAIM_LOST: 3,
  REJECTED: 4,
  DAEMON_RUNNING: 5,
  USAGE: 64,
  INTERRUPTED: 130,
  BROKEN_PIPE: 141,
} as const;

export function exitCodeFor(code: ErrorCode | "USAGE"): number {
  switch (code) {
    case "TIMEOUT":
      return EXIT.TIMEOUT;
    case "CLAIM_LOST":
    // A late holder, a stale token: the claim is lost as surely as to a faster claimant.
    case "NOT_HOLDER":
      return EXIT.CLAIM_LOST;
    case "DAEMON_RUNNING":
      return EXIT.DAEMON_RUNNING;
    case "REJECTED":
      return EXIT.REJECTED;
    case "ABORTED":
      return EXIT.INTERRUPTED;
    case "USAGE":
    case "INVALID_ARGUMENT":
    case "INVALID_NAME":
    case "INVALID_EVENT":
      return EXIT.USAGE;
    default:
      return EXIT.ERROR;
  }
}

/** chat.py 0.7's families of task, task-lease and event errors (`LEASE_CONFLICT`, …). */
const REFERENCE_07_REFUSAL = /^(TASK|LEASE|EVENT)_[A-Z_]+$/;
/** chat.py 0.7's path-lock and state errors (`PATH_LOCK_CONFLICT`, …): its `AgentChatError`s. */
const REFERENCE_07_ERROR = /^(PATH_LOCK|STATE)_[A-Z_]+$/;

/**
 * A refusal as chat.py 0.7 gives it in its own grammar, whose `main` knows three exits: 2 for a
 * `TaskError` (every task and lease error, a lost lease race included), an `AdapterEventError`
 * and a usage error argparse refuses; 1 for any other `AgentChatError` (every path-lock and
 * state error); 130 interrupted. Where ours would say 3 or 64, a script written for chat.py
 * would misread it. The family is told by chat.py's code the error carries (`reference`:
 * `LEASE_CONFLICT`, which leads its message too) or by ours (`TASK_NOT_FOUND`), which then
 * leads the message. The message text is never read for it: text that merely looks like
 * chat.py's (`LEASE_CONFLICT: …` in a message of ours) is not chat.py's refusal.
 */
export function asReference07(
  err: { code: string; message: string; reference?: string | undefined },
  exit: number,
): { exit: number; message: string } {
  const { code, message, reference = "" } = err;
  if (exit === EXIT.INTERRUPTED) return { exit, message };
  if (REFERENCE_07_ERROR.test(reference)) return { exit: EXIT.ERROR, message };
  if (REFERENCE_07_REFUSAL.test(reference)) return { exit: 2, message };
  if (REFERENCE_07_REFUSAL.test(code)) return { exit: 2, message: referenceMessage(code, message) };
  return { exit: exit === EXIT.USAGE ? 2 : EXIT.ERROR, message };
}
