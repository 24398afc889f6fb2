import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OPS } from "../../src/daemon/protocol.js";
import { parseRequest } from "../../src/daemon/requests.js";
import { OPERATIONS, WIRE_OPERATIONS } from "../../src/store/operations.js";

const DOCS = readFileSync(join(import.meta.dirname, "../../docs/daemon.md"), "utf8");

describe("the operation table", () => {
  it("names each op once: a second row of the same name would shadow the first", () => {
    expect(new Set(OPS).size).toBe(OPS.length);
    const methods = OPERATIONS.map((row) => row.method);
    expect(new Set(methods).size).toBe(methods.length);
  });

  it.each([...OPS])("op %s has its line in docs/daemon.md's table of requests", (op) => {
    expect(DOCS).toMatch(new RegExp(`^\\| \`${op}\` +\\|`, "m"));
  });

  it("gives every wire row a schema: its requests are checked field by field", () => {
    for (const row of WIRE_OPERATIONS) {
      expect(() => parseRequest({ id: 1, op: row.op, bogus: 1 }), row.op).toThrow(
        new RegExp(`^${row.op}: "\\w+" is missing|^${row.op}: unknown field "bogus"`),
      );
    }
  });
});
