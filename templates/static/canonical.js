/*
 * canonical.js: Pith's canonical JSON, in the browser.
 *
 * Pith signs SHA-256 digests of
 *
 *     json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
 *
 * (SPEC.md, "Canonical JSON"). A verifier in the browser has to reproduce those
 * bytes exactly, so JSON.parse/JSON.stringify will not do:
 *   - JSON.parse turns every number into a double: integers beyond 2^53 lose
 *     digits, and 1 and 1.0 become the same value although Python prints them
 *     as "1" and "1.0";
 *   - JSON.parse silently keeps the last of two duplicate keys; a document with
 *     duplicate keys has no single canonical form, so it must be refused;
 *   - JSON.stringify sorts nothing, escapes U+2028/U+2029 differently from
 *     Python, and prints 1e21 where Python prints 1e+21.
 *
 * Values produced by `parse`, and accepted by `canonical`:
 *   object  -> plain JS object (own enumerable keys; "__proto__" is an own key)
 *   array   -> JS array
 *   string  -> JS string (always well-formed UTF-16: no lone surrogates)
 *   integer -> BigInt          (Python int: arbitrary precision)
 *   float   -> JS number       (Python float: an IEEE double, printed as repr())
 *   true/false/null -> themselves
 * So a JS *number* is always a float here: canonical(2) is "2.0". Code that
 * builds values to hash must use BigInt for integers (2n).
 *
 * It also has SHA-256 in plain JS (`sha256`), for pages that hash without Web Crypto.
 *
 * Works as a classic <script> (sets window.PithCanonical) and under Node
 * (module.exports), with no dependencies. ES2020.
 */
(function (root) {
  "use strict";

  /* Python's json module refuses nothing deeper on its own, but the mirror's
   * loader (generator/load.py) refuses documents nested deeper than 64. */
  const DEFAULT_MAX_DEPTH = 64;

  /* Python 3.11+ refuses to convert integers longer than 4300 digits
   * (sys.int_info.default_max_str_digits); such a document does not decode
   * there, so it must not decode here either. */
  const MAX_INT_DIGITS = 4300;

  class CanonicalError extends Error {
    constructor(message, position) {
      super(position === undefined ? message : message + " (at character " + position + ")");
      this.name = "CanonicalError";
      this.position = position;
    }
  }

  /* ---------------------------------------------------------------- parse */

  const WS = { " ": true, "\t": true, "\n": true, "\r": true }; // the only JSON white space
  const SIMPLE_ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
  const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
  const HEX4_RE = /^[0-9a-fA-F]{4}$/;
  // A high surrogate not followed by a low one, or a low one not preceded by a high one.
  // (No look-behind: Safari before 16.4 cannot even parse a script that uses one.)
  const HIGH_ALONE_RE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/;
  const LOW_ALONE_RE = /(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  function hasLoneSurrogate(s) {
    return HIGH_ALONE_RE.test(s) || LOW_ALONE_RE.test(s);
  }

  /**
   * Strict JSON text -> value (see the table at the top).
   * Refuses: duplicate keys, NaN/Infinity (and numbers too large for a double),
   * trailing data, raw control characters in strings, strings that are not
   * valid Unicode (lone surrogates, e.g. "\ud800"), nesting deeper than
   * options.maxDepth (default 64).
   */
  function parse(text, options) {
    if (typeof text !== "string") throw new TypeError("parse() takes a string");
    const maxDepth = (options && options.maxDepth) || DEFAULT_MAX_DEPTH;
    let i = 0;
    const n = text.length;

    function fail(message, at) {
      throw new CanonicalError(message, at === undefined ? i : at);
    }
    function skipWs() {
      while (i < n && WS[text[i]]) i++;
    }

    function parseValue(depth) {
      skipWs();
      if (i >= n) fail("unexpected end of the JSON text");
      const c = text[i];
      if (c === "{") return parseObject(depth + 1);
      if (c === "[") return parseArray(depth + 1);
      if (c === '"') return parseString();
      if (c === "-" || (c >= "0" && c <= "9")) return parseNumber();
      if (text.startsWith("true", i)) { i += 4; return true; }
      if (text.startsWith("false", i)) { i += 5; return false; }
      if (text.startsWith("null", i)) { i += 4; return null; }
      // Python's json would read these, then the mirror refuses them: no canonical form.
      if (/^(?:NaN|Infinity|-Infinity)/.test(text.slice(i, i + 9))) fail("NaN and Infinity are not JSON numbers");
      fail("unexpected character " + JSON.stringify(c));
    }

    function parseObject(depth) {
      if (depth > maxDepth) fail("nesting is deeper than " + maxDepth + " levels");
      i++; // "{"
      const obj = {};
      const seen = new Set();
      skipWs();
      if (text[i] === "}") { i++; return obj; }
      for (;;) {
        skipWs();
        if (text[i] !== '"') fail("expected a string key");
        const keyAt = i;
        const key = parseString();
        if (seen.has(key)) fail("duplicate key " + JSON.stringify(key), keyAt);
        seen.add(key);
        skipWs();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        const value = parseValue(depth);
        // defineProperty, not assignment: `obj["__proto__"] = v` would set the prototype.
        Object.defineProperty(obj, key, { value: value, enumerable: true, writable: true, configurable: true });
        skipWs();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; return obj; }
        fail("expected ',' or '}'");
      }
    }

    function parseArray(depth) {
      if (depth > maxDepth) fail("nesting is deeper than " + maxDepth + " levels");
      i++; // "["
      const arr = [];
      skipWs();
      if (text[i] === "]") { i++; return arr; }
      for (;;) {
        arr.push(parseValue(depth));
        skipWs();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") { i++; return arr; }
        fail("expected ',' or ']'");
      }
    }

    function parseString() {
      const start = i;
      i++; // opening quote
      let out = "";
      let runStart = i; // copy unescaped runs in one slice, not char by char
      for (;;) {
        if (i >= n) fail("unterminated string", start);
        const code = text.charCodeAt(i);
        if (code === 0x22) { // closing quote
          out += text.slice(runStart, i);
          i++;
          break;
        }
        if (code < 0x20) fail("control character U+" + code.toString(16).padStart(4, "0") + " in a string must be escaped");
        if (code !== 0x5c) { i++; continue; }
        out += text.slice(runStart, i);
        const e = text[i + 1];
        if (e === "u") {
          const hex = text.slice(i + 2, i + 6);
          if (!HEX4_RE.test(hex)) fail("invalid \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else if (e !== undefined && Object.prototype.hasOwnProperty.call(SIMPLE_ESCAPES, e)) {
          out += SIMPLE_ESCAPES[e];
          i += 2;
        } else {
          fail("invalid escape");
        }
        runStart = i;
      }
      // "\ud83d\ude00" joins into one character, as in Python; a surrogate left
      // alone cannot be encoded as UTF-8, so Python's canonical form fails too.
      if (hasLoneSurrogate(out)) fail("string contains a lone surrogate (not valid Unicode)", start);
      return out;
    }

    function parseNumber() {
      NUMBER_RE.lastIndex = i;
      const m = NUMBER_RE.exec(text);
      if (m === null) fail(text.startsWith("-Infinity", i) ? "NaN and Infinity are not JSON numbers" : "invalid number");
      const literal = m[0];
      const at = i;
      i += literal.length;
      if (m[1] === undefined && m[2] === undefined) {
        // An integer: exact, any size (Python int). BigInt("-0") is 0n, as Python's int("-0") is 0.
        const digits = literal[0] === "-" ? literal.length - 1 : literal.length;
        if (digits > MAX_INT_DIGITS) fail("integer has more than " + MAX_INT_DIGITS + " digits", at);
        return BigInt(literal);
      }
      // A float: Number() rounds correctly, like Python's float().
      const value = Number(literal);
      if (!Number.isFinite(value)) fail("number " + literal + " is too large for a double (Python reads it as Infinity)", at);
      return value;
    }

    const value = parseValue(0);
    skipWs();
    if (i < n) fail("unexpected data after the JSON value");
    return value;
  }

  /**
   * UTF-8 bytes -> value, decoding as strictly as the mirror's loader:
   * invalid UTF-8 and a byte-order mark are refused (TextDecoder would
   * otherwise replace bad bytes with U+FFFD and drop the BOM silently).
   */
  function parseBytes(bytes, options) {
    const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    if (view.length >= 3 && view[0] === 0xef && view[1] === 0xbb && view[2] === 0xbf) {
      throw new CanonicalError("starts with a byte-order mark; Pith JSON is plain UTF-8");
    }
    if (view.length >= 2 && ((view[0] === 0xff && view[1] === 0xfe) || (view[0] === 0xfe && view[1] === 0xff))) {
      throw new CanonicalError("starts with a UTF-16 byte-order mark; Pith JSON is plain UTF-8");
    }
    let text;
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(view);
    } catch (err) {
      throw new CanonicalError("not valid UTF-8");
    }
    return parse(text, options);
  }

  /* ------------------------------------------------------------ canonical */

  /*
   * Python sorts str keys by code point; Array.prototype.sort compares UTF-16
   * code units. They disagree only when a surrogate (part of a character above
   * U+FFFF) meets a unit in U+E000..U+FFFF: code-unit order puts U+1F600 before
   * U+FFFF. Shifting units so surrogates sort above U+E000..U+FFFF gives code
   * point order (the usual "UTF-16 in code point order" fix-up). Both strings
   * are well-formed, so comparing unit by unit this way is exact.
   */
  function fixup(unit) {
    if (unit < 0xd800) return unit;
    return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
  }

  function compareCodePoints(a, b) {
    const len = Math.min(a.length, b.length);
    for (let k = 0; k < len; k++) {
      const x = a.charCodeAt(k);
      const y = b.charCodeAt(k);
      if (x !== y) return fixup(x) - fixup(y);
    }
    return a.length - b.length;
  }

  /* Python's json escapes exactly these; everything else (incl. U+007F,
   * U+2028, non-ASCII, astral) is written raw because ensure_ascii=False. */
  const ESCAPE_RE = /[\u0000-\u001f"\\]/g;
  const ESCAPES = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };

  function quote(s) {
    if (hasLoneSurrogate(s)) throw new CanonicalError("string contains a lone surrogate; it has no UTF-8 form");
    return (
      '"' +
      s.replace(ESCAPE_RE, function (c) {
        return ESCAPES[c] || "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0");
      }) +
      '"'
    );
  }

  /**
   * A double as Python's repr(float) prints it.
   * Both Python and JS find the shortest digit string that reads back as the
   * same double (ties: the nearest one), so the digits agree; only the layout
   * differs. Python uses fixed notation when the decimal exponent e (as in
   * d.ddd x 10^e) is in -4 <= e < 16, always with a fraction part (".0"), and
   * otherwise d.ddde+XX with an explicit sign and at least two exponent digits.
   */
  function formatFloat(x) {
    if (typeof x !== "number" || !Number.isFinite(x)) {
      throw new CanonicalError("NaN and Infinity have no canonical JSON form");
    }
    if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
    const sign = x < 0 ? "-" : "";
    // toExponential() with no argument gives the shortest round-trip digits.
    const m = /^(\d)(?:\.(\d+))?e([-+]\d+)$/.exec(Math.abs(x).toExponential());
    if (m === null) throw new CanonicalError("cannot format number " + x);
    const digits = m[1] + (m[2] || "");
    const e = parseInt(m[3], 10);
    if (e >= -4 && e < 16) {
      if (e < 0) return sign + "0." + "0".repeat(-e - 1) + digits;
      if (digits.length <= e + 1) return sign + digits + "0".repeat(e + 1 - digits.length) + ".0";
      return sign + digits.slice(0, e + 1) + "." + digits.slice(e + 1);
    }
    const mantissa = digits.length === 1 ? digits : digits[0] + "." + digits.slice(1);
    const exp = Math.abs(e) < 10 ? "0" + Math.abs(e) : String(Math.abs(e));
    return sign + mantissa + "e" + (e < 0 ? "-" : "+") + exp;
  }

  function serialize(value, parts, depth) {
    if (value === null) { parts.push("null"); return; }
    switch (typeof value) {
      case "boolean": parts.push(value ? "true" : "false"); return;
      case "string": parts.push(quote(value)); return;
      case "bigint": parts.push(value.toString()); return;
      case "number": parts.push(formatFloat(value)); return;
      case "object": break;
      default: throw new CanonicalError("a " + typeof value + " has no JSON form");
    }
    if (depth > 1000) throw new CanonicalError("value is nested too deeply (or contains itself)");
    if (Array.isArray(value)) {
      parts.push("[");
      for (let k = 0; k < value.length; k++) {
        if (k) parts.push(",");
        serialize(value[k], parts, depth + 1);
      }
      parts.push("]");
      return;
    }
    const keys = Object.keys(value).sort(compareCodePoints);
    parts.push("{");
    for (let k = 0; k < keys.length; k++) {
      if (k) parts.push(",");
      parts.push(quote(keys[k]), ":");
      serialize(value[keys[k]], parts, depth + 1);
    }
    parts.push("}");
  }

  /** The canonical text (a JS string); `canonical` is its UTF-8 bytes. */
  function canonicalText(value) {
    const parts = [];
    serialize(value, parts, 0);
    return parts.join("");
  }

  /** Bytes identical to Python's canonical_json(value). */
  function canonical(value) {
    return new TextEncoder().encode(canonicalText(value));
  }

  /** Deep equality as canonical JSON sees it (1n vs 1.0 differ, key order does not). */
  function canonicalEqual(a, b) {
    return canonicalText(a) === canonicalText(b);
  }

  function toHex(bytes) {
    let out = "";
    for (let k = 0; k < bytes.length; k++) out += bytes[k].toString(16).padStart(2, "0");
    return out;
  }

  /*
   * SHA-256 in plain JS (bytes -> 32 bytes). verify.js uses it when crypto.subtle
   * is missing: browsers hide Web Crypto on pages not served over HTTPS (or
   * localhost), and a mirror on a plain-HTTP intranet should still get its hashes
   * checked. resolve.js uses it to find an alias's look-up shard, on any page.
   */
  const K256 = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ]);

  function sha256(data) {
    const bitLength = data.length * 8;
    const padded = new Uint8Array((((data.length + 9 + 63) >> 6) << 6));
    padded.set(data);
    padded[data.length] = 0x80;
    const view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, Math.floor(bitLength / 0x100000000));
    view.setUint32(padded.length - 4, bitLength >>> 0);
    const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    const w = new Uint32Array(64);
    const rotr = (x, n) => (x >>> n) | (x << (32 - n));
    for (let off = 0; off < padded.length; off += 64) {
      for (let t = 0; t < 16; t++) w[t] = view.getUint32(off + t * 4);
      for (let t = 16; t < 64; t++) {
        const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
        const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) >>> 0;
      }
      let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
      for (let t = 0; t < 64; t++) {
        const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K256[t] + w[t]) >>> 0;
        const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
        hh = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
      }
      h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }
    const out = new Uint8Array(32);
    const outView = new DataView(out.buffer);
    for (let k = 0; k < 8; k++) outView.setUint32(k * 4, h[k]);
    return out;
  }

  const api = {
    parse: parse,
    parseBytes: parseBytes,
    canonical: canonical,
    canonicalText: canonicalText,
    canonicalEqual: canonicalEqual,
    formatFloat: formatFloat,
    compareCodePoints: compareCodePoints,
    toHex: toHex,
    sha256: sha256,
    CanonicalError: CanonicalError,
    DEFAULT_MAX_DEPTH: DEFAULT_MAX_DEPTH,
  };

  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) root.PithCanonical = api;
})(typeof window !== "undefined" ? window : null);
