/**
 * The one error class of agent-chat. Every failure a caller can act on carries a string `code`;
 * the CLI maps codes to exit codes in one place (src/cli/exit-codes.ts).
 */
export type ErrorCode =
  | "INVALID_ARGUMENT"
  | "INVALID_NAME"
  | "CHANNEL_NOT_FOUND"
  | "CHANNEL_EXISTS"
  | "CORRUPT_META"
  /**
   * An agent's cursor holds something other than a message number: its read or wait is refused
   * rather than starting again from #1 (every message again) or guessing (messages lost).
   */
  | "CORRUPT_CURSOR"
  /** A file outside the root that a command reads or edits (a tool's settings) does not parse. */
  | "CORRUPT_FILE"
  | "NOT_A_MEMBER"
  | "TASK_NOT_FOUND"
  | "TASK_EXISTS"
  | "CLAIM_LOST"
  /**
   * A chat.py 0.7 task or lease record that cannot be trusted as it stands (it does not
   * validate, disagrees with its claim, or a lease change awaits recovery): nothing is granted.
   */
  | "TASK_INCONSISTENT"
  | "NOT_HOLDER"
  | "TIMEOUT"
  | "ABORTED"
  | "LOCK_TIMEOUT"
  | "TOO_LARGE"
  /** An entry of the root that is never followed or opened: a link, a FIFO, a device, ... */
  | "UNSAFE_FILE"
  | "IO_ERROR"
  | "BACKEND_UNAVAILABLE"
  /**
   * A feature this backend does not serve (chat.py 0.7's folder records on a NATS root): the
   * message names what does. Not a usage error: the same command works on another root.
   */
  | "UNSUPPORTED"
  | "PROTOCOL_ERROR"
  | "DAEMON_RUNNING"
  /** A bug on the other side of a connection (the daemon reports it instead of crashing). */
  | "INTERNAL"
  | "INVALID_KFILE"
  | "NOT_FOUND"
  | "NORMALIZER_FAILED"
  /** An `event.*` post whose body chat.py 0.7 would reject (a usage error: exit 64). */
  | "INVALID_EVENT"
  /** Governance: the maintainer rejected or vetoed the request. */
  | "REJECTED"
  /** Governance: the action has no band and the channel has no `*` default. */
  | "UNKNOWN_ACTION"
  /** Governance: the channel has no governance profile (no maintainer, no bands). */
  | "NOT_GOVERNED"
  /** Governance: the request was decided, withdrawn or past its veto window: too late for a verdict. */
  | "ALREADY_DECIDED"
  /** Governance: only the channel's maintainer may decide a request. */
  | "NOT_MAINTAINER"
  /** A slash command that the config's allowlist does not admit for `--exec`. */
  | "NOT_ALLOWED"
  /** Signatures: a key for a name that already has a different pinned or published key. */
  | "KEY_CONFLICT"
  /** Signatures: the agent has no key here (`agent-chat id new`). */
  | "NO_KEY"
  /** Signatures or policy: a post refused by the channel's policy (unsigned, not a member). */
  | "POLICY"
  /** Loop guard: the poster is paused in this channel until a person runs `agent-chat unpause`. */
  | "PAUSED";

/**
 * Marks an AgentChatError. The CLI's lean files load rarely used code from files of its own,
 * each bundling its own copy of this class (scripts/build.mjs): `instanceof` asks for the
 * mark, so an error thrown by any copy is an AgentChatError to every other.
 */
const BRAND: unique symbol = Symbol.for("agent-chat.error") as never;

export class AgentChatError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && BRAND in value;
  }

  override readonly name = "AgentChatError";
  readonly code: ErrorCode;
  /**
   * chat.py 0.7's own code for this failure (`LEASE_CONFLICT`, `PATH_LOCK_CONFLICT`,
   * `TASK_NOT_FOUND`, ...), where the failure is one of its: what picks the exit a command of
   * its grammar gives (src/cli/exit-codes.ts), and what the daemon's wire carries as
   * `reference`. Built with {@link referenceError}, which also leads the message with it.
   */
  declare readonly reference?: string;
  readonly [BRAND] = true;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; reference?: string | undefined },
  ) {
    super(message, options && "cause" in options ? { cause: options.cause } : undefined);
    this.code = code;
    if (options?.reference !== undefined) this.reference = options.reference;
  }
}

/** A failure chat.py 0.7 names `reference`, as its text reads: `LEASE_CONFLICT: task t1 …`. */
export function referenceMessage(reference: string, text: string): string {
  return `${reference}: ${text}`;
}

/**
 * An error of ours (`code`) that is chat.py 0.7's `reference` too: it carries chat.py's code
 * as data ({@link AgentChatError.reference}) and leads its message with it, as chat.py's does.
 */
export function referenceError(
  code: ErrorCode,
  reference: string,
  text: string,
  options?: { cause?: unknown },
): AgentChatError {
  return new AgentChatError(code, referenceMessage(reference, text), { ...options, reference });
}

export function isAgentChatError(err: unknown, code?: ErrorCode): err is AgentChatError {
  return err instanceof AgentChatError && (code === undefined || err.code === code);
}

/** What a person makes of the codes that mean "this machine cannot store it", not a bug of ours. */
const IO_WORDS: Readonly<Record<string, string>> = {
  EROFS: "the file system is read-only",
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is used up",
  EACCES: "permission denied",
};

/** Wraps a native error (ENOENT, EACCES, …) so that callers see one error type with a code. */
export function wrapIoError(err: unknown, what: string): AgentChatError {
  if (err instanceof AgentChatError) return err;
  const sys = err as NodeJS.ErrnoException;
  const words = sys?.code ? IO_WORDS[sys.code] : undefined;
  const code = words ? `${words} (${sys.code})` : sys?.code;
  const detail = code ?? String((err as Error)?.message ?? err);
  return new AgentChatError("IO_ERROR", `${what}: ${detail}`, { cause: err });
}
