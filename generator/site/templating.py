"""The Jinja environment every page is rendered with: templates, filters,
the `site` settings, and the escaping of text.

Rules:
- Autoescape is on everywhere: every string from a document is text, never
  markup, and reaches a page only through markupsafe's escaping or through
  `escape_text`, which gives the very same characters.
- Compiled templates are kept beside the build cache (see `_bytecode_cache`).
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, fields
from types import CodeType
from typing import TYPE_CHECKING, Any

from jinja2 import (
    Environment,
    FileSystemBytecodeCache,
    FileSystemLoader,
    StrictUndefined,
    Template,
    TemplateError,
    select_autoescape,
)
from markupsafe import Markup, escape

from .. import __version__
from ..trust.canonical import canonical_json
from ..trust.errors import BuildError
from ..trust.keys import Keyring, is_resolver_key, resolver_key_url
from .config import SiteConfig

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

GUIDE = "guide"
"""The site-wide page (guide.html) that says once what is the same on every record
page: the reasons behind each provenance line, what the checks and the shell lines
do, the completeness checklist in the resolver's words. Pages link to its anchors."""


@dataclass(frozen=True, slots=True)
class SiteInfo:
    """The site-wide settings every template sees as `site`."""

    title: str
    base: str
    """The path every URL starts with ("/" or "/mirror/"): a link is `site.base` + a path."""
    absolute_base: str | None
    primary_url: str
    """The primary resolver, without a trailing "/"."""
    version: str

    @classmethod
    def of(cls, config: SiteConfig) -> SiteInfo:
        return cls(
            title=config.site_title,
            base=config.base_path,
            absolute_base=config.absolute_base,
            primary_url=config.primary_url.rstrip("/"),
            version=__version__,
        )

    @classmethod
    def of_environment(cls, env: Environment) -> SiteInfo:
        """The settings an environment from `make_environment` gives its templates."""
        site = env.globals["site"]
        assert isinstance(site, SiteInfo), "the environment comes from make_environment"
        return site

    @property
    def guide(self) -> str:
        """The link to the guide page (`GUIDE`)."""
        return self.base + GUIDE


@dataclass(frozen=True, slots=True)
class KeyView:
    """A pinned key as pages name it: its id, its full fingerprint, and whose it is."""

    key_id: str
    fingerprint: str
    """`fingerprint_sha256_hex`, whole (the first 16 bytes of SHA-256 of the key)."""
    resolver: bool
    """The resolver's known key (the one pinned by default), not one an operator chose."""


@dataclass(frozen=True, slots=True)
class TrustInfo:
    """Which keys this site was verified against, as every template sees it (`trust`).

    A page says "the resolver's key" only of the key the tool ships as the resolver's;
    a key the mirror's operator pinned instead is named as the operator's, so a site
    built with another key never borrows the resolver's name."""

    keys: tuple[KeyView, ...]
    resolver_key_url: str
    """Where the resolver publishes its own key: a reader compares fingerprints there."""

    @classmethod
    def of(cls, keyring: Keyring) -> TrustInfo:
        views = tuple(KeyView(k.key_id, k.fingerprint_hex, is_resolver_key(k)) for k in keyring.keys)
        return cls(views, resolver_key_url())

    @property
    def all_resolver(self) -> bool:
        return all(k.resolver for k in self.keys)

    def key(self, key_id: object) -> KeyView | None:
        return next((k for k in self.keys if k.key_id == key_id), None)


def make_environment(config: SiteConfig, keyring: Keyring) -> Environment:
    env = _Environment(
        loader=FileSystemLoader(str(config.templates)),
        bytecode_cache=_bytecode_cache(config),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    site = SiteInfo.of(config)
    base = site.base
    env.globals.update(url=lambda path="": base + path.lstrip("/"), site=site, trust=TrustInfo.of(keyring))
    keys = {k.key_id: k.public_key_b64 for k in keyring.keys}
    env.globals["key_b64"] = lambda key_id: keys.get(key_id, "")
    env.filters["jsonld"] = _jsonld
    env.filters["xml"] = lambda value: Markup(xml_escape(str(value)))
    env.filters["short"] = lambda text, n=16: text if len(text) <= n else text[:n] + "…"
    return env


def _bytecode_cache(config: SiteConfig) -> FileSystemBytecodeCache | None:
    """Compiled templates, kept beside the build cache: compiling costs more than a small build.
    Jinja keys each entry by the template's source, so an edited template is never served stale."""
    folder = config.cache_dir / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return FileSystemBytecodeCache(str(folder))


_JSON_RAW_CONTROLS = re.compile("[\x7f-\x9f]")
"""Controls JSON may hold raw (DEL and C1; C0 it escapes itself)."""


def _jsonld(value: Any) -> Markup:
    """JSON for a <script> block: '<', '>' and '&' escaped so no text can close it,
    and DEL and C1 controls as \\u escapes, so no control reaches the page raw.
    Compact (sorted keys, no white space): it is for machines, on every record page."""
    text = canonical_json(value).decode("utf-8")
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(_JSON_RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


_EMBEDDINGS = "\u202a\u202b\u202d\u202e"  # LRE RLE LRO RLO: each ended by PDF (U+202C)
_ISOLATES = "\u2066\u2067\u2068"  # LRI RLI FSI: each ended by PDI (U+2069)
_BIDI_OPENERS = re.compile(f"[{_EMBEDDINGS}{_ISOLATES}]")


def close_bidi(text: str) -> str:
    """`text` followed by a PDI for each isolate and a PDF for each embedding or
    override it opens, so that a signed value ("2101.00009" + RIGHT-TO-LEFT
    OVERRIDE) cannot reverse the page's own words after it. The value's own
    characters stay as they are; a closer too many is ignored by browsers."""
    if not _BIDI_OPENERS.search(text):
        return text
    isolates = sum(text.count(c) for c in _ISOLATES)
    embeddings = sum(text.count(c) for c in _EMBEDDINGS)
    return text + "\u2069" * isolates + "\u202c" * embeddings


_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _control_picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"


def visible_controls(text: str) -> str:
    """`text` with each control character a reader could not see shown visibly: C0
    ones (NUL, form feed, escape...) as their Unicode control pictures (U+2400 +
    code: "␀", "␌", "␛"), DEL as "␡", and C1 ones as U+FFFD, as the feed shows them.
    Tab, line feed and carriage return are white space a page shows as such. A
    signed title may hold any of them; written raw, NUL and the C1 range are
    invalid HTML, and the rest are shown as nothing. verify.js (`shownText`)
    makes the same change before it compares a page with the files."""
    return _CONTROLS.sub(_control_picture, text)


def escape_text(value: Any) -> Any:
    """What `markupsafe.escape` gives, as the text of a page: `{{ value }}`, with
    any bidirectional override a string opens closed after it (`close_bidi`) and
    control characters shown visibly (`visible_controls`).

    A string with none of the five characters HTML escaping changes comes back
    as it is; everything else goes through `markupsafe.escape`. The characters
    are the same either way. A record page outputs about 180 values, most of
    them hashes, numbers and dates, and markupsafe's two Python calls for each
    (the function, then the Markup it returns) were 60 % of the page's render."""
    if type(value) is str:
        # (`shown_text`, inline: this runs for every value of every page, and a call
        # for each cost more than the two checks themselves)
        if not value.isascii():
            value = close_bidi(value)
        if not value.isprintable():
            value = visible_controls(value)
        if not ("&" in value or "<" in value or ">" in value or "'" in value or '"' in value):
            return value  # (five scans in C: faster than one regular expression for such short text)
    return escape(value)


def text_markup(value: str) -> Markup:
    """`value` as the text of an element, never of an attribute: the characters
    `escape_text` gives, with '&', '<' and '>' escaped but quotes left as they are,
    since only those three mean anything in text. For the blocks of JSON and HTML
    a record page shows to copy, where each quote written as `&#34;` took five
    bytes (a canonical record holds some forty)."""
    return Markup(shown_text(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def shown_text(value: str) -> str:
    """`value` as a page shows it, before escaping: any bidirectional override it
    opens closed after it (`close_bidi`), control characters visible (`visible_controls`).
    (`escape_text` makes the same two checks inline: keep the two in step.)"""
    if not value.isascii():  # (no override is ASCII: most values need no search)
        value = close_bidi(value)
    if not value.isprintable():  # (a scan in C; false for any control character)
        value = visible_controls(value)
    return value


class _Template(Template):
    """A template whose `{{ }}` output goes through `escape_text`.

    Jinja's compiled templates output through a module-level name, `escape`,
    imported from its runtime (markupsafe's). That name is bound again, per
    template, to `escape_text`; should a later Jinja spell it otherwise, the
    name is not found and markupsafe's escaping stays: slower, the same pages.
    """

    @classmethod
    def from_code(
        cls,
        environment: Environment,
        code: CodeType,
        globals: MutableMapping[str, Any],
        uptodate: Callable[[], bool] | None = None,
    ) -> Template:
        template = super().from_code(environment, code, globals, uptodate)
        namespace = template.root_render_func.__globals__
        if namespace.get("escape") is escape:
            namespace["escape"] = escape_text
        return template


class _Environment(Environment):
    template_class = _Template


def page_context(page: DataclassInstance) -> dict[str, Any]:
    """A page's fields as a template's context, one level deep: templates read the
    attributes of its parts (named tuples, views), which `dataclasses.asdict` would
    turn into dicts and lists, copying every one."""
    return {f.name: getattr(page, f.name) for f in fields(page)}


def render_template(env: Environment, name: str, context: dict[str, Any]) -> str:
    """Render, turning any template failure into a BuildError that names the template."""
    try:
        template = env.get_template(name)
        # What Template.render does, through Jinja's documented low-level API
        # (new_context, root_render_func), but with the globals merged by a plain
        # dict copy: render merges them through a ChainMap, which costs as much
        # as a small page.
        ctx = template.new_context({**env.globals, **context}, shared=True)
        try:
            return env.concat(template.root_render_func(ctx))
        except Exception:
            env.handle_exception()
    except TemplateError as exc:
        where = getattr(exc, "filename", None) or name
        raise BuildError(str(where), f"template error: {exc}") from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        # A template can fail at run time the ways Python can: {{ 1 // 0 }},
        # {{ 1 + "a" }}, a base that extends itself, a stray byte that is not
        # UTF-8 (ValueError). Jinja has rewritten the traceback to point into
        # the template: name its line, as for a syntax error.
        raise BuildError(
            _template_line(exc) or name, f"template error: {type(exc).__name__}: {exc}"
        ) from None


def _template_line(exc: BaseException) -> str | None:
    """ "file:line" of the innermost template frame of `exc`'s traceback, if any."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith((".html", ".htm", ".xml", ".txt")):
            found = f"{frame.filename}:{frame.lineno}"
    return found


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot hold at all, not even as references (control
characters, surrogates, U+FFFE and U+FFFF); JSON strings can."""


def xml_escape(text: str) -> str:
    """Text for XML: '&', '<' and '>' as entities, as `xml.sax.saxutils.escape`
    makes it (that module imports urllib.request, http.client and email, which
    cost every command about 40 ms before it does anything), and any character
    XML cannot hold as U+FFFD, so that one signed title with a form feed in it
    does not make the whole feed or sitemap unreadable."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _NOT_XML.sub("\ufffd", text)


_REDIRECT = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<meta name="robots" content="noindex">
<meta http-equiv="refresh" content="0; url={to}">
<link rel="canonical" href="{canonical}">
</head>
<body>
{body}</body>
</html>
"""


def redirect_page(title: str, to: str, canonical: str, body: str) -> str:
    """A small page that sends its reader to `to` at once (a meta refresh, and
    `body`'s link for a reader whose browser does not follow it), naming
    `canonical` as the address of what it stands for. `body` is HTML already;
    the rest is text, escaped here."""
    return _REDIRECT.format(
        title=xml_escape(title), to=attribute(to), canonical=attribute(canonical), body=body
    )


def attribute(text: str) -> str:
    """Text for a double-quoted HTML attribute (as `xml_escape`, and '"' as `&quot;`)."""
    return xml_escape(text).replace('"', "&quot;")


def folder_redirect(path: str, base: str, carry_query: bool = False) -> bytes:
    """The folder twin `path/index.html` of the page `path.html` (see layout): it
    sends readers to the page by its file name, every host's answer for it.

    A meta refresh drops the address's query and fragment. With `carry_query` (the
    resolve page, whose look-up is its query: a static host sends `resolve?arxiv=...`
    to `resolve/`), a script (assets/folder-twin.js) goes on with both; the refresh is
    what a reader without scripts gets. (Not on every twin: two per record, each would
    outgrow one 512-byte tar block.)"""
    file, url = f"{base}{path}.html", f"{base}{path}"
    body = f'<p>This page is at <a href="{attribute(file)}">{xml_escape(url)}</a>.</p>\n'
    page = redirect_page(path, file, url, body)
    if carry_query:
        # (the refresh only where scripts do not run: Chromium lets a refresh scheduled
        # after the script's navigation replace it, and the query is lost again)
        refresh = page[page.index('<meta http-equiv="refresh"') :].partition("\n")[0]
        script = f'<script src="{attribute(base)}assets/folder-twin.js"></script>\n'
        page = page.replace(refresh, f"{script}<noscript>{refresh}</noscript>", 1)
    return page.encode("utf-8")
