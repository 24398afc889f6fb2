import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { runTurn } from "../../src/workspace/index.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * docs/workspace.md's table "Sent to clarification": each example in it, run as a `ws turn`
 * request on a workspace like the one it speaks of, asks what the table says it asks.
 */
const doc = readFileSync("docs/workspace.md", "utf8");
const table = doc.slice(
  doc.indexOf("Sent to clarification (never guessed):"),
  doc.indexOf("`test/workspace/normalize.test.ts` holds"),
);
const rows = table
  .split("\n")
  .filter((line) => /^\| .* \| `ask-/.test(line))
  .flatMap((line) => {
    const [, examples = "", asked = ""] = line.split(/ \| /);
    const clarify = /`(ask-[a-z]+)`/.exec(asked)![1]!;
    return [...examples.matchAll(/_([^_]+)_/g)].map((m) => [m[1]!, clarify] as const);
  });

const made: Array<() => void> = [];
afterAll(() => {
  for (const cleanup of made) cleanup();
});

/**
 * A workspace holding [protocol] and [blog] (with draft.md); for the row about a name that
 * several folders share, [protocol]/[blog] too, as that row says.
 */
async function workspace(twoBlogs: boolean): Promise<string> {
  const { dir, cleanup } = tempDir("agent-chat-ws-doc-");
  made.push(cleanup);
  const setup = ["create a folder protocol", "create a folder blog"];
  setup.push(twoBlogs ? "create a folder blog in protocol" : "store draft.md in blog: hello");
  for (const request of setup) {
    expect((await runTurn(dir, { request, as: "alice" })).applied, request).toBe(true);
  }
  return dir;
}

describe("docs/workspace.md, what is sent to clarification", () => {
  it("lists examples", () => {
    expect(rows.length).toBeGreaterThan(15);
  });

  it.each(rows)("%j asks %s", async (request, clarify) => {
    const dir = await workspace(request === "focus on blog");
    const turn = await runTurn(dir, { request, as: "alice" });
    expect({ clarify: turn.kfile.clarify, reason: turn.reason }).toMatchObject({ clarify });
  });
});
