import { lstatSync, mkdirSync } from "node:fs";
import { enableCompileCache } from "node:module";

/**
 * Node's compile cache (`module.enableCompileCache`) for every file the executable loads after
 * it (the lean files, their lazy parts, the full CLI's chunks): the code V8 compiled on an
 * earlier run, so that a command skips most of compiling them (a fifth of a `post`'s cost over
 * Node's own start). The cache is code that Node checks only against the source and its own
 * version, not against who wrote it: it is used only in a folder of this user's that no one else
 * may write (made 0700 when missing); anything else means compiling afresh, as does Node's own
 * `NODE_DISABLE_COMPILE_CACHE=1`.
 */
export function enableUserCompileCache(dir: string | undefined): void {
  if (dir !== undefined && isPrivateDir(dir)) enableCompileCache(dir);
}

function isPrivateDir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}
