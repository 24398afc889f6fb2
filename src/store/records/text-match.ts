import type { Message } from "../../core/message.js";

/**
 * How a search term matches a message (the query language itself: features/search/
 * search-query.ts), here below the features because a backend's stored index (the folder
 * store's postings) matches with it too.
 */
export interface Term {
  kind: "words" | "prefix" | "literal";
  /** Lower-cased words in a row; for `prefix` the last one is a prefix. */
  words: string[];
  /** The lower-cased text of a literal term. */
  text: string;
}

const WORD = /[\p{L}\p{N}]+/gu;

export interface Token {
  word: string;
  start: number;
  end: number;
}

/** The words of an already lower-cased text, with where each is. */
export function tokenize(lower: string): Token[] {
  const out: Token[] = [];
  for (const m of lower.matchAll(WORD)) {
    out.push({ word: m[0], start: m.index, end: m.index + m[0].length });
  }
  return out;
}

export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** Where a term matched in a lower-cased text. */
export interface Span {
  start: number;
  end: number;
}

/** The first place `term` matches in `lower` (with its tokens), or undefined. */
export function findTerm(term: Term, lower: string, tokens: () => Token[]): Span | undefined {
  if (term.kind === "literal") {
    const at = lower.indexOf(term.text);
    return at < 0 ? undefined : { start: at, end: at + term.text.length };
  }
  // A cheap rejection before tokenizing: each word must occur somewhere as text.
  for (const w of term.words) if (!lower.includes(w)) return undefined;
  const list = tokens();
  const n = term.words.length;
  for (let i = 0; i + n <= list.length; i++) {
    if (wordsAt(term, list, i)) return { start: list[i]!.start, end: list[i + n - 1]!.end };
  }
  return undefined;
}

function wordsAt(term: Term, list: Token[], i: number): boolean {
  const n = term.words.length;
  for (let k = 0; k < n; k++) {
    const word = list[i + k]!.word;
    const want = term.words[k]!;
    const last = k === n - 1 && term.kind === "prefix";
    if (last ? !word.startsWith(want) : word !== want) return false;
  }
  return true;
}

/** Where every term matched in a message's title and body, or undefined when one did not. */
export function matchMessage(terms: readonly Term[], message: Message): MatchedText | undefined {
  const text = `${message.title}\n${message.body}`;
  const lower = text.toLowerCase();
  let cached: Token[] | undefined;
  const tokens = () => {
    cached ??= tokenize(lower);
    return cached;
  };
  let first: Span | undefined;
  for (const term of terms) {
    const span = findTerm(term, lower, tokens);
    if (!span) return undefined;
    first ??= span;
  }
  // Lower-casing can change a text's length (a few letters): show the lower-cased text then.
  const shown = lower.length === text.length ? text : lower;
  const bodyStart = message.title.length + 1;
  return { text: shown, span: inBody(terms[0]!, lower, bodyStart) ?? first!, bodyStart };
}

/** Where the term matches in the body (the title is shown beside a hit anyway). */
function inBody(term: Term, lower: string, bodyStart: number): Span | undefined {
  const body = lower.slice(bodyStart);
  const span = findTerm(term, body, () => tokenize(body));
  return span && { start: span.start + bodyStart, end: span.end + bodyStart };
}

export interface MatchedText {
  /** The title, a newline, the body. */
  text: string;
  span: Span;
  /** Where the body starts in `text`: a match in the body shows the body only. */
  bodyStart: number;
}

/** What the filters and the order need of a message, before its file is read. */
export type MessageMeta = Pick<Message, "seq" | "channel" | "ts" | "from" | "to" | "status">;

/** A hot message a backend's stored index proposes: what it says of it, and the real thing. */
export interface Candidate {
  /** The index's word for it (untrusted: the message is checked again once loaded). */
  meta: MessageMeta;
  /** The message as its file holds it now; undefined when it is gone. */
  load(): Promise<Message | undefined>;
}
