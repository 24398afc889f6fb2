import { join } from "node:path";
import { listRealDir, readRootTextSync } from "../../../fsutil/root-files.js";

/**
 * What chat.py 0.7's two journals (`claims/.lease-transaction.json` of a lease change,
 * `locks/.path-lock-transaction.json` of a path-lock change) have in common: how they carry the
 * bytes of a file they change (base64 text, null for no file), and how the recovery of a change
 * that died half-way tells whether its audit message was posted.
 */
const MAX_MESSAGE_BYTES = 1024 * 1024;

/** A file's bytes as a journal carries them. */
export function encodeBytes(text: string | undefined): string | null {
  return text === undefined ? null : Buffer.from(text, "utf8").toString("base64");
}

/**
 * A journal's payload decoded. The journal is untrusted: anything but base64 text or null is
 * refused through `invalid`, which names the journal's own error.
 */
export function decodeBytes(
  value: unknown,
  what: string,
  invalid: (message: string) => never,
): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4) {
    invalid(`${what} is not base64 text`);
  }
  return Buffer.from(value, "base64").toString("utf8");
}

/** Whether a message of the channel names the transaction (its audit message was posted). */
export function published(dir: string, transactionId: string): boolean {
  const marker = `"transaction_id": "${transactionId}"`;
  const names = listRealDir(dir)
    .filter((e) => e.kind === "file" && /^[0-9]+-.*\.md$/.test(e.name))
    .map((e) => e.name)
    .sort((a, b) => Number.parseInt(b, 10) - Number.parseInt(a, 10));
  return names.some((name) => {
    try {
      return readRootTextSync(join(dir, name), MAX_MESSAGE_BYTES).includes(marker);
    } catch {
      return false;
    }
  });
}
