import { spawn } from "node:child_process";
import { existsSync, lstatSync, readdirSync, readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { SIZES } from "./sizes.js";
// @ts-expect-error plain ESM helper shared with the worker processes
import { bodyOf } from "./workers/common.mjs";

const worker = (name: string) => fileURLToPath(new URL(`./workers/${name}`, import.meta.url));
const body = bodyOf as (writer: string, i: number) => string;

let tmp: ReturnType<typeof tempDir>;
let dir: string;
beforeAll(async () => {
  tmp = tempDir("agent-chat-crash-");
  const store = new FsStore(tmp.dir);
  await store.init("crash");
  await store.close();
  dir = join(tmp.dir, "crash");
});
afterAll(() => tmp.cleanup());

/** Starts a process, kills it with SIGKILL after `afterMs`, and returns what it printed. */
function killAfter(args: string[], afterMs: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    // Start the clock once the process is up (its first ack), so kills land mid-work.
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      timer ??= setTimeout(() => child.kill("SIGKILL"), afterMs);
    };
    child.stdout.once("data", arm);
    const fallback = setTimeout(arm, 3000);
    child.on("close", () => {
      clearTimeout(timer);
      clearTimeout(fallback);
      resolve(out);
    });
  });
}

describe("crashes: SIGKILL posters and readers at random points", () => {
  it("loses no acknowledged post, duplicates nothing, and the next post never waits on a dead owner", async () => {
    const acked = new Map<number, string>();
    const store = new FsStore(tmp.dir);
    let deadOwner = 0;
    const nextPostMs: number[] = [];
    for (let k = 0; k < SIZES.crashes; k++) {
      const killReader = k % 4 === 3;
      const out = killReader
        ? await killAfter(
            [worker("reader.mjs"), tmp.dir, "crash", "victim", "1000000", "60000"],
            Math.random() * 40,
          )
        : await killAfter(
            [worker("lib-poster.mjs"), tmp.dir, "crash", `w${k}`, "100000", "0"],
            Math.random() * 30,
          );
      for (const line of out.split("\n")) {
        const m = /^ack (\d+) (\d+)$/.exec(line);
        if (!m) continue;
        const seq = Number(m[1]);
        expect(acked.has(seq), `seq ${seq} acknowledged twice`).toBe(false);
        acked.set(seq, body(`w${k}`, Number(m[2])));
      }
      // A kill at any point leaves either no lock or a directory chat.py can remove, marked as
      // ours (sticky), which the next post takes over at once: never one like chat.py's, that
      // only the 30 s rule would clear.
      const lock = lstatSync(join(dir, "_seq.lock"), { throwIfNoEntry: false });
      if (lock) {
        expect(lock.isDirectory() && (lock.mode & 0o1000) !== 0, "a lock not marked ours").toBe(
          true,
        );
        deadOwner++;
      }
      const t0 = performance.now();
      const { seq } = await store.post("crash", {
        from: "survivor",
        title: `after ${k}`,
        body: `after ${k}`,
      });
      nextPostMs.push(performance.now() - t0);
      acked.set(seq, `after ${k}`);
      // A reader killed while saving its cursor leaves the old or the new value, never garbage.
      const cursorFile = join(dir, ".cursors", "victim.txt");
      if (existsSync(cursorFile)) expect(readFileSync(cursorFile, "utf8")).toMatch(/^\d+$/);
    }

    const all = await store.read("crash", { as: "auditor", all: true, peek: true });
    expect(all.warnings).toEqual([]);
    const seqs = all.messages.map((m) => m.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    const onDisk = new Map(all.messages.map((m) => [m.seq, m.body]));
    for (const [seq, text] of acked) expect(onDisk.get(seq), `acknowledged #${seq}`).toBe(text);
    expect(Math.max(...nextPostMs)).toBeLessThan(1000);

    // Temporary files of killed writers are never delivered, and are cleaned once abandoned;
    // so are the owner directories of killed posters.
    const leftovers = readdirSync(dir).filter(
      (n) => n.startsWith(".tmp-") || n.startsWith(".seq.lock."),
    );
    const old = Date.now() / 1000 - 120;
    for (const name of leftovers) utimesSync(join(dir, name), old, old);
    // (The store may already be cleaning in the background: what counts is that none remain.)
    await store.cleanLeftovers("crash");
    expect(
      readdirSync(dir).filter((n) => n.startsWith(".tmp-") || n.startsWith(".seq.lock.")),
    ).toEqual([]);
    await store.close();
    console.log(
      `crash: ${SIZES.crashes} SIGKILLs, ${acked.size} acknowledged posts, 0 lost, 0 duplicated; ` +
        `${deadOwner} locks left by a dead owner (taken at once), none without an owner, ` +
        `${leftovers.length} leftover files cleaned; slowest next post ${Math.max(...nextPostMs).toFixed(1)} ms`,
    );
  });
});
