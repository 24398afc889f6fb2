import { referenceError } from "../core/errors.js";
import {
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_WAIT_TIMEOUT_MS,
  MAX_TASK_TTL_MS,
  REFERENCE_TIME_END_MS,
} from "../store/types.js";

/** `--timeout` and `--interval` of every command that waits, in seconds as typed (the store's defaults). */
export const WAIT_FLAG_DEFAULTS = {
  timeout: String(DEFAULT_WAIT_TIMEOUT_MS / 1000),
  interval: String(DEFAULT_POLL_INTERVAL_MS / 1000),
} as const;

/** A mistake in how the command was called: exit 64. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** `value` when it is one of `allowed`; else a usage error naming the choices. */
export function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(
    `${what} must be one of ${allowed.join(", ")} (got ${JSON.stringify(value)})`,
  );
}

/** The longest wait a timer can hold (2^31 - 1 ms, about 24.8 days), in whole seconds. */
export const MAX_SECONDS = 2_147_483;

/**
 * Seconds given on the command line, as milliseconds: plain decimal (`30`, `1.5`); no sign,
 * exponent, hex or blank, which `Number()` would take (`1e3`, `0x10`, `""` as 0).
 */
export function parseSeconds(value: string, flag: string): number {
  const n = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
  if (!(n <= MAX_SECONDS)) {
    throw new UsageError(
      `${flag} must be a number of seconds like 30 or 1.5, at most ${MAX_SECONDS} (got ${JSON.stringify(value)})`,
    );
  }
  return Math.round(n * 1000);
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A lease's TTL: `90s`, `30m`, `2h`, `1d` or a sum like `1h30m`; a bare number is seconds.
 * Above 0 and at most 7 days (the store's bound, said here first with the flag's name).
 */
export function parseTtl(value: string, flag = "--ttl"): number {
  const bare = /^\d+$/.test(value);
  const ms = bare
    ? Number(value) * 1000
    : /^(\d+[smhd])+$/.test(value)
      ? [...value.matchAll(/(\d+)([smhd])/g)].reduce(
          (sum, [, n, unit]) => sum + Number(n) * UNIT_MS[unit!]!,
          0,
        )
      : Number.NaN;
  if (!(ms > 0 && ms <= MAX_TASK_TTL_MS)) {
    throw new UsageError(
      `${flag} must be a duration above 0 and at most 7d, like 90s, 30m, 2h or 1h30m (got ${JSON.stringify(value)})`,
    );
  }
  return ms;
}

/** A count or size given on the command line: decimal digits only, at least 1. */
export function parsePositiveInt(value: string, flag: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new UsageError(
      `${flag} must be a positive integer in decimal digits (got ${JSON.stringify(value)})`,
    );
  }
  return n;
}

/** What Python's `float()` reads (chat.py's `--lease-seconds`): `1e3`, `.5`, `1_000`, `inf`. */
const PYTHON_FLOAT =
  /^[+-]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?|inf(?:inity)?|nan)$/i;

/** A lease length chat.py's grammar was given, and who refuses it (path locks or task leases). */
export interface ReferenceLease {
  value: string;
  flag: string;
  /** chat.py's error code for a bad length: `PATH_LOCK_INVALID_DURATION`, `LEASE_INVALID_DURATION`. */
  code: string;
  /** Its word for the thing: "lock" or "lease". */
  noun: string;
}

/**
 * A lease's length as chat.py reads `--lease-seconds` (and its `--lease`, `--ttl`): any positive
 * float that ends before its timestamps do, 1e3 and 700000 (past our 7 days) too; refused as
 * chat.py refuses it. Our durations (`30m`, `1h30m`) stay ours.
 */
export function parseReferenceLease({ value, flag, code, noun }: ReferenceLease): number {
  if (/^(\d+[smhd])+$/.test(value)) return parseTtl(value, flag);
  const text = value.trim();
  if (!PYTHON_FLOAT.test(text)) {
    throw new UsageError(`${flag}: invalid float value: '${value}'`);
  }
  const seconds = Number(text.replaceAll("_", "").replace(/^([+-]?)inf(inity)?$/i, "$1Infinity"));
  if (!(Number.isFinite(seconds) && seconds > 0)) {
    throw referenceError("INVALID_ARGUMENT", code, `${noun} duration must be positive`);
  }
  if (!(Date.now() + seconds * 1000 < REFERENCE_TIME_END_MS)) {
    throw referenceError(
      "INVALID_ARGUMENT",
      code,
      `${noun} duration is outside the supported timestamp range`,
    );
  }
  return Math.max(1, Math.round(seconds * 1000));
}
