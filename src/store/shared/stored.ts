/**
 * Values read back from storage. Every file of a root is untrusted input (a planted or corrupt
 * record, docs/design.md §10), so what the store keeps as a number or a record is checked the
 * same way everywhere.
 */

/** Tokens, sequence numbers and times read from storage are safe integers below this. */
export const MAX_STORED_NUMBER = 2 ** 50;

export function isStoredCount(value: unknown): value is number {
  return (
    Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) < MAX_STORED_NUMBER
  );
}

/** The value when it is a stored count, else undefined. */
export function storedCount(value: unknown): number | undefined {
  return isStoredCount(value) ? value : undefined;
}

/** The value as a record to read fields of: anything but an object reads as empty. */
export function storedRecord(value: unknown): Record<string, unknown> {
  return (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
}

/** Stored JSON text parsed, or undefined when it is not JSON (the caller says what it ignores). */
export function storedJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}
