// Test runner: PithCanonical.formatFloat for doubles given as Python repr() text.
// stdin: {"floats": ["0.1", "1e+16", ...]}   stdout: ["0.1", "1e+16", ...]
"use strict";
const path = require("path");
const C = require(path.join(__dirname, "..", "..", "templates", "static", "canonical.js"));

const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(request.floats.map((text) => C.formatFloat(Number(text)))));
