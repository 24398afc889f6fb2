import { describe, expect, it } from "vitest";
import { parseQuery } from "../../src/features/search/search-query.js";
import { intersect, Postings, union } from "../../src/store/records/index.js";

describe("postings (the in-memory search index)", () => {
  it("answers words, phrases' words and prefixes, including words added after a prefix query", () => {
    const p = new Postings();
    p.add(0, "Deploy the schema");
    p.add(1, "rollback of the deploy");
    p.add(2, "Roll forward");
    expect(p.match(parseQuery("deploy"))).toEqual([0, 1]);
    expect(p.match(parseQuery("roll*"))).toEqual([1, 2]);
    expect(p.match(parseQuery('"the deploy" roll*'))).toEqual([1]);
    // The sorted word list built by the prefix query takes in words that come later.
    p.add(3, "rolling restart, then deploy");
    p.add(4, "a ROLE change");
    expect(p.match(parseQuery("roll*"))).toEqual([1, 2, 3]);
    expect(p.match(parseQuery("rol*"))).toEqual([1, 2, 3, 4]);
    expect(p.match(parseQuery("roll* deploy"))).toEqual([1, 3]);
    expect(p.match(parseQuery("nowhere"))).toEqual([]);
    expect(p.match(parseQuery("zz*"))).toEqual([]);
  });

  it("intersects and unites ascending id lists", () => {
    expect(intersect([])).toEqual([]);
    expect(intersect([[1, 5, 9]])).toEqual([1, 5, 9]);
    expect(
      intersect([
        [1, 2, 3, 5, 8, 13, 21],
        [2, 3, 5, 7, 11, 13],
        [3, 13, 99],
      ]),
    ).toEqual([3, 13]);
    expect(union([])).toEqual([]);
    expect(union([[3, 9], [1, 9, 12], [2]])).toEqual([1, 2, 3, 9, 12]);
  });
});
