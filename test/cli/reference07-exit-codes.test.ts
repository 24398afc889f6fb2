import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { referenceSkipReason, requireReference, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// docs/leases.md's exit-code table is the promise a script written for chat.py relies on: each
// row is run here on ours, and on the real chat.py 0.7.5 where it has the command, on roots
// prepared alike.
const DOC = new URL("../../docs/leases.md", import.meta.url);
const MARKER =
  "<!-- exit-codes: each row is checked by test/cli/reference07-exit-codes.test.ts -->";
const SETUP = [
  "init dev --members alice,bob",
  "lock dev held --as alice",
  "task create dev T1 --title t --from alice",
  "task claim dev T1 --as alice",
];

interface Row {
  command: string;
  reference: number | undefined;
  ours: number;
}

/** The table's rows after the marker: `| \`command\` | chat.py's exit or — | ours | whose |`. */
function tableRows(): Row[] {
  const text = readFileSync(DOC, "utf8");
  const start = text.indexOf(MARKER);
  expect(start, "docs/leases.md lost its exit-code table").toBeGreaterThan(-1);
  const lines = text
    .slice(start + MARKER.length)
    .trimStart()
    .split("\n");
  const body = lines.slice(
    2,
    lines.findIndex((l, i) => i > 1 && !l.startsWith("|")),
  );
  return body.map((line) => {
    const [command, reference, ours] = line
      .split("|")
      .slice(1, 4)
      .map((c) => c.trim());
    return {
      command: (command ?? "").replace(/^`|`$/g, ""),
      reference: reference === "—" ? undefined : Number(reference),
      ours: Number(ours),
    };
  });
}

const rows = tableRows();

/** chat.py's exit status for one row, run without blocking the others. */
function referenceExit(root: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    execFile(requireReference("0.7"), ["--root", root, ...args], { timeout: 20_000 }, (err) =>
      resolve(err ? Number(err.code) : 0),
    );
  });
}
const skip = referenceSkipReason("0.7");

// The rows touch different paths and tasks, or are refused: they run side by side.
describe.concurrent("the exit-code table of docs/leases.md", () => {
  let root: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    root = tempDir();
    for (const line of SETUP) {
      const r = await runCli(line.split(" "), { root: root.dir });
      expect(r.code, `${line}: ${r.stderr}`).toBe(0);
    }
  });
  afterAll(() => root.cleanup());

  it("has rows for chat.py's grammar and for ours", () => {
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.every((r) => Number.isInteger(r.ours))).toBe(true);
  });

  it.each(rows)("ours: $command exits $ours", async ({ command, ours }) => {
    const r = await runCli(command.split(" "), { root: root.dir });
    expect(r.code, r.stderr).toBe(ours);
  });
});

describe.skipIf(skip !== undefined)(
  `the exit-code table, on chat.py 0.7.5${skip ? ` (${skip})` : ""}`,
  () => {
    let root: ReturnType<typeof tempDir>;
    beforeAll(() => {
      root = tempDir();
      for (const line of SETUP) {
        const r = runReference("0.7", root.dir, line.split(" "));
        expect(r.status, `${line}: ${r.stderr}`).toBe(0);
      }
    });
    afterAll(() => root.cleanup());

    const theirs = rows.filter((r) => r.reference !== undefined);
    it.concurrent.each(theirs)(
      "chat.py: $command exits $reference",
      async ({ command, reference }) => {
        expect(await referenceExit(root.dir, command.split(" "))).toBe(reference);
      },
    );
  },
);
