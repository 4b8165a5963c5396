/* The folder twin of the resolve page (api/pith-number/resolve/index.html, which a static
   host serves for resolve/ and, having sent resolve on to resolve/, for resolve?...): the
   page itself is resolve.html. A meta refresh would drop the address's query and fragment,
   which are the look-up; this keeps them. (A file, not an inline script: no page of the
   site runs a script it does not load from assets/.) */
(function () {
  "use strict";
  var path = location.pathname.replace(/\/(index\.html)?$/, "");
  location.replace(path + ".html" + location.search + location.hash);
})();
