import { describe, expect, it } from "vitest";
import { LineSplitter, type TooLongLine } from "../../src/core/ndjson.js";

/** A splitter that records what it reports, as text and sizes. */
function splitter(maxLineBytes: number, headBytes?: number) {
  const lines: string[] = [];
  const tooLong: TooLongLine[] = [];
  const s = new LineSplitter({
    maxLineBytes,
    ...(headBytes !== undefined && { headBytes }),
    onLine: (line) => lines.push(new TextDecoder("utf-8", { fatal: true }).decode(line)),
    onTooLong: (t) => tooLong.push({ bytes: t.bytes, head: Buffer.from(t.head) }),
  });
  return { s, lines, tooLong };
}

describe("LineSplitter", () => {
  it("splits lines across and within chunks, keeping an unfinished line until its newline", () => {
    const { s, lines } = splitter(100);
    s.push(Buffer.from('{"a":1}\n{"b"'));
    expect(lines).toEqual(['{"a":1}']);
    expect(s.pendingBytes).toBe(4);
    s.push(Buffer.from(":"));
    s.push(Buffer.from('2}\n\n{"c":3}\n'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}', "", '{"c":3}']);
    expect(s.pendingBytes).toBe(0);
  });

  it("a multi-byte UTF-8 character cut between chunks is whole in its line", () => {
    const { s, lines } = splitter(100);
    const text = Buffer.from("héllo → 🦀\n");
    // Every cut point, including inside the 2-, 3- and 4-byte characters.
    for (let cut = 1; cut < text.length; cut++) {
      s.push(text.subarray(0, cut));
      s.push(text.subarray(cut));
    }
    expect(lines).toHaveLength(text.length - 1);
    expect(new Set(lines)).toEqual(new Set(["héllo → 🦀"]));
  });

  it("a CR before the newline is not part of the line (CRLF is accepted)", () => {
    const { s, lines } = splitter(100);
    s.push(Buffer.from('{"a":1}\r'));
    s.push(Buffer.from('\n{"b":2}\r\n'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  it("reports an over-long line once, as soon as it passes the limit, then resumes at the next line", () => {
    const { s, lines, tooLong } = splitter(10, 4);
    s.push(Buffer.from("ok\n0123456"));
    s.push(Buffer.from("789A"));
    // Reported before any newline came; nothing of it is held.
    expect(tooLong).toEqual([{ bytes: 11, head: Buffer.from("0123") }]);
    expect(s.pendingBytes).toBe(0);
    s.push(Buffer.alloc(1000, "x"));
    s.push(Buffer.from('yyy\n{"good":1}\n'));
    expect(tooLong).toHaveLength(1);
    expect(s.pendingBytes).toBe(0);
    expect(lines).toEqual(["ok", '{"good":1}']);
  });

  it("an over-long line whose newline is in the same chunk is reported with its size; the next line is kept", () => {
    const { s, lines, tooLong } = splitter(5);
    s.push(Buffer.from("abc"));
    s.push(Buffer.from("defgh\nabcde\n"));
    expect(tooLong).toEqual([{ bytes: 8, head: Buffer.alloc(0) }]);
    // Exactly the limit is accepted.
    expect(lines).toEqual(["abcde"]);
  });

  it("never holds more than the limit, however long a line without a newline grows", () => {
    const { s, tooLong } = splitter(64 * 1024);
    let most = 0;
    for (let i = 0; i < 1000; i++) {
      s.push(Buffer.alloc(4096, "x"));
      most = Math.max(most, s.pendingBytes);
    }
    expect(most).toBeLessThanOrEqual(64 * 1024);
    expect(tooLong).toHaveLength(1);
  });

  it("close() ignores the rest of the chunk being pushed and everything after", () => {
    const lines: string[] = [];
    const s: LineSplitter = new LineSplitter({
      maxLineBytes: 100,
      onLine: (line) => {
        lines.push(line.toString());
        if (line.toString() === "stop") s.close();
      },
      onTooLong: () => {},
    });
    s.push(Buffer.from("a\nstop\nb\nc"));
    s.push(Buffer.from("\nd\n"));
    expect(lines).toEqual(["a", "stop"]);
    expect(s.pendingBytes).toBe(0);
  });

  it("reset() drops an unfinished line; the next byte starts a new one", () => {
    const { s, lines } = splitter(100);
    s.push(Buffer.from("half a li"));
    s.reset();
    s.push(Buffer.from("whole\n"));
    expect(lines).toEqual(["whole"]);
  });
});
