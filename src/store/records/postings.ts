import { type Term, words } from "./text-match.js";

/**
 * An inverted index in memory: for each word, the ascending ids of the documents holding it.
 *
 * Written here rather than taken from a search library: search answers newest first, never by
 * relevance, so all it needs of an index is the ids holding some words, and the libraries that
 * fit (minisearch was used first) score every document of every word they are asked for; over
 * 100,000 messages a word found in one message of eight cost 25–50 ms that way, against the
 * 20 ms a query through the daemon may take (bench/README.md, issue 20). Intersecting sorted
 * id lists costs well under a millisecond for the same query.
 */
export class Postings {
  private readonly lists = new Map<string, number[]>();
  /** Every word, sorted, for prefixes; built on the first prefix, then kept sorted. */
  private sorted: string[] | undefined;

  /** Indexes the words of `text` under `id`; ids are added in ascending order. */
  add(id: number, text: string): void {
    for (const word of new Set(words(text))) {
      const ids = this.lists.get(word);
      if (ids) ids.push(id);
      else {
        this.lists.set(word, [id]);
        if (this.sorted) this.sorted.splice(lowerBound(this.sorted, word), 0, word);
      }
    }
  }

  /**
   * The ids holding every whole word of the terms and, for a prefix, a word starting with it;
   * literal terms are not asked (the caller matches them). Ascending.
   */
  match(terms: readonly Term[]): number[] {
    const lists: number[][] = [];
    for (const term of terms) {
      term.words.forEach((word, i) => {
        const prefix = term.kind === "prefix" && i === term.words.length - 1;
        lists.push(prefix ? this.withPrefix(word) : (this.lists.get(word) ?? []));
      });
    }
    return intersect(lists);
  }

  private withPrefix(prefix: string): number[] {
    this.sorted ??= [...this.lists.keys()].sort(byCodeUnit);
    const out: number[][] = [];
    for (let i = lowerBound(this.sorted, prefix); i < this.sorted.length; i++) {
      const word = this.sorted[i]!;
      if (!word.startsWith(prefix)) break;
      out.push(this.lists.get(word)!);
    }
    return union(out);
  }
}

/**
 * The ids in every one of the ascending lists (none given: none): each id of the shortest list
 * is looked up in the others by binary search, each search starting where the last one ended,
 * so a rare word with a common one costs the rare word's length, not the common one's.
 */
export function intersect(lists: number[][]): number[] {
  if (lists.length === 0) return [];
  const [smallest, ...rest] = [...lists].sort((a, b) => a.length - b.length);
  if (rest.length === 0) return smallest!;
  const from = rest.map(() => 0);
  return smallest!.filter((id) =>
    rest.every((list, k) => {
      from[k] = lowerBound(list, id, from[k]!);
      return list[from[k]!] === id;
    }),
  );
}

/** The ids in any of the ascending lists, ascending. */
export function union(lists: number[][]): number[] {
  if (lists.length <= 1) return lists[0] ?? [];
  return [...new Set(lists.flat())].sort((a, b) => a - b);
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The index of the first element of the ascending `sorted`, from `lo` on, not below `value`. */
function lowerBound<T extends number | string>(sorted: T[], value: T, lo = 0): number {
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
