// Bundles the CLI into one file (an unbundled CLI starts ~55 ms slower) and the library entry,
// then emits type declarations. Heavy optional parts stay separate chunks, loaded on demand.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });

// Parts built on other branches (the NATS transport, the web viewer) are imported lazily by the
// CLI. In a build that lacks one, its import becomes a module that fails when loaded, which the
// CLI reports as "not available in this build", instead of failing the whole build.
const OPTIONAL = /\/(store\/nats\/b00t|viewer\/server)\.js$/;
const optionalModules = {
  name: "optional-modules",
  setup(b) {
    b.onResolve({ filter: OPTIONAL }, (args) => {
      const source = resolve(args.resolveDir, args.path).replace(/\.js$/, ".ts");
      if (existsSync(source)) return undefined;
      return { path: args.path, namespace: "missing-optional" };
    });
    b.onLoad({ filter: /.*/, namespace: "missing-optional" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is not in this build`)});`,
      loader: "js",
    }));
  },
};
const { version } = JSON.parse(readFileSync("package.json", "utf8"));

await build({
  entryPoints: { cli: "src/cli/main.ts", index: "src/index.ts" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Small dependencies are bundled for start-up speed; heavy ones stay external and are imported
  // lazily by the commands that need them.
  external: [
    "@nats-io/*",
    "@modelcontextprotocol/sdk",
    "@modelcontextprotocol/sdk/*",
    "playwright-core",
  ],
  sourcemap: false,
  logLevel: "warning",
  chunkNames: "chunks/[name]-[hash]",
  // Bundled CommonJS dependencies (commander) call require() for Node built-ins.
  banner: {
    js: 'import { createRequire as __cr } from "node:module"; const require = __cr(import.meta.url);',
  },
  define: { __VERSION__: JSON.stringify(version) },
  plugins: [optionalModules],
});
chmodSync("dist/cli.js", 0o755);
execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], {
  stdio: "inherit",
});
