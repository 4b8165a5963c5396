"""Site: verified documents in, the files of the site out (in memory).

Owns the resolver's URL layout, the settings a site is built with, the page
model (what a page shows and where each fact comes from), the templates and
their environment, site-wide pages, the search index, the mirror manifest and
the hosts' `_headers`.

May import: `generator.trust`.
"""
