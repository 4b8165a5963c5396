// Test runner: templates/static/resolve.js's pure functions.
// stdin:  {"encode": ["value", ...], "parse": ["?query", ...], "lookup": [["/base/", "kind", "value"], ...],
//          "primary": [["https://primary", "?query"], ...]}
// stdout: {"encode": [string|null, ...], "parse": [{...}, ...], "lookup": [string|null, ...], "primary": [...]}
"use strict";
const path = require("path");
const R = require(path.join(__dirname, "..", "..", "templates", "static", "resolve.js"));

const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(
  JSON.stringify({
    encode: (request.encode || []).map((v) => R.encodeValue(v)),
    parse: (request.parse || []).map((q) => R.parseQuery(q)),
    lookup: (request.lookup || []).map(([base, kind, value]) => R.lookupPath(base, kind, value)),
    primary: (request.primary || []).map(([primary, search]) => R.primaryLookup(primary, search)),
  }),
);
