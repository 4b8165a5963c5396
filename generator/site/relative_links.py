"""A site that opens from disk (`relative = true`, `build --relative`).

Pages link by absolute path ("/pith/P", "/assets/site.css"), which a web server
answers and a browser reading `site/index.html` from disk does not: it shows an
unstyled page whose links lead nowhere. For such a site, every link and source
that starts with the base path is written relative to its page, naming the file
it reaches ("pith/P" is "pith/P.html", a folder its "index.html"), and
`data-base` (where scripts find the site) becomes the way back to the top
("../../"). The paths the in-browser check reads (`data-record-json` and the
like) stay absolute: it accepts no other, and a browser lets a page read from
disk fetch nothing anyway, so the check and the search need a web server
(`pith-mirror serve`), there as on any site.

Rules:
- Done on a finished full build's staging folder, before it is swapped in; a
  relative site is always built whole (two twins of a page, `P.html` and
  `P/index.html`, then differ, and an incremental build would have to know it).
- Only the files a build wrote are named: a link to nothing stays a link to
  nothing, made relative.
- Replaced file by file (a new file renamed over the old one), so a page that
  is a hard link to its twin is never changed through the other name.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from urllib.parse import quote, unquote

_ATTRIBUTE = re.compile(r'(\s(href|src|action|data-base)=")([^"]*)(")')
_REFRESH = re.compile(r'(<meta http-equiv="refresh" content="0; url=)([^"]*)(")')


def make_relative(root: Path, base: str) -> int:
    """Rewrite every HTML page under `root` (a site for base path `base`) to link
    relatively; returns how many pages changed."""
    files = {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}
    changed = 0
    for name in sorted(f for f in files if f.endswith(".html")):
        page = root / name
        text = page.read_text("utf-8")
        new = relative_page(text, name, base, files)
        if new != text:
            temporary = page.with_name(page.name + ".relative")
            temporary.write_text(new, "utf-8")
            os.replace(temporary, page)
            changed += 1
    return changed


def relative_page(text: str, name: str, base: str, files: set[str]) -> str:
    """One page's text (it is at `name` in the site) with its site links relative."""
    folder = quote(posixpath.dirname(name))
    up = posixpath.relpath(".", folder or ".") + "/"  # "./" at the top, "../../" two folders down

    def link(value: str) -> str:
        if not value.startswith(base) or value.startswith("//"):
            return value
        rest = value[len(base) :]
        cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
        path, tail = rest[:cut], rest[cut:]
        target = file_for(path, files)
        relative = posixpath.relpath(target, folder or ".") if target else up
        return relative + tail

    def attribute(match: re.Match[str]) -> str:
        if match.group(2) == "data-base":
            value = up if match.group(3) == base else match.group(3)
        else:
            value = link(match.group(3))
        return f"{match.group(1)}{value}{match.group(4)}"

    text = _ATTRIBUTE.sub(attribute, text)
    return _REFRESH.sub(lambda m: f"{m.group(1)}{link(m.group(2))}{m.group(3)}", text)


def file_for(path: str, files: set[str]) -> str:
    """The file a site path names (percent-encoded as links write it), as a path
    below the site's top in the same encoding: itself, `path.html`, or
    `path/index.html`; "" for the top itself, which is `index.html`."""
    plain = unquote(path)
    stem, plain_stem = path.rstrip("/"), plain.rstrip("/")
    if not plain_stem:
        return "index.html"
    if not plain.endswith("/"):
        if plain in files:
            return path
        if plain_stem + ".html" in files:
            return stem + ".html"
    if plain_stem + "/index.html" in files:
        return stem + "/index.html"
    return path
