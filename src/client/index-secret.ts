import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readOwnTextSync } from "../fsutil/root-files.js";

/**
 * The user's own secret for the search indexes it stores in roots (docs/search.md): 32 random
 * bytes in `<config>/search-index.key`, mode 0600, made on first use. An index is kept in the
 * root with a MAC under this secret, so that an index edited by anyone else is rebuilt, never
 * believed. Loaded by the first search only (it needs `node:crypto`).
 */
const SECRET_FILE = "search-index.key";
const SECRET = /^[0-9a-f]{64}$/;

/** The secret, made if there is none yet; undefined when the one there is not safe to use. */
export function searchIndexSecret(configDir: string): string | undefined {
  const path = join(configDir, SECRET_FILE);
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) {
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    try {
      writeFileSync(path, `${randomBytes(32).toString("hex")}\n`, { flag: "wx", mode: 0o600 });
    } catch (err) {
      // Another process made it first: use that one.
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
    }
  }
  return ownSecret(path);
}

/** The secret in `path` when it is a plain file of this user's that no one else can read. */
function ownSecret(path: string): string | undefined {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st?.isFile() || (st.mode & 0o077) !== 0) return undefined;
  if (typeof process.getuid === "function" && st.uid !== process.getuid()) return undefined;
  try {
    const text = readOwnTextSync(path, 1024).trim();
    return SECRET.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}
