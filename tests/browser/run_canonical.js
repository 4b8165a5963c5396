// Test runner: canonical bytes of JSON documents, computed by templates/static/canonical.js.
// stdin:  {"documents": ["<base64 of the document's bytes>", ...]}
// stdout: [{"hex": "<canonical bytes as hex>"} | {"error": "<message>"}, ...]
"use strict";
const path = require("path");
const C = require(path.join(__dirname, "..", "..", "templates", "static", "canonical.js"));

const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
const answers = request.documents.map((b64) => {
  try {
    const value = C.parseBytes(Buffer.from(b64, "base64"));
    return { hex: C.toHex(C.canonical(value)) };
  } catch (err) {
    if (!(err instanceof C.CanonicalError)) return { error: "UNEXPECTED " + err.name + ": " + err.message };
    return { error: err.message };
  }
});
process.stdout.write(JSON.stringify(answers));
