import { randomBytes } from "node:crypto";
import { promises as fsp, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Writes that are never seen half-done: the data goes to a dot-file (never a message, ignored
 * by every reader) that is then renamed or linked into place.
 */
export function tempName(): string {
  return `.tmp-${randomBytes(8).toString("hex")}`;
}

/** Replaces `name` atomically. */
export async function writeFileAtomic(dir: string, name: string, data: string): Promise<void> {
  const tmp = join(dir, tempName());
  try {
    await fsp.writeFile(tmp, data);
    await fsp.rename(tmp, join(dir, name));
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
}

/** {@link writeFileAtomic} without the thread pool, for small files such as cursors. */
export function writeFileAtomicSync(dir: string, name: string, data: string): void {
  const tmp = join(dir, tempName());
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, join(dir, name));
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Creates `name` atomically and only if it does not exist (EEXIST otherwise): `link` never
 * replaces, unlike `rename`.
 */
export async function createFileExclusive(dir: string, name: string, data: string): Promise<void> {
  const tmp = join(dir, tempName());
  await fsp.writeFile(tmp, data);
  try {
    await fsp.link(tmp, join(dir, name));
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}
