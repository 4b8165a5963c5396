// Test runner: each script's sitePath, the check that a path from site data stays on the site.
// stdin:  ["<value>", ...]
// stdout: {"<script>": [<value or null>, ...], ...}
"use strict";
const path = require("path");
const values = JSON.parse(require("fs").readFileSync(0, "utf8"));
const answer = {};
for (const name of ["verify.js", "search.js", "resolve.js"]) {
  const script = require(path.join(__dirname, "..", "..", "templates", "static", name));
  answer[name] = values.map((v) => script.sitePath(v));
}
process.stdout.write(JSON.stringify(answer));
