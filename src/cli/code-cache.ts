import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, isAbsolute, join } from "node:path";
import { Script } from "node:vm";
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
 *
 * `localRequire` is the caller's own `require`: the lean files sit beside the executable, so it
 * resolves what they require as their own would (`Module.createRequire` would load
 * `node:module`, and Node's ES-module loader with it, on every start). The lazy files a lean file
 * loads (`./lazy/…`, built beside it) go through the cache the same way, each once a process.
 */
export function requireCached(
  file: string,
  cacheDir: string | undefined,
  localRequire: NodeJS.Require,
): unknown {
  if (cacheDir === undefined) return localRequire(file);
  return cachedLoader(cacheDir, localRequire)(file);
}

/**
 * Loads our own CommonJS files through the code cache, each once, as Node's loader would: its
 * `exports` kept from the start of its run (a cycle sees them), forgotten when the run throws.
 * A file's relative `require`s are of our lazy files (scripts/build.mjs makes only those), the
 * rest (built-ins, picomatch) go to `localRequire`. The lean files only call `require`, never
 * its properties.
 */
function cachedLoader(cacheDir: string, localRequire: NodeJS.Require) {
  const loaded = new Map<string, { exports: unknown }>();
  const load = (file: string): unknown => {
    const known = loaded.get(file);
    if (known) return known.exports;
    const compiled = compileCached(file, cacheDir);
    if (!compiled) return localRequire(file);
    const { script, cachePath, stale } = compiled;
    const dir = dirname(file);
    const ownRequire = (id: string) =>
      id.startsWith("./") ? load(join(dir, id)) : localRequire(id);
    const mod = { exports: {} as unknown };
    loaded.set(file, mod);
    try {
      const run = script.runInThisContext() as ModuleWrapper;
      run.call(mod.exports, mod.exports, ownRequire as NodeJS.Require, mod, file, dir);
    } catch (err) {
      loaded.delete(file);
      throw err;
    }
    // Written at exit, so that it holds what this run compiled lazily too (most of a command).
    if (stale) process.once("exit", () => writeCache(script, cachePath, file));
    return mod.exports;
  };
  return load;
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

/**
 * Node's own compile cache (`module.enableCompileCache`, Node 22.1 and later). On an older Node
 * `node:module` is not loaded to find out: with it comes Node's ES-module loader.
 */
export function nodeCompileCache(): ((dir: string) => unknown) | undefined {
  if (Number(process.versions.node.split(".")[0]) < 22) return undefined;
  return (require("node:module") as { enableCompileCache?: (dir: string) => unknown })
    .enableCompileCache;
}

/** How Node wraps a CommonJS file (`Module.wrap`), written out for the same reason. */
const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) { ";
const WRAP_TAIL = "\n});";

function compileCached(file: string, cacheDir: string) {
  try {
    // `import()` would need a loader callback here; the lean files are built without any.
    const { text: source, st } = readWithStat(file);
    const build = shortHash(
      [source.length, st.size, st.mtimeMs, process.version, process.arch].join("\0"),
    );
    const cachePath = join(cacheDir, `${cacheFamily(file)}${build}.v8`);
    const cachedData = readOwnFile(cachePath);
    const script = new Script(WRAP_HEAD + source + WRAP_TAIL, { filename: file, cachedData });
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

/** A lean file's text and the fstat of the very opening it was read through. */
function readWithStat(file: string) {
  const fd = openSync(file, constants.O_RDONLY);
  try {
    const st = fstatSync(fd);
    const data = Buffer.allocUnsafe(st.size);
    if (readSync(fd, data, 0, st.size, 0) !== st.size) throw new Error(`${file} changed`);
    return { text: data.toString("utf8"), st };
  } finally {
    closeSync(fd);
  }
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
function writeCache(script: Script, cachePath: string, file: string): void {
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
