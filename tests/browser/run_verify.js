// Test runner: templates/static/verify.js on documents given as bytes.
// stdin:  {"cases": [{"pith_number": "...", "record_signed": true,
//                     "files": {"record": {"name": "/pith/X.json", "b64": "..."}, "bundle": null | {...},
//                               "state": null | {...}, "keys": {...}},
//                     "crypto": "webcrypto" | "no-ed25519" | "no-subtle"}, ...]}
//         (a file may be {"name": ..., "error": "HTTP 404"} to stand for a failed fetch;
//          "shown", when given, is the page's [{"fact", "text"}], as a record page marks them)
// stdout: [{"result": "...", "summary": "...", "steps": [{"id", "ok", "text", "problems"}]}, ...]
"use strict";
const path = require("path");
const V = require(path.join(__dirname, "..", "..", "templates", "static", "verify.js"));

/** Web Crypto as a browser without Ed25519 has it: importKey refuses the algorithm. */
function subtleWithoutEd25519(subtle) {
  return {
    digest: (...args) => subtle.digest(...args),
    importKey: async () => {
      throw new DOMException("Unrecognized name.", "NotSupportedError");
    },
    verify: () => {
      throw new Error("verify must not be called when importKey failed");
    },
  };
}

async function main() {
  const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const answers = [];
  for (const c of request.cases) {
    const files = {};
    for (const which of ["record", "bundle", "state", "keys"]) {
      const f = c.files[which];
      files[which] = f ? (f.error ? { name: f.name, error: f.error } : { name: f.name, bytes: Buffer.from(f.b64, "base64") }) : null;
    }
    const subtle =
      c.crypto === "no-subtle" ? null : c.crypto === "no-ed25519" ? subtleWithoutEd25519(crypto.subtle) : crypto.subtle;
    const report = await V.verifyFiles({ pithNumber: c.pith_number, recordSigned: c.record_signed, files, shown: c.shown }, subtle);
    answers.push({ result: report.result, summary: report.summary, steps: report.steps.map((s) => s.toJSON()) });
  }
  process.stdout.write(JSON.stringify(answers));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(1);
});
