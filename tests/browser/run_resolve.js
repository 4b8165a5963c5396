// Test runner: templates/static/resolve.js's pure functions.
// stdin:  {"shard": [["kind", "value", width], ...], "parse": ["?query", ...],
//          "path": [["/base/", "kind", "shard"], ...], "width": [index, ...],
//          "entry": [[shard, "key"], ...], "primary": [["https://primary", "?query"], ...]}
// stdout: {"shard": [string|null, ...], "parse": [{...}, ...], "path": [string|null, ...],
//          "width": [number|null, ...], "entry": [object|null, ...], "primary": [...]}
"use strict";
const path = require("path");
const R = require(path.join(__dirname, "..", "..", "templates", "static", "resolve.js"));

const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
function shard([kind, value, width]) {
  const key = R.lookupKey(kind, value);
  return key === null ? null : R.shardOf(key, width);
}
process.stdout.write(
  JSON.stringify({
    shard: (request.shard || []).map(shard),
    parse: (request.parse || []).map((q) => R.parseQuery(q)),
    path: (request.path || []).map(([base, kind, shard]) => R.shardPath(base, kind, shard)),
    width: (request.width || []).map((index) => R.shardWidth(index)),
    entry: (request.entry || []).map(([shard, key]) => R.entryOf(shard, key)),
    primary: (request.primary || []).map(([primary, search]) => R.primaryLookup(primary, search)),
  }),
);
