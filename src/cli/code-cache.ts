import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import Module from "node:module";
import { basename, dirname, isAbsolute, join } from "node:path";
import * as vm from "node:vm";
import { shortHash } from "../core/hash.js";

/**
 * V8's code cache for the lean CommonJS files, on a Node without `module.enableCompileCache`
 * (before 22.1). Compiling `dist/hot.cjs` is a fifth of what a `post` costs over Node's own
 * start; with the code V8 compiled on an earlier run, a process skips most of it.
 *
 * The cache lives in the user's own cache folder (never beside the install, which may be read
 * only, and never in a chat root, which others write). It is code: a file there is used only when
 * it is a regular file of this user that no one else may write. Its name says which build of the
 * file, which Node and which CPU it was made for; V8 checks its own version and flags besides,
 * and a cache it rejects is written anew. Anything that goes wrong means a plain `require`.
 */
export function requireCached(file: string, cacheDir: string | undefined): unknown {
  const loaded = cacheDir === undefined ? undefined : compileCached(file, cacheDir);
  if (!loaded) return require(file);
  const { script, cachePath, stale } = loaded;
  const run = script.runInThisContext() as ModuleWrapper;
  const mod = { exports: {} as unknown };
  run.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, dirname(file));
  // Written at exit, so that it holds what this run compiled lazily too (most of a command).
  if (stale) process.once("exit", () => writeCache(script, cachePath, file));
  return mod.exports;
}

type ModuleWrapper = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
) => void;

/**
 * The cache folder: `$XDG_CACHE_HOME/agent-chat/v8`, else `~/.cache/agent-chat/v8`; none when
 * there is no home or `AGENT_CHAT_CODE_CACHE=off` (or Node's own `NODE_DISABLE_COMPILE_CACHE`).
 */
export function codeCacheDir(env: NodeJS.ProcessEnv): string | undefined {
  if (env.AGENT_CHAT_CODE_CACHE === "off" || env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "agent-chat", "v8");
  return env.HOME && isAbsolute(env.HOME)
    ? join(env.HOME, ".cache", "agent-chat", "v8")
    : undefined;
}

function compileCached(file: string, cacheDir: string) {
  try {
    // `import()` would need a loader callback here; the lean files are built without any.
    const source = readFileSync(file, "utf8");
    const st = statSync(file);
    const build = shortHash(
      [source.length, st.size, st.mtimeMs, process.version, process.arch].join("\0"),
    );
    const cachePath = join(cacheDir, `${cacheFamily(file)}${build}.v8`);
    const cachedData = readOwnFile(cachePath);
    const script = new vm.Script(Module.wrap(source), { filename: file, cachedData });
    return { script, cachePath, stale: cachedData === undefined || script.cachedDataRejected };
  } catch {
    return undefined;
  }
}

/**
 * The start of the names of a lean file's caches: its name and where it is installed. Two
 * installs (a global one and a project's, two versions side by side) each keep their own
 * cache, instead of each replacing the other's on every alternate run.
 */
function cacheFamily(file: string): string {
  return `${basename(file)}-${shortHash(dirname(file))}-`;
}

/** The largest cache read: a lean file's is a few hundred kB. */
const MAX_CACHE_BYTES = 16 * 1024 * 1024;

/** The file's bytes when it is a regular file of this user that only this user may write. */
function readOwnFile(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    const own = st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
    if (!st.isFile() || !own || st.size > MAX_CACHE_BYTES) return undefined;
    const data = Buffer.allocUnsafe(st.size);
    return readSync(fd, data, 0, st.size, 0) === st.size ? data : undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Replaces the cache atomically (processes starting at once each write a whole file), and
 * removes the caches of the file's earlier builds in the same place.
 */
function writeCache(script: vm.Script, cachePath: string, file: string): void {
  const dir = dirname(cachePath);
  const tmp = `${cachePath}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(tmp, script.createCachedData(), { mode: 0o600, flag: "wx" });
    renameSync(tmp, cachePath);
    const earlier = cacheFamily(file);
    // Also a cache named as before installs had their own (`hot.cjs-<build>.v8`).
    const unkeyed = new RegExp(`^${basename(file).replaceAll(".", "\\.")}-[0-9a-f]{16}\\.v8$`);
    for (const name of readdirSync(dir)) {
      if ((name.startsWith(earlier) || unkeyed.test(name)) && name !== basename(cachePath)) {
        rmSync(join(dir, name), { force: true });
      }
    }
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // No folder to write in: nothing was left.
    }
  }
}
