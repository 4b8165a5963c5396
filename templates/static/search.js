/*
 * search.js: search-as-you-type on the home page, from a static index.
 *
 * The build writes the index (this file only reads it), all under <base>search/:
 *   meta.json               {"format": 1, "records": N, "chunk_size": 1000, "prefix_length": 2}
 *   terms/<key>.json        {"<term>": [record index, ...], ...} for every term whose
 *                           first 2 characters give <key> (a-z and 0-9 kept, others "_")
 *   records/<k>.json        [[pith_number, title, authors_text, arxiv_id, url_path], ...]
 *                           for record indexes k*chunk_size ... (k+1)*chunk_size-1
 * Terms are lower-case: the words of titles and authors (NFC, split on anything
 * but letters, digits and combining marks), and whole identifiers (arXiv id with
 * and without version, DOI, Pith number forms and prefixes).
 *
 * A query is put in NFC, lower-cased and split at white space. A piece with a
 * digit, "/", ":" or "." is an identifier, once a prefix that names its kind is
 * taken off ("arXiv:", "doi:", https://doi.org/, https://arxiv.org/abs/): it
 * matches a record with that identifier, or, when no record has one, as its
 * words. Any other piece is split into words like the titles. Tokens shorter
 * than 2 characters are ignored. A token matches every term that starts with
 * it; the results are the records every piece matches. Only the shards and
 * record chunks a query needs are fetched, each at most once.
 *
 * The page: <html data-base="/">, <form id="search" role="search"> with
 * <input id="search-input">, <ol id="search-results">, and optionally
 * <p id="search-status" role="status"> (created after the form if missing).
 * While a query is searched, its results stand in for the page's listing (the
 * <section> holding #list-h, hidden meanwhile), and the query is kept in the
 * address as ?q=, so that reloading, going back or sharing the link finds it.
 */
(function (root) {
  "use strict";

  const MAX_RESULTS = 50;
  const DEBOUNCE_MS = 100;
  const MIN_TOKEN = 2;
  const IDENTIFIER_CHARS = /[0-9/:.]/;
  // Titles are split on anything not a letter, digit or combining mark, in any
  // script (a mark belongs to the letter before it: "हिन्दी" is one word).
  const NOT_WORD = /[^\p{L}\p{N}\p{M}]+/u;
  // How identifiers are written and pasted; the index holds the value alone.
  const ID_PREFIXES = [/^https?:\/\/(?:dx\.)?doi\.org\//, /^doi:/, /^https?:\/\/(?:www\.)?arxiv\.org\/abs\//, /^arxiv:/];

  function unique(list) {
    return Array.from(new Set(list));
  }

  function codePointLength(s) {
    return Array.from(s).length;
  }

  function words(text) {
    return unique(text.split(NOT_WORD).filter((t) => codePointLength(t) >= MIN_TOKEN));
  }

  function withoutPrefix(piece) {
    const prefix = ID_PREFIXES.find((p) => p.test(piece));
    return prefix ? piece.replace(prefix, "") : piece;
  }

  /**
   * Query text -> its pieces, each a record must match: {id, words} for an
   * identifier (its words are tried when no record has it), {id: null, words: [w]}
   * for a word.
   */
  function queryPieces(query) {
    const pieces = [];
    for (const piece of String(query).normalize("NFC").toLowerCase().split(/\s+/)) {
      const value = withoutPrefix(piece);
      if (IDENTIFIER_CHARS.test(value) && codePointLength(value) >= MIN_TOKEN) {
        pieces.push({ id: value, words: words(value) });
      } else {
        for (const word of words(value)) pieces.push({ id: null, words: [word] });
      }
    }
    return pieces;
  }

  /** Query text -> the tokens it may be matched by (maybe none). */
  function queryTokens(query) {
    return unique(queryPieces(query).flatMap((p) => (p.id === null ? p.words : [p.id])));
  }

  /** The shard a term lives in: its first characters, [a-z0-9] kept, anything else "_". */
  function shardKey(term, length) {
    return Array.from(term)
      .slice(0, length || 2)
      .map((ch) => (/^[a-z0-9]$/.test(ch) ? ch : "_"))
      .join("");
  }

  /** The numbers in every one of `sets`, ascending ([] for no sets). */
  function intersection(sets) {
    sets.sort((a, b) => a.size - b.size); // from the smallest set
    const result = [];
    if (!sets.length) return result;
    for (const index of sets[0]) if (sets.every((s) => s.has(index))) result.push(index);
    return result.sort((a, b) => a - b);
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
      return intersection(await Promise.all(tokens.map((t) => this.matches(t, meta.prefix_length))));
    }

    /** A piece's records and the tokens that found them: an identifier ("GPT-3") is
     * read as its words only when no record has it. */
    async piece(piece) {
      if (piece.id !== null) {
        const found = await this.indexesFor([piece.id]);
        if (found.length || !piece.words.length) return { tokens: [piece.id], indexes: found };
      }
      return { tokens: piece.words, indexes: await this.indexesFor(piece.words) };
    }

    /** {tokens, total, rows: [[pith_number, title, authors, arxiv_id, url_path], ...]} */
    async search(query) {
      const pieces = queryPieces(query);
      if (!pieces.length) return { tokens: [], total: 0, rows: [] };
      const found = await Promise.all(pieces.map((p) => this.piece(p)));
      const tokens = unique(found.flatMap((f) => f.tokens));
      const indexes = intersection(found.map((f) => new Set(f.indexes)));
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
    // A URL parser drops tabs and line breaks anywhere ("/\t/host" is "//host"): no control character passes
    return typeof value === "string" && /^\/(?![\/\\])[^\\\x00-\x1f\x7f]*$/.test(value) ? value : null;
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
    const heading = doc.getElementById("list-h");
    const listing = heading ? heading.closest("section") : null;
    let timer = null;
    let generation = 0; // answers to old queries arriving late are dropped

    /** The query in the address (?q=), replacing the entry: one history entry a page, not a keystroke. */
    function keepInAddress(query) {
      try {
        const url = new URL(root.location.href);
        if (query.trim()) url.searchParams.set("q", query);
        else url.searchParams.delete("q");
        if (url.href !== root.location.href) root.history.replaceState(root.history.state, "", url.href);
      } catch (err) {
        // (an address that cannot be changed, as some file:// pages: the search still works)
      }
    }

    async function run() {
      const mine = ++generation;
      const query = input.value;
      keepInAddress(query);
      if (listing) listing.hidden = queryTokens(query).length > 0;
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

  const api = { sitePath: sitePath, queryTokens: queryTokens, queryPieces: queryPieces, shardKey: shardKey, SearchIndex: SearchIndex, MAX_RESULTS: MAX_RESULTS };
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) {
    root.PithSearch = api;
    if (root.document) {
      if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", setup);
      else setup();
    }
  }
})(typeof window !== "undefined" ? window : null);
