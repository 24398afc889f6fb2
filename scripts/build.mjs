// Bundles the CLI (an unbundled CLI starts ~55 ms slower), its executable and the library entry,
// then emits type declarations. Heavy optional parts stay separate chunks, loaded on demand.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { relative, resolve, sep } from "node:path";
import { analyzeMetafile, build } from "esbuild";

rmSync("dist", { recursive: true, force: true });

const SRC = resolve("src") + sep;
const { version, engines } = JSON.parse(readFileSync("package.json", "utf8"));
/** The oldest Node we support, `[major, minor]`: the first version `engines.node` names. */
const nodeFloor = /(\d+)\.(\d+)\.\d+/.exec(engines.node).slice(1, 3).map(Number);

await build({
  entryPoints: { main: "src/cli/main.ts", index: "src/index.ts" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  // Small dependencies are bundled for start-up speed; heavy ones stay external and are imported
  // lazily by the commands that need them.
  external: [
    "@nats-io/*",
    "@modelcontextprotocol/sdk",
    "@modelcontextprotocol/sdk/*",
    "playwright-core",
    // Native: loaded from node_modules by `agent-chat run` alone.
    "@lydell/node-pty",
  ],
  sourcemap: false,
  logLevel: "warning",
  chunkNames: "chunks/[name]-[hash]",
  // Bundled CommonJS dependencies (commander) call require() for Node built-ins.
  banner: {
    js: 'import { createRequire as __cr } from "node:module"; const require = __cr(import.meta.url);',
  },
  define: { __VERSION__: JSON.stringify(version) },
});

// The executable: a few lines of CommonJS (which Node starts faster than an ES module) that
// answer --version, or load the full CLI above, or, for what agents and host tools run all the
// time, one CommonJS file each (one file to load instead of the CLI's chunks and commander):
// the hook, and the hot commands (post, read, wait, peek, channels, tasks, claim).
// bench/README.md ("Start-up") says what must stay out of these two files.
const commonjs = { bundle: true, format: "cjs", platform: "node", target: "node22" };
/** The NATS backend's entry replaced by a module that fails if it is ever loaded. */
const withoutNats = {
  name: "without-nats",
  setup(b) {
    b.onResolve({ filter: /[\\/]store[\\/]nats[\\/]index\.js$/ }, (args) => ({
      path: args.path,
      namespace: "without-nats",
    }));
    b.onLoad({ filter: /.*/, namespace: "without-nats" }, () => ({
      contents: 'throw new Error("a nats:// root is served by the full CLI (dist/main.js)");',
      loader: "js",
    }));
  },
};
// The program's --help as the full CLI prints it to a pipe (not a terminal, whose width it
// would follow), so that the executable can answer `--help` without loading the full CLI.
const env = { ...process.env };
for (const name of ["NODE_OPTIONS", "COLUMNS"]) delete env[name];
const help = execFileSync(process.execPath, ["dist/main.js", "--help"], { encoding: "utf8", env });
/**
 * Code a hot command never runs (search, threads, retention, the daemon's socket client, ...)
 * is reached through `import()`: in the two lean files each such import becomes a `require` of
 * its own file under dist/lazy/, read only by the process that calls it. The file bundles what
 * it imports (a copy of the small shared modules: AgentChatError tells its instances by a
 * brand, not by class identity, for that reason).
 */
const lazy = new Map();
const lazyChunks = (dir) => ({
  name: "lazy-chunks",
  setup(b) {
    b.onResolve({ filter: /^\.\.?\//, namespace: "file" }, async (args) => {
      if (args.pluginData === "lazy" || args.kind !== "dynamic-import") return undefined;
      if (!args.importer.startsWith(SRC)) return undefined;
      const resolved = await b.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: "lazy",
      });
      if (resolved.errors.length > 0 || !resolved.path.startsWith(SRC)) return undefined;
      const name = relative(SRC, resolved.path).replace(/\.ts$/, "").replaceAll(sep, "-");
      lazy.set(name, resolved.path);
      return { path: `./${dir}${name}.cjs`, external: true };
    });
  },
});
await build({
  ...commonjs,
  entryPoints: ["src/cli/bin.ts"],
  outfile: "dist/cli.cjs",
  external: ["./main.js"],
  banner: { js: "#!/usr/bin/env node" },
  define: {
    __VERSION__: JSON.stringify(version),
    __HELP__: JSON.stringify(help),
    __NODE_FLOOR__: JSON.stringify(nodeFloor),
  },
  // Node's entry point is compiled without any cache, on every run: less text, less to parse.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
});
chmodSync("dist/cli.cjs", 0o755);
const lean = {
  ...commonjs,
  define: { __VERSION__: JSON.stringify(version) },
  // Neither serves a URL root (the executable sends those to the full CLI): the NATS backend
  // stays out of both, so V8 has a quarter less to read at each start.
  plugins: [withoutNats, lazyChunks("lazy/")],
  // `import()` as `require`: an `import()` of a lazy file would start Node's ES-module loader,
  // which a lean command otherwise never loads.
  supported: { "dynamic-import": false },
  // Less text for V8 to read at each start; names are kept, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: "warning",
};
for (const [entry, outfile] of [
  ["src/cli/hook-entry.ts", "dist/hook.cjs"],
  ["src/cli/hot-entry.ts", "dist/hot.cjs"],
]) {
  const { metafile } = await build({ ...lean, entryPoints: [entry], outfile });
  // `ANALYZE=1 npm run build` lists what each lean file holds, largest first.
  if (process.env.ANALYZE) console.log(await analyzeMetafile(metafile));
}
// The lazy files, and those they import lazily in turn (resolved beside them).
for (const built = new Set(); built.size < lazy.size; ) {
  for (const [name, path] of [...lazy]) {
    if (built.has(name)) continue;
    built.add(name);
    await build({
      ...lean,
      plugins: [withoutNats, lazyChunks("")],
      entryPoints: [path],
      outfile: `dist/lazy/${name}.cjs`,
    });
  }
}

// The web viewer's page: one browser bundle and its static files, served from dist/viewer by
// src/viewer/server.ts (nothing is fetched from a CDN at run time).
await build({
  entryPoints: { app: "src/viewer/page/main.ts" },
  outdir: "dist/viewer",
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  logLevel: "warning",
});
mkdirSync("dist/viewer", { recursive: true });
for (const file of ["index.html", "app.css", "favicon.svg"]) {
  copyFileSync(`src/viewer/page/${file}`, `dist/viewer/${file}`);
}
for (const project of ["tsconfig.json", "src/viewer/page/tsconfig.json"]) {
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project], {
    stdio: "inherit",
  });
}
