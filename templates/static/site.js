// Small page helpers that need no data: show this mirror's own address in the
// shell lines when the site was built without an absolute base URL.
(function () {
  "use strict";
  var base = document.documentElement.getAttribute("data-base") || "/";
  document.querySelectorAll("[data-origin]").forEach(function (node) {
    if (/^https?:\/\/localhost:8000\/$/.test(node.textContent)) {
      node.textContent = window.location.origin + base;
    }
  });
})();
