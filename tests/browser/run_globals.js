// Test runner: load the static scripts the way a page does (classic scripts sharing one
// global `window`, no `module`, no `require`, no `document`) and list what they expose.
// stdout: {"PithCanonical": ["canonical", ...], ...}
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");

const STATIC = path.join(__dirname, "..", "..", "templates", "static");
const sandbox = { TextEncoder, TextDecoder, URLSearchParams, atob, crypto, console, DOMException };
sandbox.window = sandbox;
const context = vm.createContext(sandbox);
for (const name of ["canonical.js", "verify.js", "search.js", "resolve.js"]) {
  vm.runInContext(fs.readFileSync(path.join(STATIC, name), "utf8"), context, { filename: name });
}
const exposed = {};
for (const name of ["PithCanonical", "PithVerify", "PithSearch", "PithResolve"]) {
  exposed[name] = sandbox[name] ? Object.keys(sandbox[name]).sort() : null;
}
// One real use through the globals: verify.js must find canonical.js through window.
exposed.sample = sandbox.PithCanonical.canonicalText(sandbox.PithCanonical.parse('{"b":1.0,"a":[10]}'));
// resolve.js must find canonical.js (its SHA-256) through window too.
exposed.shard = sandbox.PithResolve.shardOf("a b/..", 4);
process.stdout.write(JSON.stringify(exposed));
