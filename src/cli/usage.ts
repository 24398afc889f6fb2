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
