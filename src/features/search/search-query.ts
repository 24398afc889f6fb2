import { AgentChatError } from "../../core/errors.js";
import {
  findTerm,
  type MatchedText,
  type Span,
  type Term,
  tokenize,
  words,
} from "../../store/records/index.js";

/*
 * The search query language (docs/search.md), pure: words match whole words, `"a phrase"`
 * matches those words in a row, `pre*` matches words that start with `pre`, and a term with no
 * letter or digit in it (`.*`, `->`) matches its characters literally. Every term must match
 * (AND), case-insensitively, in the title or the body. Nothing the user types is ever compiled
 * into a regular expression: a query of regex characters is a literal, never a slow pattern.
 */

/** A query longer than this is refused: no one types it, and it would only cost time. */
export const MAX_QUERY_CHARS = 1_000;
export const MAX_TERMS = 32;

export function parseQuery(query: string): Term[] {
  if (query.length > MAX_QUERY_CHARS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `the search query is ${query.length} characters long; at most ${MAX_QUERY_CHARS}`,
    );
  }
  const terms: Term[] = [];
  for (const m of query.matchAll(/"([^"]*)"?|(\S+)/g)) {
    const term = m[1] !== undefined ? phraseTerm(m[1]) : bareTerm(m[2]!);
    if (term) terms.push(term);
  }
  if (terms.length === 0) {
    throw new AgentChatError("INVALID_ARGUMENT", "the search query is empty: give a word to find");
  }
  if (terms.length > MAX_TERMS) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `the search query has ${terms.length} terms; at most ${MAX_TERMS}`,
    );
  }
  return terms;
}

function phraseTerm(text: string): Term | undefined {
  const found = words(text);
  if (found.length > 0) return { kind: "words", words: found, text: "" };
  const literal = text.trim().toLowerCase();
  return literal ? { kind: "literal", words: [], text: literal } : undefined;
}

function bareTerm(raw: string): Term {
  const found = words(raw);
  if (found.length === 0) return { kind: "literal", words: [], text: raw.toLowerCase() };
  const prefix = raw.endsWith("*") && /[\p{L}\p{N}]\*+$/u.test(raw);
  return { kind: prefix ? "prefix" : "words", words: found, text: "" };
}

const BEFORE = 40;
const AFTER = 100;

/**
 * What a snippet and a marked title put around a match: brackets that text rarely holds, and
 * that do not read as markdown (`**` did, and a body's own `**bold**` then looked like a match).
 */
export const MARK_OPEN = "⟦";
export const MARK_CLOSE = "⟧";

const flat = (s: string) => s.replace(/\s+/g, " ");

/**
 * Some of the body around the match, on one line, the match between {@link MARK_OPEN} and
 * {@link MARK_CLOSE}; the body's start when the match is in the title only (marked there).
 */
export function snippet({ text, span, bodyStart }: MatchedText): string {
  if (span.start < bodyStart) {
    const body = flat(text.slice(bodyStart)).trim();
    return body.length > BEFORE + AFTER ? `${body.slice(0, BEFORE + AFTER)}…` : body;
  }
  const from = Math.max(bodyStart, span.start - BEFORE);
  const to = Math.min(text.length, span.end + AFTER);
  return (
    (from !== bodyStart ? "…" : "") +
    flat(text.slice(from, span.start)).trimStart() +
    `${MARK_OPEN}${flat(text.slice(span.start, span.end))}${MARK_CLOSE}` +
    flat(text.slice(span.end, to)).trimEnd() +
    (to < text.length ? "…" : "")
  );
}

/** The title with where each term matches in it marked, as the snippet marks its match. */
export function markedTitle(terms: readonly Term[], title: string): string {
  const lower = title.toLowerCase();
  // Lower-casing changed the length (a few letters): offsets would not fit the title.
  if (lower.length !== title.length) return title;
  const tokens = tokenize(lower);
  const spans = terms
    .map((term) => findTerm(term, lower, () => tokens))
    .filter((span): span is Span => span !== undefined)
    .sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const { start, end } of spans) {
    if (start < at) continue; // overlaps one already marked
    out += `${title.slice(at, start)}${MARK_OPEN}${title.slice(start, end)}${MARK_CLOSE}`;
    at = end;
  }
  return out + title.slice(at);
}

const UNITS: Record<string, number> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};
const ISO =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A time given as ISO-8601 (`2026-11-01`, `2026-11-01T09:30:00+01:00`; a date alone is UTC
 * midnight) or as an age (`90s`, `30m`, `12h`, `30d`, `2w` ago), in ms since the epoch.
 */
export function parseWhen(value: string, what: string, now: number): number {
  const trimmed = value.trim();
  const age = /^(\d{1,9})([smhdw])$/.exec(trimmed);
  if (age) return now - Number(age[1]) * UNITS[age[2]!]!;
  const ms = ISO.test(trimmed) ? Date.parse(trimmed.replace(" ", "T")) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `${what} ${JSON.stringify(value.slice(0, 60))} is not a date: give 2026-11-01, ` +
        "2026-11-01T09:30:00Z, or an age such as 30d, 12h",
    );
  }
  return ms;
}

/** A duration such as `30d`, `12h`, `90m` in ms (for archive and prune). */
export function parseAge(value: string, what: string): number {
  const age = /^(\d{1,9})([smhdw])$/.exec(value.trim());
  if (!age) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `${what} ${JSON.stringify(value.slice(0, 60))} is not a duration: give e.g. 30d, 12h, 90m`,
    );
  }
  return Number(age[1]) * UNITS[age[2]!]!;
}
