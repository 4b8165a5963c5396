/*
 * resolve.js: the alias resolver, on a static host.
 *
 * The resolver's look-ups are query strings (/api/pith-number/resolve?arxiv=2111.04007&json=true),
 * which a static host cannot answer. The build writes index files instead (lookups.py):
 *   <base>api/pith-number/resolve/index.json = {"shard_hex_digits": W, ...}
 *   <base>api/pith-number/resolve/<kind>/<shard>.json
 *     = {"alias_kind", "shard", "entries": {"<key>": {"pith_number", "record": "<record page path>",
 *        "json": "<record JSON path>"}, ...}}
 * where <key> is the value as looked up (a DOI lower-cased) and <shard> the first W lower-case hex
 * digits of SHA-256 of the key's UTF-8 bytes; a shard with no entries is not written.
 * <base>api/pith-number/resolve/index.html loads canonical.js (for SHA-256, in plain JS: a mirror
 * served over plain HTTP has no Web Crypto) and this script, which reads the query string, reads W,
 * fetches the shard and goes to the record page (or its JSON with json=true|1).
 *
 * The key and shard rule is the build's (layout.py: lookup_key, shard_hex) and must stay identical.
 */
(function (root) {
  "use strict";

  const C =
    root && root.PithCanonical
      ? root.PithCanonical
      : typeof require === "function"
        ? require("./canonical.js")
        : null;

  // The order also decides which kind wins if a query names several.
  const KINDS = ["arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16"];

  /** The value as a look-up finds it (a DOI lower-cased, as DOIs compare), or null when no
   * look-up can have it. */
  function lookupKey(kind, value) {
    if (KINDS.indexOf(kind) < 0 || typeof value !== "string" || value === "") return null;
    return kind === "doi" ? value.toLowerCase() : value;
  }

  /** The shard a key is filed in: the first `width` hex digits of SHA-256 of its UTF-8 bytes. */
  function shardOf(key, width) {
    return C.toHex(C.sha256(new TextEncoder().encode(key))).slice(0, width);
  }

  function indexPath(base) {
    return base + "api/pith-number/resolve/index.json";
  }

  /** A shard's path; null for a kind that has no look-ups. */
  function shardPath(base, kind, shard) {
    if (KINDS.indexOf(kind) < 0 || !/^[0-9a-f]{1,64}$/.test(shard)) return null;
    return base + "api/pith-number/resolve/" + kind + "/" + shard + ".json";
  }

  /** The shards' width the index states, or null when it states none that can be. */
  function shardWidth(index) {
    const width = index && index.shard_hex_digits;
    return Number.isInteger(width) && width >= 1 && width <= 64 ? width : null;
  }

  /** A shard's entry for a key, or null (an own member only: a key may be "__proto__"). */
  function entryOf(shard, key) {
    const entries = shard && shard.entries;
    if (!entries || typeof entries !== "object" || !Object.prototype.hasOwnProperty.call(entries, key)) return null;
    const entry = entries[key];
    return entry && typeof entry === "object" ? entry : null;
  }

  // How identifiers are cited and pasted, as the home page's search reads them:
  // the look-ups are filed by the value alone.
  const PREFIXES = {
    arxiv: /^(?:https?:\/\/(?:www\.)?arxiv\.org\/(?:abs|pdf)\/|arxiv:)/i,
    doi: /^(?:https?:\/\/(?:dx\.)?doi\.org\/|doi:)/i,
    pith: /^pith:/i,
  };
  const ARXIV_VERSION = /v[0-9]+$/;

  /** How a value is looked up: without the prefix it is cited with; DOIs are case-insensitive,
   * Pith bodies are upper-case base32. */
  function normalizeValue(kind, value) {
    const v = value.trim();
    if (kind === "doi") return v.replace(PREFIXES.doi, "").toLowerCase();
    if (kind.startsWith("pith_short_")) return v.replace(PREFIXES.pith, "").toUpperCase();
    if (kind.startsWith("arxiv")) return v.replace(PREFIXES.arxiv, "").replace(/\.pdf$/, "");
    return v;
  }

  /** The kind a value is filed under: an arXiv id with a version ("2111.04007v1") is an
   * arxiv_version alias whichever of the two the address names, and one without, arxiv. */
  function kindOf(kind, value) {
    if (kind === "arxiv" || kind === "arxiv_version") return ARXIV_VERSION.test(value) ? "arxiv_version" : "arxiv";
    return kind;
  }

  /**
   * A query string -> {kind, value, wantJson} or {error: "<plain words>"}.
   * The first known kind present in the query is used.
   */
  function parseQuery(search) {
    const params = new URLSearchParams(search);
    let kind = null;
    for (const [name] of params) {
      if (KINDS.indexOf(name) >= 0) {
        kind = name;
        break;
      }
    }
    if (kind === null) {
      return { error: "This address does not say what to look up. Add one of ?" + KINDS.join("=…, ?") + "=… to it." };
    }
    const raw = params.get(kind);
    if (!raw || !raw.trim()) return { error: "The look-up for " + kind + " has no value." };
    const json = (params.get("json") || "").toLowerCase();
    const value = normalizeValue(kind, raw);
    if (!value) return { error: "The look-up for " + kind + " has no value." };
    return { kind: kindOf(kind, value), value: value, wantJson: json === "true" || json === "1" };
  }

  /* ---------------------------------------------------------------- page */

  function sitePath(value) {
    // A URL parser drops tabs and line breaks anywhere ("/\t/host" is "//host"): no control character passes
    return typeof value === "string" && /^\/(?![\/\\])[^\\\x00-\x1f\x7f]*$/.test(value) ? value : null;
  }

  function siteBase(doc) {
    let base = doc.documentElement.getAttribute("data-base") || "/";
    if (!base.endsWith("/")) base += "/";
    return base;
  }

  /** The same look-up on the primary resolver, for a miss here: its own address, with
   * this page's query string; null when the page names no primary (data-primary). */
  function primaryLookup(primary, search) {
    if (typeof primary !== "string" || !/^https?:\/\/[^\s]+$/.test(primary)) return null;
    return primary.replace(/\/+$/, "") + "/api/pith-number/resolve" + (search || "");
  }

  /** Show a sentence and a link home; textContent only, the query is the visitor's text. */
  function say(doc, base, message, withHomeLink) {
    let status = doc.getElementById("resolve-status");
    if (!status) {
      status = doc.createElement("p");
      status.id = "resolve-status";
      status.setAttribute("role", "status");
      (doc.querySelector("main") || doc.body).append(status);
    }
    status.textContent = message;
    if (withHomeLink) {
      const link = doc.createElement("a");
      link.href = base;
      link.textContent = "Search this mirror from the home page";
      status.append(" ", link, ".");
    }
  }

  /** A JSON file of the site, or null when it is not there (404). */
  async function fetchJson(path) {
    const response = await fetch(path, { credentials: "same-origin" });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error("HTTP " + response.status);
    return await response.json();
  }

  async function run() {
    const doc = root.document;
    const base = siteBase(doc);
    const query = parseQuery(root.location.search);
    if (query.error) {
      say(doc, base, query.error, true);
      return;
    }
    const label = query.kind + " " + query.value;
    const main = doc.querySelector("[data-primary]");
    const elsewhere = primaryLookup(main && main.getAttribute("data-primary"), root.location.search);
    function missed() {
      say(doc, base, "No record on this mirror has " + label + ".", true);
      if (elsewhere === null) return;
      const link = doc.createElement("a");
      link.href = elsewhere;
      link.id = "resolve-primary";
      link.textContent = "Look it up on the primary resolver";
      doc.getElementById("resolve-status").append(" ", link, " (the mirror may not hold every record yet).");
    }
    const key = lookupKey(query.kind, query.value);
    if (key === null) {
      missed();
      return;
    }
    if (C === null) {
      say(doc, base, "The look-up of " + label + " could not start: canonical.js is missing.", true);
      return;
    }
    say(doc, base, "Looking up " + label + "…", false);
    let data;
    try {
      const index = await fetchJson(indexPath(base));
      const width = index === null ? null : shardWidth(index);
      if (index !== null && width === null) throw new Error("the look-up index states no shard width");
      const shard = width === null ? null : await fetchJson(shardPath(base, query.kind, shardOf(key, width)));
      data = shard === null ? null : entryOf(shard, key);
    } catch (err) {
      say(doc, base, "The look-up of " + label + " failed (" + (err && err.message ? err.message : String(err)) + "). Try again later.", true);
      return;
    }
    if (data === null) {
      missed();
      return;
    }
    const target = sitePath(query.wantJson ? data.json : data.record);
    if (target === null) {
      say(doc, base, "The look-up of " + label + " is damaged: it names no page on this site.", true);
      return;
    }
    say(doc, base, "Found " + (data.pith_number || label) + "; opening it…", false);
    root.location.replace(target);
  }

  const api = {
    sitePath: sitePath,
    parseQuery: parseQuery,
    normalizeValue: normalizeValue,
    primaryLookup: primaryLookup,
    lookupKey: lookupKey,
    shardOf: shardOf,
    shardPath: shardPath,
    shardWidth: shardWidth,
    entryOf: entryOf,
    KINDS: KINDS,
  };
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) {
    root.PithResolve = api;
    if (root.document) {
      if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", run);
      else run();
    }
  }
})(typeof window !== "undefined" ? window : null);
