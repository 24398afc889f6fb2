import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh temporary folder, removed by the returned function. */
export function tempDir(prefix = "agent-chat-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Writes a file as if it had been there for a while: a malformed file changed in the last two
 * seconds may still be being written, and readers wait for it instead of reporting it.
 */
export function writeOldFile(path: string, data: string | Buffer): void {
  writeFileSync(path, data);
  const past = Date.now() / 1000 - 10;
  utimesSync(path, past, past);
}

/**
 * Makes `agent`'s presence record in a folder root say it was last seen `ms` ago, in its own
 * time and in its file's: what prune judges an agent by.
 */
export function agePresence(root: string, agent: string, ms: number): void {
  const path = join(root, ".presence", `${agent}.json`);
  const record = JSON.parse(readFileSync(path, "utf8")) as { at: number };
  const at = Date.now() - ms;
  writeFileSync(path, JSON.stringify({ ...record, at }));
  utimesSync(path, at / 1000, at / 1000);
}
