import { execFileSync, spawn } from "node:child_process";
import { closeSync, constants, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.js";

const WRITER = fileURLToPath(new URL("../helpers/stdio-writer.ts", import.meta.url));
const READER = fileURLToPath(new URL("../helpers/stdin-reader.ts", import.meta.url));

describe("the lean entries' output (write(2) instead of Node's streams)", () => {
  it("a full non-blocking pipe loses nothing and reorders nothing: the stream takes the rest", async () => {
    const lines = 100_000; // ~1 MB, far more than a pipe holds
    const child = spawn(process.execPath, ["--import", "tsx", WRITER, String(lines)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Nothing is read until the big write has returned: had it blocked, it would never return.
    child.stdout.pause();
    let stderr = "";
    await new Promise<void>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes("returned\n")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`exited ${code} first: ${stderr}`)));
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => chunks.push(d));
    child.stdout.resume();
    const code = await new Promise((r) => child.once("close", r));
    expect(code).toBe(0);
    let expected = "";
    for (let i = 0; i < lines; i++) expected += `line ${i}\n`;
    const out = Buffer.concat(chunks).toString();
    expect(out.length).toBe(expected.length + "last\n".length);
    expect(out === `${expected}last\n`).toBe(true);
  });
});

describe("the hook's input read without Node's streams", () => {
  it("takes what a pipe holds without waiting, whole once its writer has closed it", async () => {
    // A pipe as a shell or a Rust host gives it (Node's own spawn gives a socket, read by
    // process.stdin as before).
    const tmp = tempDir();
    const fifo = join(tmp.dir, "stdin");
    execFileSync("mkfifo", [fifo]);
    const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeEnd = openSync(fifo, constants.O_WRONLY);
    const child = spawn(process.execPath, ["--import", "tsx", READER], {
      stdio: [readEnd, "pipe", "inherit"],
    });
    closeSync(readEnd);
    const lines: string[] = [];
    let buffered = "";
    let wake: (() => void) | undefined;
    child.stdout!.on("data", (d: Buffer) => {
      buffered += d.toString();
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
      wake?.();
    });
    const nextLine = async () => {
      while (lines.length === 0) await new Promise<void>((r) => (wake = r));
      return lines.shift()!;
    };
    try {
      expect(await nextLine()).toBe("ready");
      // In the pipe, its writer still open: read at once, said to be incomplete.
      writeSync(writeEnd, '{"a":');
      child.kill("SIGUSR1");
      expect(JSON.parse(await nextLine())).toEqual({ text: '{"a":', complete: false });
      // The rest, then the end: the reader sees all that was left, complete.
      writeSync(writeEnd, "1}");
      closeSync(writeEnd);
      child.kill("SIGUSR1");
      expect(JSON.parse(await nextLine())).toEqual({ text: "1}", complete: true });
    } finally {
      child.kill();
      tmp.cleanup();
    }
  });
});
