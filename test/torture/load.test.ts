import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { runCli } from "../helpers/cli.js";
import { referencePost } from "../helpers/reference-writer.js";
import { tempDir } from "../helpers/tmp.js";
import { SIZES } from "./sizes.js";
// @ts-expect-error plain ESM helper shared with the worker processes
import { bodyOf } from "./workers/common.mjs";

const run = promisify(execFile);
const worker = (name: string) => fileURLToPath(new URL(`./workers/${name}`, import.meta.url));
const body = bodyOf as (writer: string, i: number) => string;

let tmp: ReturnType<typeof tempDir>;
beforeAll(async () => {
  tmp = tempDir("agent-chat-torture-");
  const store = new FsStore(tmp.dir);
  await store.init("load");
  await store.close();
});
afterAll(() => tmp.cleanup());

describe("load: library and CLI posters, a reference writer and readers, all at once", () => {
  it("every number unique and gapless, every body intact, every reader sees each message once", async () => {
    const { libPosters, libEach, cliPosters, cliEach, readers, refEach } = SIZES;
    const total = libPosters * libEach + cliPosters * cliEach + refEach;

    const readerRuns = Array.from({ length: readers }, (_, r) =>
      run(
        process.execPath,
        // A reader stops as soon as it has every message; the deadline only bounds a failure
        // (the full sizes' CLI posters alone can take minutes on 2 busy cores).
        [worker("reader.mjs"), tmp.dir, "load", `reader${r}`, String(total), "1200000"],
        {
          timeout: 1_260_000,
          maxBuffer: 64 * 1024 * 1024,
        },
      ).then((o) => JSON.parse(o.stdout) as Array<[number, string]>),
    );

    const libRuns = Array.from({ length: libPosters }, (_, p) =>
      run(
        process.execPath,
        [worker("lib-poster.mjs"), tmp.dir, "load", `lib${p}`, String(libEach), "0"],
        {
          timeout: 400_000,
        },
      ),
    );
    const cliRuns = Array.from({ length: cliPosters }, async (_, p) => {
      for (let i = 0; i < cliEach; i++) {
        const r = await runCli(
          ["post", "load", "--from", `cli${p}`, "--title", `t ${i}`, "--body", body(`cli${p}`, i)],
          { root: tmp.dir, timeoutMs: 60_000 },
        );
        expect(r.code, r.stderr).toBe(0);
      }
    });
    const refRun = (async () => {
      for (let i = 0; i < refEach; i++) {
        await referencePost(join(tmp.dir, "load"), {
          from: "ref",
          title: `t ${i}`,
          body: body("ref", i),
        });
        await new Promise((r) => setTimeout(r, Math.random() * 20));
      }
    })();
    await Promise.all([...libRuns, ...cliRuns, refRun]);
    const deliveries = await Promise.all(readerRuns);

    // The channel: numbers 1..total, each once, every body byte-identical to what was sent.
    const store = new FsStore(tmp.dir);
    const all = await store.read("load", { as: "auditor", all: true, peek: true });
    await store.close();
    expect(all.warnings).toEqual([]);
    expect(all.messages.map((m) => m.seq)).toEqual(Array.from({ length: total }, (_, k) => k + 1));
    const expected = new Set<string>();
    for (let p = 0; p < libPosters; p++)
      for (let i = 0; i < libEach; i++) expected.add(body(`lib${p}`, i));
    for (let p = 0; p < cliPosters; p++)
      for (let i = 0; i < cliEach; i++) expected.add(body(`cli${p}`, i));
    for (let i = 0; i < refEach; i++) expected.add(body("ref", i));
    expect(new Set(all.messages.map((m) => m.body))).toEqual(expected);
    const bodyOfSeq = new Map(all.messages.map((m) => [m.seq, m.body]));

    // Every reader: each message exactly once, in order, never a half-written one.
    for (const got of deliveries) {
      const seqs = got.map(([seq]) => seq);
      // Named first: a number skipped inside what the reader got is a lost delivery.
      const have = new Set(seqs);
      const skipped = Array.from({ length: Math.max(0, ...seqs) }, (_, k) => k + 1).filter(
        (seq) => !have.has(seq),
      );
      expect(skipped, "numbers a reader never got").toEqual([]);
      expect(seqs).toEqual(Array.from({ length: total }, (_, k) => k + 1));
      for (const [seq, text] of got) expect(text).toBe(bodyOfSeq.get(seq));
    }

    const dir = join(tmp.dir, "load");
    expect(readdirSync(dir).filter((n) => n.startsWith(".tmp-") || n === "_seq.lock")).toEqual([]);
    console.log(
      `load: ${total} messages (${libPosters}×${libEach} library, ${cliPosters}×${cliEach} CLI, ` +
        `${refEach} reference), ${readers} readers, 0 lost, 0 duplicated`,
    );
  });
});
