import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const WRITER = fileURLToPath(new URL("../helpers/stdio-writer.ts", import.meta.url));

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
