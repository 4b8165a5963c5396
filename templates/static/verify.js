/*
 * verify.js: "Verify in your browser" on a record page.
 *
 * The reader should not have to trust this mirror. On click, the page fetches
 * the very JSON files the mirror publishes and re-checks, with the browser's
 * own Web Crypto, everything SPEC.md says can be checked:
 *
 *   load              every file is strict JSON (no duplicate keys, NaN, bad UTF-8)
 *   keys              the pinned key file names usable Ed25519 keys
 *   canonical-hash    sha256(canonical(canonical_record)) is the declared hash
 *   pith-number       "pith:" + YYYY(submitted_at) + ":" + base32(hash)[:26], and the short form
 *   receipt-signature Ed25519 over the 32 raw hash bytes, by a pinned key
 *                     (from the record, or from the bundle's record_created event
 *                     when the record JSON was derived by the mirror)
 *   title             each title shown hashes to title_canon_sha256
 *   aliases           arXiv id, version, DOI and pith_short_* agree with the record
 *   event-N           each bundle event: content hash, event_id, subject, signer, signature
 *   paper             a record JSON the mirror derived shows the paper details of a
 *                     signed graph snapshot of the bundle, unaltered
 *   bundle-keys       the bundle's embedded public keys are pinned keys
 *   bundle-signature  bundle_sha256 and its signature
 *   state             the state recomputed by the merge equals the bundle's
 *                     state and state.json, and state_sha256 matches
 *   page              what the page shows (number, title, authors, abstract, source,
 *                     dates, categories, license, hash, aliases, signing key: the
 *                     elements marked data-fact) is what the verified files say
 *
 * The checks mirror generator/verify.py and generator/merge.py; the canonical
 * bytes come from canonical.js (load it first). The check logic has no DOM
 * access (checkDocuments), so it also runs under Node for tests.
 *
 * Trust: only the keys in the site's /pith-signing-key.json are trusted; a key
 * a bundle carries in itself proves nothing (SPEC.md, "Trust"). That file comes
 * from the mirror too, so the verdict proves only "these files are signed by key
 * K (fingerprint F)": whose key K is, the reader confirms against the key the
 * resolver publishes, which the page links to.
 */
(function (root) {
  "use strict";

  const C =
    root && root.PithCanonical
      ? root.PithCanonical
      : typeof require === "function"
        ? require("./canonical.js")
        : null;

  const MERGE_VERSION = "pith-open-graph-merge-v1";
  const LIST_FOR_TYPE = {
    graph_snapshot: "graph_snapshots",
    author_attestation: "author_attestations",
    timestamp_anchor: "timestamp_anchors",
    storage_attestation: "storage_attestations",
    citation_signature: "citation_signatures",
    replication_record: "replication_records",
    correction: "corrections",
    mirror_hint: "mirror_hints",
  };
  const EVENT_UNHASHED = ["signature", "content_sha256", "event_id"];
  const SUBMITTED_AT = /^([0-9]{4})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$/;
  const SHORT_ALIASES = { pith_short_8: 8, pith_short_12: 12, pith_short_16: 16 };
  const UNSUPPORTED_TEXT = "this browser cannot check Ed25519 signatures; hashes were checked";

  /* ------------------------------------------------------------ helpers */

  function isObject(v) {
    return v !== null && typeof v === "object" && !Array.isArray(v);
  }
  function has(obj, key) {
    return Object.prototype.hasOwnProperty.call(obj, key);
  }
  function get(obj, key) {
    return isObject(obj) && has(obj, key) ? obj[key] : undefined;
  }
  function without(obj, keys) {
    const out = {};
    for (const k of Object.keys(obj)) {
      if (keys.indexOf(k) < 0) Object.defineProperty(out, k, { value: obj[k], enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  function show(v) {
    // Values in messages: strings quoted, the rest as canonical JSON; kept short, and as
    // the page shows text (shownText): an override a value opens is closed after it, so
    // that it cannot reverse the words of the message around it.
    let s;
    try {
      s = v === undefined ? "nothing" : C.canonicalText(v);
    } catch (err) {
      s = String(v);
    }
    return shownText(s.length > 80 ? s.slice(0, 77) + "…" : s);
  }
  function short(hex) {
    return typeof hex === "string" && hex.length > 16 ? hex.slice(0, 16) + "…" : String(hex);
  }

  /* A value as the page's text shows it (generator/templating.py, escape_text): a
     control character as its visible picture (U+2400 + code, DEL as U+2421, C1 as
     U+FFFD), each bidirectional embedding or isolate it opens closed after it, and
     line breaks as an HTML parser reads them (CR LF and CR become LF). */
  const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;
  const EMBEDDINGS = /[\u202a\u202b\u202d\u202e]/g;
  const ISOLATES = /[\u2066\u2067\u2068]/g;
  function shownText(value) {
    let s = String(value).replace(CONTROLS, (c) => {
      const n = c.charCodeAt(0);
      return n < 0x20 ? String.fromCharCode(0x2400 + n) : n === 0x7f ? "\u2421" : "\ufffd";
    });
    const isolates = (s.match(ISOLATES) || []).length;
    const embeddings = (s.match(EMBEDDINGS) || []).length;
    s = s + "\u2069".repeat(isolates) + "\u202c".repeat(embeddings);
    return s.replace(/\r\n?/g, "\n");
  }

  const hex = C ? C.toHex : null;

  const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  /** RFC 4648 base32, upper case, no padding (as Python's b32encode().rstrip("=")). */
  function base32(bytes) {
    let out = "";
    let bits = 0;
    let value = 0;
    for (let k = 0; k < bytes.length; k++) {
      value = (value << 8) | bytes[k];
      bits += 8;
      while (bits >= 5) {
        out += B32[(value >>> (bits - 5)) & 31];
        bits -= 5;
      }
      value &= 0xff; // only the low `bits` bits are still needed
    }
    if (bits > 0) out += B32[(value << (5 - bits)) & 31];
    return out;
  }

  /** Standard base64 with correct padding, spelled the one canonical way (as
   * generator/keys.py reads signatures and pinned keys), or null. atob ignores the
   * unused low bits of the last character: only a text that re-encodes to itself. */
  function decodeBase64(text) {
    if (typeof text !== "string") return null;
    if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
    let bin;
    try {
      bin = atob(text);
    } catch (err) {
      return null;
    }
    if (btoa(bin) !== text) return null;
    const out = new Uint8Array(bin.length);
    for (let k = 0; k < bin.length; k++) out[k] = bin.charCodeAt(k);
    return out;
  }

  /**
   * Does a derived record's `paper` say only what one signed snapshot's paper says?
   * Each field it shows must be in the snapshot: the text fields view.py copies as
   * text (a value that is not text becomes ""), any other field as it is signed.
   */
  const PAPER_TEXT_FIELDS = ["title", "authors_text", "abstract_excerpt", "headline"];
  function paperFrom(shown, signed) {
    if (!isObject(shown)) return false;
    return Object.keys(shown).every((name) => {
      if (!has(signed, name)) return false;
      if (PAPER_TEXT_FIELDS.includes(name)) return shown[name] === (typeof signed[name] === "string" ? signed[name] : "");
      return C.canonicalEqual(shown[name], signed[name]);
    });
  }

  /** An event's id as merge.py keys it: str(event.get("event_id", "")). */
  function idOf(event) {
    const id = get(event, "event_id");
    return typeof id === "string" ? id : id === undefined ? "" : show(id);
  }

  /* verify.py's _SHOWN_WHITE_SPACE: the White_Space characters a browser shows as space
     (not U+000B, U+001C to U+001F or U+0085, which it shows as nothing). */
  const SHOWN_WHITE_SPACE = /[\t\n\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

  /* ------------------------------------------------------------- crypto */

  /**
   * The crypto the checks need. `subtle` is the Web Crypto SubtleCrypto (or
   * null). Ed25519 support is probed once, with a real pinned key: browsers
   * without it throw NotSupportedError from importKey.
   */
  function makeCrypto(subtle) {
    const keyCache = new Map();
    let ed25519 = subtle ? "unknown" : "missing"; // "unknown" | "yes" | "missing" | "unsupported"
    let unsupportedWhy = subtle ? "" : "Web Crypto is not available: the page is not served over HTTPS";

    async function sha256(bytes) {
      if (!subtle) return C.sha256(bytes);
      return new Uint8Array(await subtle.digest("SHA-256", bytes));
    }

    async function importKey(raw) {
      const cacheKey = hex(raw);
      if (keyCache.has(cacheKey)) return keyCache.get(cacheKey);
      const key = await subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
      keyCache.set(cacheKey, key);
      return key;
    }

    /** true / false, or "unsupported" when this browser has no Ed25519. */
    async function verifyEd25519(rawKey, signature, message) {
      if (ed25519 === "missing" || ed25519 === "unsupported") return "unsupported";
      let key;
      try {
        key = await importKey(rawKey);
      } catch (err) {
        if (err && err.name === "NotSupportedError") {
          ed25519 = "unsupported";
          unsupportedWhy = "this browser's Web Crypto has no Ed25519";
          return "unsupported";
        }
        return false; // a key the browser refuses (e.g. not a curve point) verifies nothing
      }
      ed25519 = "yes";
      try {
        return await subtle.verify("Ed25519", key, signature, message);
      } catch (err) {
        return false; // when in doubt, not verified
      }
    }

    return {
      sha256: sha256,
      verifyEd25519: verifyEd25519,
      why: function () {
        return unsupportedWhy;
      },
    };
  }

  /* -------------------------------------------------------------- steps */

  /**
   * One line of the report. Problems are collected (not thrown) so one step
   * can name everything wrong with it; the first one is shown.
   */
  class Step {
    constructor(id, label) {
      this.id = id;
      this.label = label;
      this.problems = [];
      this.unsupported = false;
      this.passText = "";
    }
    fail(message) {
      this.problems.push(message);
    }
    get ok() {
      if (this.problems.length) return false;
      return this.unsupported ? "unsupported" : true;
    }
    get text() {
      if (this.problems.length) {
        const more = this.problems.length > 1 ? " (and " + (this.problems.length - 1) + " more problem" + (this.problems.length > 2 ? "s" : "") + ")" : "";
        return this.label + ": " + this.problems[0] + more;
      }
      if (this.unsupported) return this.label + ": " + UNSUPPORTED_TEXT + (this.passText ? " (" + this.passText + ")" : "");
      return this.label + ": " + this.passText;
    }
    toJSON() {
      return { id: this.id, ok: this.ok, text: this.text, problems: this.problems.slice() };
    }
  }

  /* --------------------------------------------------------------- keys */

  /** The pinned key file (one key object or a list) -> Map key_id -> key, checking it as keys.py does. */
  async function readPinnedKeys(data, crypto, step) {
    const entries = Array.isArray(data) ? data : [data];
    const keys = new Map();
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      const keyId = get(entry, "key_id");
      if (typeof keyId !== "string" || !keyId) {
        step.fail("key " + (i + 1) + " in the pinned key file has no key_id");
        continue;
      }
      if (keys.has(keyId)) {
        step.fail("the pinned key file names key " + keyId + " twice");
        continue;
      }
      if (has(entry, "algorithm") && entry.algorithm !== "ed25519") {
        step.fail("pinned key " + keyId + " is not an ed25519 key");
        continue;
      }
      const raw = decodeBase64(get(entry, "public_key_b64"));
      if (raw === null || raw.length !== 32) {
        step.fail("pinned key " + keyId + " does not hold 32 bytes of standard base64");
        continue;
      }
      const digest = await crypto.sha256(raw);
      const key = {
        keyId: keyId,
        raw: raw,
        b64: entry.public_key_b64,
        fingerprintHex: hex(digest.slice(0, 16)),
        fingerprintB32: base32(digest).slice(0, 26),
        hex: hex(raw),
      };
      // A stated fingerprint that is not the key's own means a damaged key file.
      const stated = {
        public_key_hex: key.hex,
        fingerprint_sha256_hex: key.fingerprintHex,
        fingerprint_sha256_b32_first128bits: key.fingerprintB32,
      };
      let good = true;
      for (const field of Object.keys(stated)) {
        if (has(entry, field) && entry[field] !== stated[field]) {
          step.fail("pinned key " + keyId + " states " + field + " " + show(entry[field]) + " but the key's own is " + stated[field]);
          good = false;
        }
      }
      if (good) keys.set(keyId, key);
    }
    if (!keys.size && !step.problems.length) step.fail("the pinned key file holds no key");
    if (!step.problems.length) {
      const names = Array.from(keys.values()).map((k) => k.keyId + " (fingerprint " + k.fingerprintHex + ")");
      step.passText = (keys.size === 1 ? "1 key" : keys.size + " keys") + " pinned by this site: " + names.join(", ");
    }
    return keys;
  }

  /* ------------------------------------------------------------- checker */

  /**
   * Run every check on already-parsed documents.
   *   docs = {pithNumber, recordSigned, record, bundle (or null), state (or null), keys,
   *           names: {record, bundle, state, keys} (shown in messages)}
   *   crypto = makeCrypto(subtle)
   *           shown (optional): [{fact, text}] of the page's data-fact elements
   * Returns the list of Steps in display order.
   */
  async function checkDocuments(docs, crypto) {
    const facts = {};
    const steps = await checkFiles(docs, crypto, facts);
    if (Array.isArray(docs.shown)) steps.push(checkPage(docs.shown, facts));
    return steps;
  }

  /* What each data-fact element may show, in words for messages; those a page must show. */
  const FACT_NAMES = {
    number: "Pith number",
    "short-number": "short Pith number",
    title: "title",
    authors: "authors",
    abstract: "abstract",
    source: "source",
    submitted: "submission date",
    categories: "categories",
    license: "license",
    "canonical-hash": "canonical hash",
    "key-id": "signing key",
    "key-fingerprint": "signing key's fingerprint",
    "alias-kind": "alias kind",
    "alias-value": "alias",
  };
  const REQUIRED_FACTS = ["number", "source", "submitted", "canonical-hash", "key-id", "key-fingerprint"];

  /**
   * The page step: every value the page marks (data-fact) must be one the verified
   * files hold, shown as the page's text shows it (shownText). `facts` maps a fact
   * to the values it may take; aliases are compared as (kind, value) pairs.
   */
  function checkPage(shown, facts) {
    const s = new Step("page", "This page");
    const found = {};
    let compared = 0;
    const kinds = [];
    const values = [];
    for (const item of shown) {
      const fact = get(item, "fact");
      const text = get(item, "text");
      if (typeof fact !== "string" || typeof text !== "string") continue;
      found[fact] = true;
      if (fact === "alias-kind") kinds.push(text);
      else if (fact === "alias-value") values.push(text);
      else if (!has(FACT_NAMES, fact)) s.fail("this page marks " + show(fact) + ", which the check does not know");
      else if (has(facts, fact)) {
        compared++;
        const allowed = facts[fact].map(shownText);
        if (!allowed.includes(text)) {
          s.fail(
            "this page shows the " + FACT_NAMES[fact] + " " + show(text) + ", but the verified files say " +
              (allowed.length ? show(allowed[0]) : "nothing of it") + ": the page was changed after it was built"
          );
        }
      }
    }
    if (has(facts, "alias")) {
      if (kinds.length !== values.length) s.fail("this page's alias table is not in kind and value pairs");
      const allowed = facts.alias.map(([k, v]) => shownText(k) + "\u0000" + shownText(v));
      for (let k = 0; k < Math.min(kinds.length, values.length); k++) {
        compared++;
        if (!allowed.includes(kinds[k] + "\u0000" + values[k])) {
          s.fail("this page shows the alias " + show(kinds[k] + ": " + values[k]) + ", which the verified files do not hold: the page was changed after it was built");
        }
      }
    }
    // (and those the files hold a value of that every page shows: a page cannot pass by
    // dropping a fact's mark; authors and abstract are shown only when the newest paper has them)
    const shownWhenHeld = ["title", "short-number", "categories", "license"];
    const required = REQUIRED_FACTS.concat(shownWhenHeld.filter((fact) => has(facts, fact) && facts[fact].some((v) => v !== "")));
    for (const fact of required) {
      if (has(facts, fact) && !found[fact]) s.fail("this page does not show its " + FACT_NAMES[fact] + " where the check can read it");
    }
    s.passText =
      "the " + compared + " values this page shows (identifiers, title, authors, dates, aliases, signing key) are those of the verified files";
    return s;
  }

  async function checkFiles(docs, crypto, facts) {
    const steps = [];
    const step = (id, label) => {
      const s = new Step(id, label);
      steps.push(s);
      return s;
    };
    const record = docs.record;
    const bundle = docs.bundle || null;

    // keys: the only root of trust
    const keyStep = step("keys", "Pinned keys");
    const pinned = await readPinnedKeys(docs.keys, crypto, keyStep);

    /** (5) a key named by key_id (+ fingerprint) must be a pinned key. */
    function pinnedKey(sig, where, s) {
      const keyId = get(sig, "key_id");
      const key = typeof keyId === "string" ? pinned.get(keyId) : undefined;
      if (key === undefined) {
        s.fail(where + " names key " + show(keyId) + ", which is not pinned by this site");
        return null;
      }
      const fp = get(sig, "public_key_fingerprint");
      if (fp !== undefined && fp !== null && fp !== key.fingerprintHex) {
        s.fail(where + " gives fingerprint " + show(fp) + ", not pinned key " + key.keyId + "'s " + key.fingerprintHex);
        return null;
      }
      return key;
    }

    /** (6) one Ed25519 signature over a 32-byte digest; returns the key on success. */
    async function checkSignature(sig, where, digest, message, s) {
      if (!isObject(sig)) {
        s.fail(where + " is missing");
        return null;
      }
      if (get(sig, "algorithm") !== "ed25519") {
        s.fail(where + " uses algorithm " + show(get(sig, "algorithm")) + ", not ed25519");
        return null;
      }
      if (get(sig, "signed_message") !== message) {
        s.fail(where + " says it signs " + show(get(sig, "signed_message")) + ", not " + message);
      }
      const key = pinnedKey(sig, where, s);
      const raw = decodeBase64(get(sig, "signature_b64"));
      if (raw === null || raw.length !== 64) {
        s.fail(where + " is not 64 bytes of standard base64");
        return null;
      }
      if (key === null) return null;
      const verdict = await crypto.verifyEd25519(key.raw, raw, digest);
      if (verdict === "unsupported") {
        s.unsupported = true;
        return key;
      }
      if (!verdict) {
        s.fail(where + " does not verify with the pinned key " + key.keyId);
        return null;
      }
      return key;
    }

    // canonical-hash: everything else hangs on this digest
    const hashStep = step("canonical-hash", "Canonical hash");
    const canonicalRecord = get(record, "canonical_record");
    if (!isObject(canonicalRecord)) {
      hashStep.fail("the record has no canonical_record object");
      return steps;
    }
    const digest = await crypto.sha256(C.canonical(canonicalRecord));
    const digestHex = hex(digest);
    const declared = get(record, "canonical_sha256");
    if (declared !== undefined && declared !== digestHex) {
      hashStep.fail("the record declares " + short(declared) + " but its canonical record hashes to " + short(digestHex));
    }
    if (bundle) {
      const bundleRecord = get(bundle, "canonical_record");
      if (!isObject(bundleRecord) || hex(await crypto.sha256(C.canonical(bundleRecord))) !== digestHex) {
        hashStep.fail("the bundle carries a different canonical record from the record's");
      }
      const bundleDeclared = get(bundle, "canonical_sha256");
      if (bundleDeclared !== undefined && bundleDeclared !== digestHex) {
        hashStep.fail("the bundle declares " + short(bundleDeclared) + " but the canonical record hashes to " + short(digestHex));
      }
    }
    // The source block shown beside the record (arXiv id, version) must be the signed one.
    for (const [who, doc] of [["the record", record], ["the bundle", bundle]]) {
      const source = get(doc, "source");
      if (source !== undefined && !C.canonicalEqual(source, get(canonicalRecord, "source") === undefined ? null : canonicalRecord.source)) {
        hashStep.fail(who + "'s source " + show(source) + " differs from the signed canonical record's");
      }
    }
    facts["canonical-hash"] = [digestHex];
    const signedSource = get(canonicalRecord, "source");
    const signedMeta = get(canonicalRecord, "metadata");
    if (isObject(signedSource)) {
      facts.source = [String(get(signedSource, "kind")) + ":" + String(get(signedSource, "id")) + " v" + String(get(signedSource, "version"))];
    }
    if (isObject(signedMeta)) {
      if (typeof signedMeta.submitted_at === "string") facts.submitted = [Array.from(signedMeta.submitted_at).slice(0, 10).join("")];
      const cross = Array.isArray(signedMeta.cross_cats_sorted) ? signedMeta.cross_cats_sorted : [];
      facts.categories = [[signedMeta.primary_cat].concat(cross).map(String).join(" · ")];
      if (typeof signedMeta.license === "string") facts.license = [signedMeta.license];
    }
    hashStep.passText =
      "the canonical record hashes to " + short(digestHex) +
      (declared !== undefined ? ", as the record says" : "") +
      (bundle ? " (and the bundle carries the same record)" : "");

    // pith-number: "pith:" + YYYY + ":" + base32(digest)[:26]
    const numberStep = step("pith-number", "Pith number");
    const body = base32(digest).slice(0, 26);
    const submitted = get(get(canonicalRecord, "metadata"), "submitted_at");
    const match = typeof submitted === "string" ? SUBMITTED_AT.exec(submitted) : null;
    if (match === null) {
      numberStep.fail("the canonical record's submitted_at " + show(submitted) + " is not a UTC time like 2021-11-07T05:33:48Z");
    }
    const expected = "pith:" + (match ? match[1] : "????") + ":" + body;
    const claims = [["this page", docs.pithNumber], ["the record", get(record, "pith_number")]];
    if (bundle) claims.push(["the bundle", get(bundle, "pith_number")]);
    for (const [who, value] of claims) {
      if (value !== undefined && value !== expected) {
        numberStep.fail(who + " shows " + show(value) + " but the hash gives " + expected);
      }
    }
    const shortNumber = "pith:" + body.slice(0, 8);
    for (const [who, doc] of [["the record", record], ["the bundle", bundle]]) {
      const value = get(doc, "short_pith_number");
      if (value !== undefined && value !== shortNumber) {
        numberStep.fail(who + " shows short form " + show(value) + " but the hash gives " + shortNumber);
      }
    }
    facts.number = [expected];
    facts["short-number"] = [shortNumber];
    numberStep.passText = "derived from the hash, matches " + expected + " (short form " + shortNumber + ")";

    // receipt-signature: from the record, or from the bundle's record_created event
    const receiptStep = step("receipt-signature", "Receipt signature");
    const events = bundle && Array.isArray(get(bundle, "events")) ? bundle.events : [];
    const created = events.filter((e) => get(e, "event_type") === "record_created");
    let receipt = null;
    let receiptFrom = "";
    if (docs.recordSigned) {
      receipt = get(record, "receipt");
      if (!isObject(receipt)) receiptStep.fail("the record carries no receipt");
    } else if (!bundle) {
      receiptStep.fail("this record's JSON was derived by the mirror and there is no bundle to take the receipt from");
    } else if (created.length !== 1) {
      receiptStep.fail("the bundle should have exactly one record_created event to take the receipt from, it has " + created.length);
    } else {
      receipt = get(get(created[0], "payload"), "receipt");
      receiptFrom = ", taken from the bundle's record_created event";
      if (!isObject(receipt)) receiptStep.fail("the bundle's record_created event carries no receipt");
      // The mirror marks what it derived: "derived_by": "pith-mirror" or {"tool": "pith-mirror", ...}.
      const derivedBy = get(record, "derived_by");
      if (derivedBy !== "pith-mirror" && get(derivedBy, "tool") !== "pith-mirror") {
        receiptStep.fail("the record JSON is not the resolver's and does not say it was derived by pith-mirror");
      }
      // A derived record may carry a copy of the receipt; it must be the signed one.
      const copied = get(record, "receipt");
      if (copied !== undefined && isObject(receipt) && !C.canonicalEqual(copied, receipt)) {
        receiptStep.fail("the record JSON carries a receipt that differs from the one in the bundle's record_created event");
      }
    }
    if (isObject(receipt)) {
      if (get(receipt, "canonical_sha256") !== digestHex) {
        receiptStep.fail("the receipt names hash " + short(get(receipt, "canonical_sha256")) + ", not " + short(digestHex));
      }
      const key = await checkSignature(receipt, "the receipt signature", digest, "canonical_sha256_bytes", receiptStep);
      if (key) receiptStep.passText = "verifies with the pinned key " + key.keyId + " (fingerprint " + key.fingerprintHex + ")" + receiptFrom;
      if (key && receiptStep.unsupported) receiptStep.passText = "signed by pinned key " + key.keyId + receiptFrom;
      receiptStep.key = key;
      if (key) {
        facts["key-id"] = [key.keyId];
        facts["key-fingerprint"] = [key.fingerprintHex];
      }
    }

    // title: every title shown must hash to title_canon_sha256 (lower-cased, or white space collapsed)
    const titles = [];
    const addTitle = (who, paper) => {
      if (isObject(paper) && has(paper, "title")) titles.push([who, paper.title]);
    };
    addTitle("the record's title", get(record, "paper"));
    addTitle("the record's graph snapshot title", get(get(record, "graph_snapshot"), "paper"));
    events.forEach((e, i) => {
      if (get(e, "event_type") === "graph_snapshot") {
        addTitle("the title in event " + (i + 1), get(get(get(e, "payload"), "graph_snapshot"), "paper"));
      }
    });
    facts.title = titles.map(([, title]) => title).filter((t) => typeof t === "string");
    if (titles.length) {
      const titleStep = step("title", "Title");
      const want = get(get(canonicalRecord, "metadata"), "title_canon_sha256");
      if (typeof want !== "string") {
        titleStep.fail("the canonical record has no title_canon_sha256 to check the title against");
      } else {
        for (const [who, title] of titles) {
          if (typeof title !== "string") {
            titleStep.fail(who + " is not text");
            continue;
          }
          const plain = hex(await crypto.sha256(new TextEncoder().encode(title.toLowerCase())));
          const collapsed = title.split(SHOWN_WHITE_SPACE).filter((w) => w !== "").join(" ").toLowerCase();
          const collapsedHex = hex(await crypto.sha256(new TextEncoder().encode(collapsed)));
          if (want !== plain && want !== collapsedHex) {
            titleStep.fail(who + " does not hash to title_canon_sha256 in the signed record: it has been altered");
          }
        }
        titleStep.passText =
          "“" + shownText(titles[0][1]) + "” matches title_canon_sha256 in the signed canonical record" +
          (titles.length > 1 ? " (" + titles.length + " places checked)" : "");
      }
    }

    // aliases: only those the canonical record determines
    const wanted = {};
    for (const kind of Object.keys(SHORT_ALIASES)) wanted[kind] = body.slice(0, SHORT_ALIASES[kind]);
    const aliasSource = get(canonicalRecord, "source");
    if (get(aliasSource, "kind") === "arxiv") {
      const id = String(aliasSource.id);
      wanted.arxiv = id;
      wanted.arxiv_version = id + "v" + String(get(aliasSource, "version"));
      wanted.doi = "10.48550/arxiv." + id;
    }
    const aliasList = get(record, "aliases") || (bundle ? get(bundle, "source_aliases") : undefined);
    if (Array.isArray(aliasList) && aliasList.length) {
      const aliasStep = step("aliases", "Aliases");
      const counts = [];
      const lists = [["the record", get(record, "aliases")], ["the bundle", bundle ? get(bundle, "source_aliases") : undefined]];
      for (const [who, list] of lists) {
        if (!Array.isArray(list)) continue;
        let checked = 0;
        for (const alias of list) {
          const kind = get(alias, "alias_kind");
          const value = get(alias, "alias_value");
          if (typeof kind !== "string" || !has(wanted, kind) || typeof value !== "string") continue;
          checked++;
          const same = kind === "doi" ? value.toLowerCase() === wanted[kind].toLowerCase() : value === wanted[kind];
          if (!same) aliasStep.fail(who + "'s " + kind + " alias is " + show(value) + " but the canonical record gives " + show(wanted[kind]));
        }
        counts.push(checked + " in " + who);
      }
      aliasStep.passText = "the aliases (" + counts.join(", ") + ") agree with the canonical record";
    }
    // the aliases a page may list: those the canonical record determines (as a record
    // document spells them), and every alias of the signed bundle
    facts.alias = Object.keys(wanted).map((kind) => [kind, wanted[kind]]);
    for (const alias of Array.isArray(bundle ? get(bundle, "source_aliases") : get(record, "aliases")) ? (bundle ? bundle.source_aliases : record.aliases) : []) {
      const kind = get(alias, "alias_kind");
      if (typeof kind === "string" && typeof get(alias, "alias_value") === "string" && (bundle || has(wanted, kind))) {
        facts.alias.push([kind, alias.alias_value]);
      }
    }

    if (!bundle) {
      paperFacts([get(record, "paper")]);
      if (docs.state !== null && docs.state !== undefined) await checkRecordOnlyState(docs.state);
      return steps;
    }

    /*
     * The authors and abstract a page may show, as the mirror chooses them: those of
     * the bundle's signed graph snapshots when it has any (the page shows the newest,
     * marked signed), else the record document's paper block, which no signature
     * covers and the page marks as not signed. Never an unsigned block beside signed
     * ones: a page showing its words under a "signed" mark would pass.
     */
    function paperFacts(papers) {
      for (const [field, fact] of [["authors_text", "authors"], ["abstract_excerpt", "abstract"]]) {
        facts[fact] = papers.filter((paper) => isObject(paper) && typeof paper[field] === "string").map((paper) => paper[field]);
      }
    }

    /*
     * A number with a record document but no bundle has no events; the mirror
     * still publishes its state (the empty merge), marked as derived. It must
     * be exactly that, so the status shown on the page is not made up.
     */
    async function checkRecordOnlyState(state) {
      const s = step("state", "Merged state");
      if (!isObject(state)) {
        s.fail("state.json is not an object");
        return;
      }
      const stateHash = hex(await crypto.sha256(C.canonical(without(state, ["state_sha256"]))));
      if (get(state, "state_sha256") !== stateHash) {
        s.fail("state.json declares state_sha256 " + short(get(state, "state_sha256")) + " but hashes to " + short(stateHash));
      }
      // the aliases a record document publishes: those the canonical record determines, by kind
      const listed = get(record, "aliases");
      const aliases = (Array.isArray(listed) ? listed : [])
        .filter((a) => isObject(a) && typeof get(a, "alias_kind") === "string" && has(wanted, get(a, "alias_kind")))
        .sort((a, b) => (a.alias_kind < b.alias_kind ? -1 : a.alias_kind > b.alias_kind ? 1 : 0));
      const recomputed = merge(get(record, "pith_number"), canonicalRecord, aliases, [], new Map());
      const where = firstDifference(without(state, ["state_sha256", "derived_by"]), recomputed, "");
      if (where !== null) s.fail("state.json differs at " + (where || "/") + " from the state of this record with no events");
      s.passText = "state.json is the state of this record with no events" +
        (has(state, "derived_by") ? " (derived by this mirror)" : "") + ", and state_sha256 " + short(stateHash) + " matches";
    }

    // event-N: each event's hash, id, subject, signer and signature
    const pithNumber = get(bundle, "pith_number");
    const invalid = new Map(); // event_id -> reason, for the merge
    for (let i = 0; i < events.length; i++) {
      const event = events[i];
      const type = get(event, "event_type");
      const s = step("event-" + i, "Event " + (i + 1) + " (" + (typeof type === "string" ? type : "no type") + ")");
      const reason = await checkEvent(event, s);
      if (reason) invalid.set(idOf(event), reason);
      if (!s.problems.length) {
        s.passText = s.unsupported ? "signed by a pinned key" : "hash and signature verify";
      }
    }

    const signedPapers = events
      .filter((e) => get(e, "event_type") === "graph_snapshot" && !invalid.has(idOf(e)))
      .map((e) => [idOf(e), get(get(get(e, "payload"), "graph_snapshot"), "paper")])
      .filter(([, paper]) => isObject(paper));
    paperFacts(signedPapers.length ? signedPapers.map(([, paper]) => paper) : [get(record, "paper")]);

    // paper: a record JSON the mirror derived may show only the paper of a signed graph
    // snapshot of the bundle (render.py takes the newest; any signed one is the resolver's words)
    if (!docs.recordSigned) {
      const paperStep = step("paper", "Paper details");
      const shown = get(record, "paper");
      if (shown === undefined) {
        paperStep.passText = signedPapers.length
          ? "the record JSON shows no paper details (the bundle's signed snapshots hold them)"
          : "no signed graph snapshot holds paper details, and the record JSON shows none";
      } else {
        const from = signedPapers.find(([, signed]) => paperFrom(shown, signed));
        if (from === undefined) {
          paperStep.fail(
            "the record JSON's paper details (title, authors, abstract) are not those of any signed graph snapshot in the bundle: they have been altered"
          );
        } else {
          paperStep.passText = "the paper details are those signed in event " + from[0];
        }
      }
    }

    async function checkEvent(event, s) {
      if (!isObject(event)) {
        s.fail("the event is not an object");
        return "schema.wrong_type";
      }
      const type = get(event, "event_type");
      if (type !== "record_created" && !has(LIST_FOR_TYPE, type)) {
        s.fail("event type " + show(type) + " is not one this mirror can merge");
      }
      if (!isObject(get(event, "signature")) || !isObject(get(event, "signer"))) {
        s.fail("the event has no signature or signer");
        return "malformed";
      }
      const eventDigest = await crypto.sha256(C.canonical(without(event, EVENT_UNHASHED)));
      const eventHex = hex(eventDigest);
      if (get(event, "content_sha256") !== eventHex) {
        s.fail("declared content_sha256 " + short(get(event, "content_sha256")) + " but the event hashes to " + short(eventHex));
      }
      if (get(event, "event_id") !== "sha256:" + eventHex) {
        s.fail("event_id " + show(get(event, "event_id")) + " is not sha256:" + short(eventHex));
      }
      if (get(event, "subject_pith_number") !== pithNumber) {
        s.fail("the event is about " + show(get(event, "subject_pith_number")) + ", not " + pithNumber);
      }
      if (pinnedKey(event.signer, "the signer", s) && get(event.signature, "key_id") !== get(event.signer, "key_id")) {
        s.fail("the signature's key differs from the signer's");
      }
      await checkSignature(event.signature, "the event signature", eventDigest, "open_graph_event_sha256_bytes", s);
      const payload = get(event, "payload");
      if (type === "record_created" && isObject(payload)) {
        // (7) the event must carry the bundle's own record, hash and receipt
        const payloadRecord = get(payload, "canonical_record");
        if (!isObject(payloadRecord) || hex(await crypto.sha256(C.canonical(payloadRecord))) !== digestHex) {
          s.fail("the event's canonical record is not the bundle's");
        }
        if (get(payload, "canonical_sha256") !== digestHex) {
          s.fail("the event names hash " + short(get(payload, "canonical_sha256")) + ", not " + short(digestHex));
        }
        const source = get(canonicalRecord, "source");
        if (isObject(source)) {
          for (const field of ["kind", "id", "version"]) {
            const name = "source_" + field;
            if (has(payload, name) && !C.canonicalEqual(payload[name], get(source, field) === undefined ? null : source[field])) {
              s.fail(name + " is " + show(payload[name]) + ", the canonical record says " + show(get(source, field)));
            }
          }
        }
        const receipt = get(payload, "receipt");
        if (!isObject(receipt)) {
          s.fail("record_created carries no receipt");
        } else {
          if (get(receipt, "canonical_sha256") !== digestHex) s.fail("the event's receipt names another hash");
          await checkSignature(receipt, "the event's receipt signature", digest, "canonical_sha256_bytes", s);
        }
      }
      return s.problems.length ? "invalid" : null;
    }

    // bundle-keys: keys a bundle carries prove nothing unless they are pinned
    const bundleKeysStep = step("bundle-keys", "Bundle keys");
    const embedded = get(bundle, "public_keys");
    if (embedded !== undefined && !Array.isArray(embedded)) {
      bundleKeysStep.fail("public_keys is not a list");
    } else {
      const list = embedded || [];
      for (const entry of list) {
        const keyId = get(entry, "key_id");
        const key = typeof keyId === "string" ? pinned.get(keyId) : undefined;
        if (key === undefined || get(entry, "public_key_b64") !== key.b64) {
          bundleKeysStep.fail("the bundle carries key " + show(keyId) + ", which is not a key pinned by this site; it proves nothing");
          continue;
        }
        const stated = {
          public_key_hex: key.hex,
          fingerprint_sha256_hex: key.fingerprintHex,
          fingerprint_sha256_b32_first128bits: key.fingerprintB32,
        };
        for (const field of Object.keys(stated)) {
          if (has(entry, field) && entry[field] !== stated[field]) {
            bundleKeysStep.fail("the bundle's key " + keyId + " states " + field + " " + show(entry[field]) + ", not " + stated[field]);
          }
        }
        if (has(entry, "algorithm") && entry.algorithm !== "ed25519") bundleKeysStep.fail("the bundle's key " + keyId + " is not ed25519");
      }
      bundleKeysStep.passText =
        list.length === 0
          ? "the bundle carries no keys of its own"
          : "the bundle's " + (list.length === 1 ? "embedded key is the pinned key " : list.length + " embedded keys are the pinned keys ") +
            list.map((e) => e.key_id).join(", ");
    }

    // bundle-signature: over the whole bundle minus the signature itself
    const bundleStep = step("bundle-signature", "Bundle signature");
    const bundleSig = get(bundle, "bundle_signature");
    if (!isObject(bundleSig)) {
      bundleStep.fail("the bundle has no bundle_signature");
    } else {
      const bundleDigest = await crypto.sha256(C.canonical(without(bundle, ["bundle_signature"])));
      if (get(bundleSig, "bundle_sha256") !== hex(bundleDigest)) {
        bundleStep.fail("declared bundle_sha256 " + short(get(bundleSig, "bundle_sha256")) + " but the bundle hashes to " + short(hex(bundleDigest)));
      }
      const key = await checkSignature(bundleSig, "the bundle signature", bundleDigest, "bundle_sha256_bytes", bundleStep);
      if (key) bundleStep.passText = bundleStep.unsupported ? "signed by pinned key " + key.keyId : "verifies with the pinned key " + key.keyId;
    }

    // state: recompute the merge, compare with the bundle's state and state.json
    const stateStep = step("state", "Merged state");
    if (get(bundle, "merge_version") !== MERGE_VERSION) {
      stateStep.fail("merge_version " + show(get(bundle, "merge_version")) + " is not " + MERGE_VERSION);
    }
    if (created.length !== 1) stateStep.fail("a bundle has exactly one record_created event; this one has " + created.length);
    const ids = events.map((e) => get(e, "event_id"));
    if (new Set(ids).size !== ids.length) stateStep.fail("an event appears twice in the bundle");
    const served = get(bundle, "state");
    if (!isObject(served)) {
      stateStep.fail("the bundle has no state");
    } else if (!Array.isArray(get(bundle, "source_aliases"))) {
      stateStep.fail("the bundle has no source_aliases list to start the merge from");
    } else {
      const servedHash = hex(await crypto.sha256(C.canonical(without(served, ["state_sha256"]))));
      if (get(served, "state_sha256") !== servedHash) {
        stateStep.fail("the bundle's state declares state_sha256 " + short(get(served, "state_sha256")) + " but hashes to " + short(servedHash));
      }
      const recomputed = merge(pithNumber, canonicalRecord, bundle.source_aliases, events, invalid);
      const where = firstDifference(without(served, ["state_sha256"]), recomputed, "/state");
      if (where !== null) stateStep.fail("the bundle's state differs at " + where + " from the state recomputed from its events");
      if (docs.state !== null && docs.state !== undefined) {
        const where2 = firstDifference(docs.state, served, "");
        if (where2 !== null) stateStep.fail((docs.names && docs.names.state ? docs.names.state : "state.json") + " differs from the bundle's state at " + (where2 || "/"));
      }
      stateStep.passText =
        (docs.state ? "state.json equals the bundle's state; " : "") +
        "recomputed from the " + events.length + " event" + (events.length === 1 ? "" : "s") + " by the deterministic merge, it is the bundle's state, and state_sha256 " +
        short(servedHash) + " matches";
    }
    return steps;
  }

  /* --------------------------------------------------------------- merge */

  /** generator/merge.py, step by step; integers are BigInt so they hash as Python ints. */
  function merge(pithNumber, canonicalRecord, sourceAliases, events, invalid) {
    const current = { canonical_record: canonicalRecord, source_aliases: sourceAliases };
    for (const type of Object.keys(LIST_FOR_TYPE)) current[LIST_FOR_TYPE[type]] = [];
    current.record_created = null;
    const str = (v) => (typeof v === "string" ? v : v === undefined || v === null ? "" : C.canonicalText(v));
    // 1. record_created first, then (created_at, event_id); the sort is stable, as Python's.
    const ordered = events.slice().sort((a, b) => {
      const ra = get(a, "event_type") === "record_created" ? 0 : 1;
      const rb = get(b, "event_type") === "record_created" ? 0 : 1;
      if (ra !== rb) return ra - rb;
      return C.compareCodePoints(str(get(a, "created_at")), str(get(b, "created_at"))) || C.compareCodePoints(idOf(a), idOf(b));
    });
    const applied = [];
    const invalidEvents = [];
    const valid = [];
    for (const event of ordered) {
      const eventId = idOf(event);
      const type = get(event, "event_type");
      if (invalid.has(eventId) || (type !== "record_created" && !has(LIST_FOR_TYPE, type))) {
        invalidEvents.push({ event_id: eventId, reason: invalid.get(eventId) || "invalid" });
        continue;
      }
      valid.push(event);
      const entry = {};
      for (const k of ["event_id", "target", "created_at", "signer", "payload"]) {
        const v = get(event, k);
        entry[k] = v === undefined ? null : v;
      }
      if (type === "record_created") current.record_created = entry;
      else current[LIST_FOR_TYPE[type]].push(entry);
      applied.push(eventId);
    }
    const equivocations = findEquivocations(valid);
    return {
      state_type: "pith_open_graph_state",
      state_version: "1.0",
      pith_number: pithNumber,
      merge_version: MERGE_VERSION,
      event_count: BigInt(events.length),
      valid_event_count: BigInt(valid.length),
      invalid_event_count: BigInt(invalidEvents.length),
      equivocation_count: BigInt(equivocations.length),
      current: current,
      equivocations: equivocations,
      invalid_events: invalidEvents,
      applied_event_ids: applied,
    };
  }

  /** Inferred in SPEC.md: two valid events that claim the same prev_event fork the chain. */
  function findEquivocations(events) {
    const byPrev = new Map();
    for (const event of events) {
      const prev = get(event, "prev_event");
      if (typeof prev === "string" && prev) {
        if (!byPrev.has(prev)) byPrev.set(prev, new Set());
        byPrev.get(prev).add(idOf(event));
      }
    }
    return Array.from(byPrev.keys())
      .sort(C.compareCodePoints)
      .filter((prev) => byPrev.get(prev).size > 1)
      .map((prev) => ({ prev_event: prev, event_ids: Array.from(byPrev.get(prev)).sort(C.compareCodePoints) }));
  }

  /** JSON pointer of the first place two values differ (canonically), or null. */
  function firstDifference(a, b, path) {
    if (C.canonicalEqual(a, b)) return null;
    const esc = (k) => String(k).replace(/~/g, "~0").replace(/\//g, "~1");
    if (isObject(a) && isObject(b)) {
      const keys = Array.from(new Set(Object.keys(a).concat(Object.keys(b)))).sort(C.compareCodePoints);
      for (const k of keys) {
        if (!has(a, k) || !has(b, k)) return path + "/" + esc(k);
        const d = firstDifference(a[k], b[k], path + "/" + esc(k));
        if (d !== null) return d;
      }
    } else if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      for (let k = 0; k < a.length; k++) {
        const d = firstDifference(a[k], b[k], path + "/" + k);
        if (d !== null) return d;
      }
    }
    return path;
  }

  /* ------------------------------------------------------------- outcome */

  /** {result: "verified" | "failed" | "unsupported", summary} for a list of steps. */
  function outcome(steps, crypto) {
    const failed = steps.find((s) => s.ok === false);
    if (failed) return { result: "failed", summary: "Not verified: " + failed.text };
    if (steps.some((s) => s.ok === "unsupported")) {
      const why = crypto ? crypto.why() : "";
      return {
        result: "unsupported",
        summary: "Partly verified: every hash matched, but " + UNSUPPORTED_TEXT.replace("; hashes were checked", "") + (why ? " (" + why + ")" : ""),
      };
    }
    const receipt = steps.find((s) => s.id === "receipt-signature");
    const key = receipt ? receipt.key : null;
    const page = steps.some((s) => s.id === "page");
    if (!key) return { result: "verified", summary: "Verified: every check passed" };
    return {
      result: "verified",
      key: { keyId: key.keyId, fingerprint: key.fingerprintHex },
      // Only what was proven: the files are signed by this key. Whose key it is, the key
      // file (served by this mirror) cannot say; the page links to the one the resolver publishes.
      summary:
        "Verified: these files are signed by key " + key.keyId + ", fingerprint " + key.fingerprintHex +
        (page ? ", and this page shows what they say" : "") +
        ". The key file came from this mirror: compare that fingerprint with the key the Pith resolver publishes (linked above) to know whether the resolver signed them.",
    };
  }

  /**
   * From raw bytes to steps and outcome (what the page does after fetching).
   *   input = {pithNumber, recordSigned, files: {record, bundle, state, keys}}
   *   each file = {name, bytes} (or null when the page names none)
   */
  async function verifyFiles(input, subtle) {
    const crypto = makeCrypto(subtle);
    const load = new Step("load", "Loading");
    const parsed = {};
    const loaded = [];
    for (const which of ["record", "bundle", "state", "keys"]) {
      const file = input.files[which];
      if (!file) {
        parsed[which] = null;
        continue;
      }
      if (file.error) {
        load.fail(file.name + " could not be fetched: " + file.error);
        continue;
      }
      try {
        // The state of a number the mirror has a record document of only is derived
        // from it (the empty merge), and holds its record and aliases one level
        // deeper than the document did: allowed one level more than the loader's.
        parsed[which] = C.parseBytes(file.bytes, which === "state" ? { maxDepth: C.DEFAULT_MAX_DEPTH + 1 } : undefined);
        loaded.push(file.name);
      } catch (err) {
        if (!(err instanceof C.CanonicalError)) throw err;
        load.fail(file.name + " is not strict JSON: " + err.message);
      }
    }
    if (!load.problems.length && !isObject(parsed.record)) load.fail("the record JSON is not an object");
    if (!load.problems.length && parsed.bundle !== null && !isObject(parsed.bundle)) load.fail("the bundle JSON is not an object");
    load.passText = "fetched " + loaded.join(", ") + " (strict JSON: no duplicate keys, no NaN, valid UTF-8)";
    if (load.problems.length) {
      const steps = [load];
      return { steps: steps, ...outcome(steps, crypto) };
    }
    const names = {};
    for (const which of Object.keys(input.files)) if (input.files[which]) names[which] = input.files[which].name;
    const steps = [load].concat(
      await checkDocuments(
        {
          pithNumber: input.pithNumber,
          recordSigned: input.recordSigned,
          record: parsed.record,
          bundle: parsed.bundle,
          state: parsed.state,
          keys: parsed.keys,
          names: names,
          shown: input.shown,
        },
        crypto,
      ),
    );
    return { steps: steps, ...outcome(steps, crypto) };
  }

  /* ---------------------------------------------------------------- page */

  /** Only same-site absolute paths: a data attribute must not send us elsewhere. */
  function sitePath(value) {
    // A URL parser drops tabs and line breaks anywhere ("/\t/host" is "//host"): no control character passes
    return typeof value === "string" && /^\/(?![\/\\])[^\\\x00-\x1f\x7f]*$/.test(value) ? value : null;
  }

  async function fetchFile(path) {
    const file = { name: path };
    try {
      const response = await fetch(path, { cache: "no-store", credentials: "same-origin" });
      if (!response.ok) file.error = "HTTP " + response.status;
      else file.bytes = new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      file.error = "network error (" + (err && err.message ? err.message : String(err)) + ")";
    }
    return file;
  }

  function render(section, report) {
    const list = document.getElementById("verify-steps");
    const summary = document.getElementById("verify-summary");
    const marks = { true: "✓", false: "✗", unsupported: "?" };
    const words = { true: "passed", false: "failed", unsupported: "not checked" };
    if (list) {
      list.textContent = "";
      for (const s of report.steps) {
        const li = document.createElement("li");
        li.setAttribute("data-step", s.id);
        li.setAttribute("data-ok", String(s.ok));
        li.className = "verify-step verify-" + (s.ok === true ? "ok" : s.ok === false ? "fail" : "unsupported");
        const mark = document.createElement("span");
        mark.className = "verify-mark";
        mark.setAttribute("aria-hidden", "true");
        mark.textContent = marks[String(s.ok)] + " ";
        const hidden = document.createElement("span");
        hidden.className = "visually-hidden";
        // Read by screen readers, not shown; inline so it does not depend on the site's CSS.
        hidden.style.cssText = "position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0;padding:0";
        hidden.textContent = words[String(s.ok)] + ": ";
        const text = document.createElement("span");
        text.className = "verify-text";
        text.textContent = s.text;
        li.append(mark, hidden, text);
        list.append(li);
      }
    }
    if (summary) summary.textContent = report.summary;
    section.setAttribute("data-result", report.result);
    // the page's own green labels were written by the mirror: struck through once the check fails
    document.documentElement.setAttribute("data-verify", report.result);
  }

  /** [{fact, text}] of every element the page marks with data-fact, in page order. */
  function pageFacts() {
    return Array.from(document.querySelectorAll("[data-fact]")).map((el) => ({
      fact: el.getAttribute("data-fact"),
      text: el.textContent,
    }));
  }

  async function runOnPage(section, button) {
    if (button) button.disabled = true;
    section.setAttribute("data-result", "running");
    const summary = document.getElementById("verify-summary");
    if (summary) summary.textContent = "Checking…";
    const list = document.getElementById("verify-steps");
    if (list) list.textContent = "";
    let report;
    try {
      const names = { record: "data-record-json", bundle: "data-bundle-json", state: "data-state-json", keys: "data-keys" };
      const files = {};
      const bad = [];
      await Promise.all(
        Object.keys(names).map(async (which) => {
          const attr = section.getAttribute(names[which]);
          if (attr === null || attr === "") {
            files[which] = null;
            if (which === "record" || which === "keys") bad.push(names[which] + " is missing");
            return;
          }
          const path = sitePath(attr);
          if (path === null) {
            files[which] = null;
            bad.push(names[which] + " is not a path on this site");
            return;
          }
          files[which] = await fetchFile(path);
        }),
      );
      if (bad.length) {
        const load = new Step("load", "Loading");
        load.fail("this page is set up wrongly: " + bad.join(", "));
        report = { steps: [load], ...outcome([load], null) };
      } else {
        const subtle = root.crypto && root.crypto.subtle ? root.crypto.subtle : null;
        report = await verifyFiles(
          {
            pithNumber: section.getAttribute("data-pith-number") || undefined,
            recordSigned: section.getAttribute("data-record-signed") !== "false",
            files: files,
            shown: pageFacts(),
          },
          subtle,
        );
      }
    } catch (err) {
      // A bug here must not look like a verified record.
      const crash = new Step("error", "Error");
      crash.fail("the check stopped unexpectedly: " + (err && err.message ? err.message : String(err)));
      report = { steps: [crash], result: "failed", summary: "Not verified: " + crash.text };
    }
    render(section, report);
    if (button) button.disabled = false;
  }

  function setup() {
    const section = document.getElementById("browser-verify");
    const button = document.getElementById("verify-button");
    if (!section || !button) return;
    if (!C) {
      const summary = document.getElementById("verify-summary");
      if (summary) summary.textContent = "The verifier could not start: canonical.js is missing.";
      return;
    }
    button.addEventListener("click", () => runOnPage(section, button));
  }

  const api = {
    checkDocuments: checkDocuments,
    verifyFiles: verifyFiles,
    makeCrypto: makeCrypto,
    merge: merge,
    base32: base32,
    decodeBase64: decodeBase64,
    firstDifference: firstDifference,
    sitePath: sitePath,
    shownText: shownText,
  };
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) {
    root.PithVerify = api;
    if (root.document) {
      if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", setup);
      else setup();
    }
  }
})(typeof window !== "undefined" ? window : null);
