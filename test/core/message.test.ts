import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatTo,
  isRelevant,
  messageFileName,
  type NewMessage,
  parseMessage,
  parseTo,
  seqOfFileName,
  serializeMessage,
} from "../../src/core/message.js";

const base: NewMessage = {
  seq: 12,
  from: "alice",
  to: "bob",
  channel: "review",
  ts: "2026-07-17T14:03:22+07:00",
  status: "discussion",
  title: "Converge schema v0.2",
  body: "Body line\n",
};

describe("serializeMessage", () => {
  it("writes the reference's bytes: field order, reply_to only when set, body + one newline", () => {
    expect(serializeMessage({ ...base, replyTo: 11, body: "hello\n\n\n" })).toBe(
      "---\nseq: 12\nfrom: alice\nto: bob\nreply_to: 11\nchannel: review\n" +
        "ts: 2026-07-17T14:03:22+07:00\nstatus: discussion\ntitle: Converge schema v0.2\n---\nhello\n",
    );
    expect(serializeMessage(base)).not.toContain("reply_to");
  });

  it("defaults to and status as the reference does", () => {
    const text = serializeMessage({ ...base, to: undefined, status: undefined });
    expect(text).toContain("\nto: all\n");
    expect(text).toContain("\nstatus: discussion\n");
  });

  it("turns every kind of line break inside a value into a space", () => {
    const text = serializeMessage({
      ...base,
      title: "a\nb\r\nc\rd\u2028e\u2029f\u0085g\vh\fi",
    });
    expect(text).toContain("\ntitle: a b c d e f g h i\n");
    expect(text.split("\n").filter((l) => l === "---")).toHaveLength(2);
  });

  it("keeps extra fields after the reference's, one line each", () => {
    const text = serializeMessage({ ...base, extra: { metadata: '{"ticket":"OPS-1"}' } });
    expect(text).toContain('\ntitle: Converge schema v0.2\nmetadata: {"ticket":"OPS-1"}\n---\n');
  });
});

describe("messageFileName / seqOfFileName", () => {
  it("pads to 4 digits, more past 9999", () => {
    expect(messageFileName(12, "Alice", "Converge schema v0.2")).toBe(
      "0012-alice-converge-schema-v0-2.md",
    );
    expect(messageFileName(12345, "a", "")).toBe("12345-a-msg.md");
  });

  it.each([
    ["0012-alice-x.md", 12],
    ["12345-a-msg.md", 12345],
    ["2024-notes.md", 2024],
    ["_meta.json", undefined],
    [".0001-x.md", undefined],
    ["0001-x.txt", undefined],
    ["0001x.md", undefined],
    ["task-1.md", undefined],
  ])("%j → %j", (name, seq) => {
    expect(seqOfFileName(name)).toBe(seq);
  });
});

describe("parseMessage", () => {
  it("splits each line at its first colon, so 'Re: schema' stays whole", () => {
    const r = parseMessage(
      "---\nseq: 3\nfrom: bob\nto: alice\ntitle: Re: schema: v2\n---\nok\n",
      "0003-bob-re.md",
      "c",
    );
    expect(r.ok && r.message.title).toBe("Re: schema: v2");
  });

  it("parses CRLF files written by Windows editors and a BOM", () => {
    const r = parseMessage(
      "\uFEFF---\r\nseq: 1\r\nfrom: bob\r\nto: all\r\ntitle: hi\r\n---\r\nline\r\n",
      "0001-bob-hi.md",
      "c",
    );
    expect(r.ok).toBe(true);
    expect(r.ok && r.message).toMatchObject({ from: "bob", title: "hi", body: "line" });
  });

  it("takes the seq from the file name, and the folder as the channel", () => {
    const r = parseMessage("---\nseq: 99\nfrom: a\nchannel: elsewhere\n---\nx\n", "0007-a.md", "c");
    expect(r.ok && [r.message.seq, r.message.channel]).toEqual([7, "c"]);
  });

  it.each([
    ["no frontmatter", "just text\n"],
    ["unclosed frontmatter", "---\nseq: 1\nfrom: a\nbody without end\n"],
    ["frontmatter has no 'from'", "---\nseq: 1\nto: all\n---\nx\n"],
    ["binary content", "---\nfrom: a\n---\n\0\0\0"],
    ["no frontmatter", ""],
  ])("refuses a file with %s", (reason, text) => {
    const r = parseMessage(text, "0001-a.md", "c");
    expect(r).toEqual({ ok: false, reason });
  });

  it("round-trips: parse(serialize(m)) keeps every field", () => {
    fc.assert(
      fc.property(
        fc.record({
          seq: fc.integer({ min: 1, max: 10_000_000 }),
          from: fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/),
          to: fc.oneof(
            fc.constant("all"),
            fc.stringMatching(/^[a-z][a-z0-9-]{0,8}(,[a-z][a-z0-9-]{0,8}){0,3}$/),
          ),
          title: fc
            .string({ maxLength: 60 })
            .map((s) => s.replace(/[\s\u0085\u2028\u2029]+/g, " ").trim()),
          status: fc.stringMatching(/^[a-z-]{1,12}$/),
          body: fc
            .string({ minLength: 1, maxLength: 300 })
            .filter((s) => s.trim() !== "" && !s.includes("\0")),
          replyTo: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
        }),
        (m) => {
          const input: NewMessage = { ...m, channel: "c", ts: "2026-01-01T00:00:00+00:00" };
          if (m.replyTo === undefined) delete input.replyTo;
          const file = messageFileName(m.seq, m.from, m.title);
          const r = parseMessage(serializeMessage(input), file, "c");
          expect(r.ok).toBe(true);
          if (!r.ok) return;
          expect(r.message.seq).toBe(m.seq);
          expect(r.message.from).toBe(m.from);
          expect(r.message.to).toBe(m.to);
          expect(r.message.title).toBe(m.title);
          expect(r.message.status).toBe(m.status);
          expect(r.message.replyTo).toBe(m.replyTo);
          expect(r.message.body).toBe(m.body.replace(/\r\n?/g, "\n").trimEnd());
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("parseTo / formatTo / isRelevant", () => {
  it.each([
    ["", true, []],
    ["all", true, []],
    ["ALL", true, []],
    ["*", true, []],
    ["[]", true, []],
    ["bob", false, ["bob"]],
    ["bob, Carol", false, ["bob", "carol"]],
    ["[bob, carol]", false, ["bob", "carol"]],
    ['["bob"]', false, ["bob"]],
    ["bob,all", true, []],
  ])("parseTo(%j) → broadcast %s, %j", (raw, broadcast, names) => {
    expect(parseTo(raw)).toEqual({ broadcast, names });
  });

  it("never yields an empty or whitespace name, whatever the input", () => {
    fc.assert(
      fc.property(fc.string(), (raw) => {
        const r = parseTo(raw);
        expect(r.names.every((n) => n.length > 0 && n === n.trim())).toBe(true);
        if (r.broadcast) expect(r.names).toEqual([]);
      }),
    );
  });

  it("formatTo writes a clean comma list, or all", () => {
    expect(formatTo(["bob", " carol "])).toBe("bob,carol");
    expect(formatTo("bob, carol")).toBe("bob,carol");
    expect(formatTo(undefined)).toBe("all");
    expect(formatTo("*")).toBe("all");
  });

  it("relevance: someone else's broadcast or a message naming me; never my own", () => {
    expect(isRelevant({ from: "alice", to: "all" }, "bob")).toBe(true);
    expect(isRelevant({ from: "alice", to: "bob,carol" }, "Bob")).toBe(true);
    expect(isRelevant({ from: "alice", to: "carol" }, "bob")).toBe(false);
    expect(isRelevant({ from: "Bob", to: "all" }, "bob")).toBe(false);
    expect(isRelevant({ from: "bob", to: "bob" }, "bob")).toBe(false);
  });
});
