/*
 * search.js: search-as-you-type on the home page, from a static index.
 *
 * The build writes the index (this file only reads it), all under <base>search/:
 *   meta.json               {"format": 1, "records": N, "chunk_size": 1000, "prefix_length": 2}
 *   terms/<key>.json        {"<term>": [record index, ...], ...} for every term whose
 *                           first 2 characters give <key> (a-z and 0-9 kept, others "_")
 *   records/<k>.json        [[pith_number, title, authors_text, arxiv_id, url_path], ...]
 *                           for record indexes k*chunk_size ... (k+1)*chunk_size-1
 * Terms are lower-case: the words of titles and authors, and whole identifiers
 * (arXiv id with and without version, DOI, Pith number forms and prefixes).
 *
 * A query is lower-cased. Without white space but with a digit, "/", ":" or "."
 * it is one identifier token; otherwise it is split into words like the titles.
 * Tokens shorter than 2 characters are ignored. A token matches every term that
 * starts with it; the results are the records every token matches. Only the
 * shards and record chunks a query needs are fetched, each at most once.
 *
 * The page: <html data-base="/">, <form id="search" role="search"> with
 * <input id="search-input">, <ol id="search-results">, and optionally
 * <p id="search-status" role="status"> (created after the form if missing).
 */
(function (root) {
  "use strict";

  const MAX_RESULTS = 50;
  const DEBOUNCE_MS = 100;
  const MIN_TOKEN = 2;
  const IDENTIFIER_CHARS = /[0-9/:.]/;
  // Titles are split "on anything not a letter or digit", in any script.
  const NOT_WORD = /[^\p{L}\p{N}]+/u;

  function unique(list) {
    return Array.from(new Set(list));
  }

  function codePointLength(s) {
    return Array.from(s).length;
  }

  /** Query text -> the tokens to match (maybe none). */
  function queryTokens(query) {
    const q = String(query).trim().toLowerCase();
    if (!q) return [];
    const tokens = !/\s/.test(q) && IDENTIFIER_CHARS.test(q) ? [q] : q.split(NOT_WORD);
    return unique(tokens.filter((t) => codePointLength(t) >= MIN_TOKEN));
  }

  /** The word reading of a query, used when an identifier-looking query ("GPT-3") matches nothing. */
  function wordTokens(query) {
    const q = String(query).trim().toLowerCase();
    return unique(q.split(NOT_WORD).filter((t) => codePointLength(t) >= MIN_TOKEN));
  }

  /** The shard a term lives in: its first characters, [a-z0-9] kept, anything else "_". */
  function shardKey(term, length) {
    return Array.from(term)
      .slice(0, length || 2)
      .map((ch) => (/^[a-z0-9]$/.test(ch) ? ch : "_"))
      .join("");
  }

  /** First index in the sorted list whose term is >= token (code-unit order, as Array.sort). */
  function lowerBound(sorted, token) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid] < token) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The index, fetched piece by piece. `fetchJson(url)` returns the parsed
   * JSON, null for a file that does not exist (404), and throws otherwise.
   */
  class SearchIndex {
    constructor(base, fetchJson) {
      this.base = base;
      this.fetchJson = fetchJson;
      this.meta = null;
      this.shards = new Map(); // key -> Promise<{terms: object, sorted: string[]}>
      this.chunks = new Map(); // k -> Promise<array>
    }

    async loadMeta() {
      if (!this.meta) {
        this.meta = this.fetchJson(this.base + "search/meta.json").then((meta) => {
          if (!meta || meta.format !== 1) throw new Error("the search index has an unknown format");
          return meta;
        });
        // A failed load is not cached: the next keystroke tries again.
        this.meta.catch(() => {
          this.meta = null;
        });
      }
      return this.meta;
    }

    shard(key) {
      if (!this.shards.has(key)) {
        const promise = this.fetchJson(this.base + "search/terms/" + key + ".json").then((terms) => {
          // A missing shard means no term starts that way. Keys are sorted once, so a
          // prefix is found by binary search: the terms it starts are contiguous.
          const table = terms && typeof terms === "object" && !Array.isArray(terms) ? terms : {};
          return { terms: table, sorted: Object.keys(table).sort() };
        });
        promise.catch(() => this.shards.delete(key));
        this.shards.set(key, promise);
      }
      return this.shards.get(key);
    }

    chunk(k) {
      if (!this.chunks.has(k)) {
        const promise = this.fetchJson(this.base + "search/records/" + k + ".json").then((rows) => (Array.isArray(rows) ? rows : []));
        promise.catch(() => this.chunks.delete(k));
        this.chunks.set(k, promise);
      }
      return this.chunks.get(k);
    }

    /** Record indexes whose terms start with `token`. */
    async matches(token, prefixLength) {
      const shard = await this.shard(shardKey(token, prefixLength));
      const found = new Set();
      for (let i = lowerBound(shard.sorted, token); i < shard.sorted.length; i++) {
        const term = shard.sorted[i];
        if (!term.startsWith(token)) break;
        const list = shard.terms[term];
        if (Array.isArray(list)) for (const index of list) if (Number.isInteger(index)) found.add(index);
      }
      return found;
    }

    /** Record indexes matching every token, ascending. */
    async indexesFor(tokens) {
      const meta = await this.loadMeta();
      const sets = await Promise.all(tokens.map((t) => this.matches(t, meta.prefix_length)));
      sets.sort((a, b) => a.size - b.size); // intersect from the smallest set
      const result = [];
      if (!sets.length) return result;
      for (const index of sets[0]) if (sets.every((s) => s.has(index))) result.push(index);
      return result.sort((a, b) => a - b);
    }

    /** {tokens, total, rows: [[pith_number, title, authors, arxiv_id, url_path], ...]} */
    async search(query) {
      let tokens = queryTokens(query);
      if (!tokens.length) return { tokens: tokens, total: 0, rows: [] };
      let indexes = await this.indexesFor(tokens);
      if (!indexes.length) {
        // "GPT-3 transformers" splits into words anyway; "GPT-3" alone is read as an
        // identifier first, and only if nothing has that identifier, as words.
        const words = wordTokens(query);
        if (words.length && words.join(" ") !== tokens.join(" ")) {
          tokens = words;
          indexes = await this.indexesFor(tokens);
        }
      }
      const meta = await this.loadMeta();
      const size = meta.chunk_size;
      const shown = indexes.slice(0, MAX_RESULTS);
      const needed = unique(shown.map((i) => Math.floor(i / size)));
      const chunks = new Map();
      await Promise.all(needed.map(async (k) => chunks.set(k, await this.chunk(k))));
      const rows = [];
      for (const i of shown) {
        const row = chunks.get(Math.floor(i / size))[i % size];
        if (Array.isArray(row)) rows.push(row);
      }
      return { tokens: tokens, total: indexes.length, rows: rows };
    }
  }

  /* ---------------------------------------------------------------- page */

  function siteBase() {
    let base = root.document.documentElement.getAttribute("data-base") || "/";
    if (!base.endsWith("/")) base += "/";
    return base;
  }

  /** Only same-site absolute paths become links (never javascript: or other hosts). */
  function sitePath(value) {
    return typeof value === "string" && value.charAt(0) === "/" && value.charAt(1) !== "/" && value.indexOf("\\") < 0 ? value : null;
  }

  async function fetchJson(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error("HTTP " + response.status + " for " + url);
    return response.json();
  }

  function el(tag, className, text) {
    const node = root.document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function renderRow(row) {
    const [pithNumber, title, authors, arxivId, urlPath] = row;
    const li = el("li", "search-result");
    const href = sitePath(urlPath);
    const heading = href ? el("a", "search-title", String(title || pithNumber)) : el("span", "search-title", String(title || pithNumber));
    if (href) heading.setAttribute("href", href);
    li.append(heading);
    const meta = el("div", "search-meta");
    meta.append(el("span", "search-number", String(pithNumber)));
    if (arxivId) meta.append(" · ", el("span", "search-arxiv", "arXiv:" + String(arxivId)));
    li.append(meta);
    if (authors) li.append(el("div", "search-authors", String(authors)));
    return li;
  }

  function countText(total, shown) {
    if (total === 0) return "No records match";
    if (total === 1) return "1 record matches";
    if (shown < total) return total + " records match; showing the first " + shown;
    return total + " records match";
  }

  function setup() {
    const doc = root.document;
    const form = doc.getElementById("search");
    const input = doc.getElementById("search-input");
    const results = doc.getElementById("search-results");
    if (!form || !input || !results) return;
    let status = doc.getElementById("search-status");
    if (!status) {
      status = el("p");
      status.id = "search-status";
      status.setAttribute("role", "status");
      status.setAttribute("aria-live", "polite");
      form.after(status);
    }
    const index = new SearchIndex(siteBase(), fetchJson);
    let timer = null;
    let generation = 0; // answers to old queries arriving late are dropped

    async function run() {
      const mine = ++generation;
      const query = input.value;
      if (!query.trim()) {
        results.textContent = "";
        status.textContent = "";
        return;
      }
      if (!queryTokens(query).length) {
        results.textContent = "";
        status.textContent = "Type at least " + MIN_TOKEN + " letters or digits";
        return;
      }
      let answer;
      try {
        answer = await index.search(query);
      } catch (err) {
        if (mine !== generation) return;
        results.textContent = "";
        status.textContent = "Search is not available right now (the search index could not be loaded)";
        return;
      }
      if (mine !== generation) return;
      results.textContent = "";
      for (const row of answer.rows) results.append(renderRow(row));
      status.textContent = countText(answer.total, answer.rows.length);
    }

    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(run, DEBOUNCE_MS);
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      clearTimeout(timer);
      run();
    });
    // A shared link like /?q=varuna runs its search on arrival.
    const initial = new URLSearchParams(root.location.search).get("q");
    if (initial && !input.value) input.value = initial;
    if (input.value) run();
  }

  const api = { queryTokens: queryTokens, wordTokens: wordTokens, shardKey: shardKey, SearchIndex: SearchIndex, MAX_RESULTS: MAX_RESULTS };
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) {
    root.PithSearch = api;
    if (root.document) {
      if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", setup);
      else setup();
    }
  }
})(typeof window !== "undefined" ? window : null);
