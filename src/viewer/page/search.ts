import { byId, h } from "./dom.js";

/** What GET /api/search answers (the library's SearchResult, the fields the page shows). */
interface SearchResult {
  hits: Array<{ channel: string; seq: number; from: string; markedTitle: string; snippet: string }>;
  total: number;
}

/**
 * The search box in the top bar: Enter asks the server (GET /api/search) and lists the newest
 * matches under it; each links to its message (#/<channel>/<seq>), which the page scrolls to.
 * Everything from a message is set as text; the title's and snippet's ⟦marks⟧ become <mark>s.
 */
export function initSearch(): void {
  const form = byId<HTMLFormElement>("search");
  const input = byId<HTMLInputElement>("search-input");
  const results = byId("search-results");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = input.value.trim();
    if (!query) {
      results.hidden = true;
      return;
    }
    void run(query, results);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") results.hidden = true;
  });
  results.addEventListener("click", (event) => {
    if ((event.target as HTMLElement).closest("a")) results.hidden = true;
  });
}

async function run(query: string, results: HTMLElement): Promise<void> {
  results.replaceChildren(h("p", { class: "search-note" }, "Searching…"));
  results.hidden = false;
  try {
    const res = await fetch(`api/search?q=${encodeURIComponent(query)}`, {
      credentials: "omit",
    });
    const body = (await res.json()) as SearchResult & { error?: { message: string } };
    if (!res.ok) throw new Error(body.error?.message ?? `HTTP ${res.status}`);
    render(body, results);
  } catch (err) {
    results.replaceChildren(h("p", { class: "search-note error" }, (err as Error).message));
  }
}

function render(result: SearchResult, results: HTMLElement): void {
  if (result.hits.length === 0) {
    results.replaceChildren(h("p", { class: "search-note" }, "No messages match."));
    return;
  }
  const items = result.hits.map((hit) =>
    h(
      "li",
      {},
      h(
        "a",
        { href: `#/${encodeURIComponent(hit.channel)}/${hit.seq}` },
        h("span", { class: "search-where" }, `${hit.channel} #${hit.seq} · ${hit.from}`),
        marked("search-title", hit.markedTitle),
        marked("search-snippet", hit.snippet),
      ),
    ),
  );
  const list = h("ul", { class: "search-list" }, ...items);
  const more = h("p", { class: "search-note" }, `${result.total} matches; the newest shown`);
  if (result.total > result.hits.length) results.replaceChildren(list, more);
  else results.replaceChildren(list);
}

/** `a ⟦b⟧ c` as text with the marked parts in <mark> (the search's MARK_OPEN, MARK_CLOSE). */
function marked(className: string, text: string): HTMLElement {
  const parts = text.split(/⟦([^⟧]*)⟧/);
  return h(
    "span",
    { class: className },
    ...parts.map((part, i) => (i % 2 === 1 ? h("mark", {}, part) : part)),
  );
}
