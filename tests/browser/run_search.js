// Test runner: templates/static/search.js against an in-memory index.
// stdin:  {"base": "/", "files": {"<url>": <json>, ...},
//          "ops": [{"op": "tokens", "query": "..."} | {"op": "search", "query": "...", "fresh": true}]}
//         (a URL missing from "files" answers 404)
// stdout: [{"tokens": [...]} | {"tokens": [...], "total": n, "rows": [...], "fetched": ["<url>", ...]}, ...]
"use strict";
const path = require("path");
const S = require(path.join(__dirname, "..", "..", "templates", "static", "search.js"));

async function main() {
  const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
  let fetched = [];
  const fetchJson = async (url) => {
    fetched.push(url);
    // A copy, as a real fetch would give: the index must not depend on sharing objects.
    return Object.prototype.hasOwnProperty.call(request.files, url) ? JSON.parse(JSON.stringify(request.files[url])) : null;
  };
  let index = new S.SearchIndex(request.base, fetchJson);
  const answers = [];
  for (const op of request.ops) {
    if (op.op === "tokens") {
      answers.push({ tokens: S.queryTokens(op.query) });
      continue;
    }
    if (op.fresh) index = new S.SearchIndex(request.base, fetchJson);
    fetched = [];
    const answer = await index.search(op.query);
    answers.push({ tokens: answer.tokens, total: answer.total, rows: answer.rows, fetched: fetched.slice().sort() });
  }
  process.stdout.write(JSON.stringify(answers));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(1);
});
