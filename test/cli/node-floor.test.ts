import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * On a Node older than the supported lines the executable says so and exits 1, before it
 * touches anything that Node lacks (Node 20 has no `module.enableCompileCache`: a stack trace
 * otherwise). The Node it runs on is told a version by a preload, since CI has no old Node.
 */
let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir();
});
afterAll(() => tmp.cleanup());

const floor = /(\d+\.\d+)\.\d+/.exec(
  (JSON.parse(readFileSync("package.json", "utf8")) as { engines: { node: string } }).engines.node,
)![1]!;

function asNode(version: string, args: string[]) {
  const preload = join(tmp.dir, `node-${version}.cjs`);
  writeFileSync(
    preload,
    `Object.defineProperty(process.versions, "node", { value: ${JSON.stringify(version)} });`,
  );
  return runCli(args, {
    root: join(tmp.dir, "root"),
    env: { NODE_OPTIONS: `--require ${preload}` },
  });
}

describe("a Node older than the supported lines", () => {
  it.each(["20.20.2", "22.18.0", "18.20.8"])(
    "Node %s: one line naming the floor, exit 1",
    async (v) => {
      for (const args of [["--version"], ["channels"], ["roster", "x"]]) {
        const r = await asNode(v, args);
        expect(r.code, args.join(" ")).toBe(1);
        expect(r.stdout).toBe("");
        expect(r.stderr).toBe(
          `agent-chat: Node ${floor} or later is needed; this is Node v${v}. ` +
            'Use a supported line (22, 24 or 26): README.md, "Which Node".\n',
        );
      }
    },
  );

  it("the floor itself runs", async () => {
    const r = await asNode(`${floor}.0`, ["--version"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
