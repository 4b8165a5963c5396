/*
 * resolve.js: the alias resolver, on a static host.
 *
 * The resolver's look-ups are query strings (/api/pith-number/resolve?arxiv=2111.04007&json=true),
 * which a static host cannot answer. The build writes one small file per alias instead:
 *   <base>api/pith-number/resolve/<kind>/<encoded value>.json
 *     = {"alias_kind", "alias_value", "pith_number", "record": "<record page path>", "json": "<record JSON path>"}
 * and <base>api/pith-number/resolve/index.html loads this script, which reads the
 * query string, fetches that file and goes to the record page (or its JSON with json=true|1).
 *
 * The value encoding is shared with the build and must stay byte-identical:
 *   split on "/"; an empty segment (leading, trailing or doubled "/") means "not found";
 *   in each segment every UTF-8 byte outside [A-Za-z0-9._-] becomes "~" + 2 upper-case
 *   hex digits ("~" itself is "~7E"); a segment "." or ".." has its dots written "~2E",
 *   so no path segment is ever a dot-segment; segments are joined with "/".
 */
(function (root) {
  "use strict";

  // The order also decides which kind wins if a query names several.
  const KINDS = ["arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16"];
  const SAFE_BYTE = /^[A-Za-z0-9._-]$/;

  function encodeSegment(segment) {
    if (segment === "." || segment === "..") return segment.replace(/\./g, "~2E");
    let out = "";
    for (const byte of new TextEncoder().encode(segment)) {
      const ch = String.fromCharCode(byte);
      out += byte < 0x80 && SAFE_BYTE.test(ch) ? ch : "~" + byte.toString(16).toUpperCase().padStart(2, "0");
    }
    return out;
  }

  /** An alias value -> its path below <kind>/ (without ".json"), or null when it cannot exist. */
  function encodeValue(value) {
    if (typeof value !== "string" || value === "") return null;
    const segments = value.split("/");
    if (segments.some((s) => s === "")) return null;
    const encoded = segments.map(encodeSegment);
    // A folder named like a look-up file ("x.json") would collide with the file
    // of the value "x": the dot before "json" in a non-final segment is escaped.
    for (let i = 0; i < encoded.length - 1; i++) {
      if (encoded[i].endsWith(".json")) encoded[i] = encoded[i].slice(0, -5) + "~2Ejson";
    }
    return encoded.join("/");
  }

  // How identifiers are cited and pasted, as the home page's search reads them:
  // the look-up files are named by the value alone.
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

  /** The look-up file's path, or null when the value cannot name one. */
  function lookupPath(base, kind, value) {
    if (KINDS.indexOf(kind) < 0) return null;
    const encoded = encodeValue(value);
    return encoded === null ? null : base + "api/pith-number/resolve/" + kind + "/" + encoded + ".json";
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

  async function run() {
    const doc = root.document;
    const base = siteBase(doc);
    const query = parseQuery(root.location.search);
    if (query.error) {
      say(doc, base, query.error, true);
      return;
    }
    const label = query.kind + " " + query.value;
    const path = lookupPath(base, query.kind, query.value);
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
    if (path === null) {
      missed();
      return;
    }
    say(doc, base, "Looking up " + label + "…", false);
    let data;
    try {
      const response = await fetch(path, { credentials: "same-origin" });
      if (response.status === 404) {
        missed();
        return;
      }
      if (!response.ok) throw new Error("HTTP " + response.status);
      data = await response.json();
    } catch (err) {
      say(doc, base, "The look-up of " + label + " failed (" + (err && err.message ? err.message : String(err)) + "). Try again later.", true);
      return;
    }
    const target = sitePath(data && (query.wantJson ? data.json : data.record));
    if (target === null) {
      say(doc, base, "The look-up file for " + label + " is damaged: it names no page on this site.", true);
      return;
    }
    say(doc, base, "Found " + (data.pith_number || label) + "; opening it…", false);
    root.location.replace(target);
  }

  const api = { sitePath: sitePath, encodeValue: encodeValue, parseQuery: parseQuery, lookupPath: lookupPath, normalizeValue: normalizeValue, primaryLookup: primaryLookup, KINDS: KINDS };
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) {
    root.PithResolve = api;
    if (root.document) {
      if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", run);
      else run();
    }
  }
})(typeof window !== "undefined" ? window : null);
