// Test runner: small pure helpers of canonical.js and verify.js.
// stdin:  {"sha256": ["<base64>", ...], "base32": ["<base64>", ...]}
// stdout: {"sha256": ["<hex>", ...], "base32": ["...", ...]}
"use strict";
const path = require("path");
const C = require(path.join(__dirname, "..", "..", "templates", "static", "canonical.js"));
const V = require(path.join(__dirname, "..", "..", "templates", "static", "verify.js"));

const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
const bytes = (b64) => new Uint8Array(Buffer.from(b64, "base64"));
process.stdout.write(
  JSON.stringify({
    sha256: request.sha256.map((b) => C.toHex(C.sha256(bytes(b)))),
    base32: request.base32.map((b) => V.base32(bytes(b))),
  }),
);
