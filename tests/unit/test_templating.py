"""The Jinja environment: text on a page is escaped exactly as markupsafe
escapes it, by every template, however it was loaded."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup, escape

from generator.site.config import SiteConfig, default_templates
from generator.site.templating import escape_text, make_environment, text_markup, visible_controls
from generator.trust.keys import Keyring


class _Html:
    def __html__(self) -> str:
        return "<b>kept</b>"


_TEXT = st.text(alphabet=st.sampled_from("ab <>&'\"é\x00\U0001f600;#"), max_size=30) | st.text(max_size=30)
_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # bidirectional formatting
_BIDI = st.text(alphabet=st.sampled_from("a<é" + _CONTROLS), max_size=12)


@given(_TEXT | st.integers() | st.none() | st.floats(allow_nan=False) | _TEXT.map(Markup))
def test_text_is_escaped_exactly_as_markupsafe_escapes_it(value: Any) -> None:
    if isinstance(value, str) and not isinstance(value, Markup):
        value = value.translate(dict.fromkeys(range(0x202A, 0x202F)) | dict.fromkeys(range(0x2066, 0x206A)))
        value = visible_controls(value)  # (control characters: see the test below)
    assert str(escape_text(value)) == str(escape(value))


_CONTROL_TEXT = st.text(
    alphabet=st.sampled_from("a<\t\n\r\x00\x01\x0b\x0c\x1b\x1f\x7f\x80\x85\x9f é"), max_size=20
)


@given(_CONTROL_TEXT)
def test_control_characters_are_shown_visibly(value: str) -> None:
    """NUL, form feed, escape and the rest of C0, DEL and C1 reach no page raw: each is
    shown as its control picture (U+2400 + code, DEL as U+2421) or, for C1, U+FFFD;
    tab, line feed and carriage return stay the white space they are."""
    out = str(escape_text(value))
    assert not any((0 <= ord(c) < 0x20 and c not in "\t\n\r") or 0x7F <= ord(c) <= 0x9F for c in out)
    pictures = {chr(c): chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\t\n\r"}
    pictures |= {"\x7f": "\u2421"} | {chr(c): "\ufffd" for c in range(0x80, 0xA0)}
    assert out == str(escape("".join(pictures.get(c, c) for c in value)))


@given(_TEXT | _CONTROL_TEXT | _BIDI)
def test_text_markup_is_escape_text_with_its_quotes_left_as_they_are(value: str) -> None:
    """The text of a block to copy (canonical JSON, the badge's HTML): the same
    characters as `escape_text` gives, controls and overrides included, but quotes,
    which mean nothing in an element's text, written as they are."""
    out = text_markup(value)
    assert isinstance(out, Markup)
    assert out == str(escape_text(value)).replace("&#34;", '"').replace("&#39;", "'")
    assert html.unescape(out) == html.unescape(str(escape_text(value)))


def test_a_signed_title_with_a_nul_is_shown_visibly_on_its_page(env: Any) -> None:
    html = env.from_string("<h1>{{ title }}</h1>").render(title="Zero\x00Day\x0c and \x85")
    assert html == "<h1>Zero\u2400Day\u240c and \ufffd</h1>"


@given(_BIDI)
def test_bidirectional_overrides_a_value_opens_are_closed_after_it(value: str) -> None:
    """A signed value may hold a RIGHT-TO-LEFT OVERRIDE: it must not reverse the
    page's own text after it. Its characters are kept, closers are added."""
    out = str(escape_text(value))
    assert out.startswith(str(escape(value)))
    closers = out[len(str(escape(value))) :]
    isolates = sum(value.count(c) for c in "\u2066\u2067\u2068")
    embeddings = sum(value.count(c) for c in "\u202a\u202b\u202d\u202e")
    assert closers == "\u2069" * isolates + "\u202c" * embeddings


def test_markup_and_objects_with_html_pass_as_markup() -> None:
    for value, shown in [
        (_Html(), "<b>kept</b>"),
        (Markup("<i>x</i>"), "<i>x</i>"),
        ("<i>x</i>", "&lt;i&gt;x&lt;/i&gt;"),
    ]:
        out = escape_text(value)
        assert isinstance(out, Markup) and out == shown
    assert escape_text("plain") == "plain" and type(escape_text("plain")) is str


@pytest.fixture
def env(tmp_path: Path, keyring: Keyring) -> Any:
    return make_environment(SiteConfig(site=tmp_path / "site", cache=tmp_path / "cache"), keyring)


@pytest.mark.parametrize("name", sorted(p.name for p in default_templates().glob("*.html")))
def test_every_template_outputs_through_escape_text(
    env: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The templates output text through `escape_text`, also when read back
    compiled from the bytecode cache: a Jinja that no longer names its
    escaping `escape` fails this test, not the pages."""
    fresh = env.get_template(name)
    assert fresh.root_render_func.__globals__["escape"] is escape_text
    env.cache.clear()

    def no_compiling(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("compiled again: not read from the bytecode cache")

    monkeypatch.setattr(env, "compile", no_compiling)
    cached = env.get_template(name)
    assert cached is not fresh
    assert cached.root_render_func.__globals__["escape"] is escape_text


def test_hostile_text_in_a_template_is_text(env: Any) -> None:
    template = env.from_string("<p title='{{ v }}'>{{ v }}</p>{{ m }}")
    out = template.render(v="<script>alert('x')</script> & \"q\"", m=Markup("<br>"))
    assert out == (
        "<p title='&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &#34;q&#34;'>"
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &#34;q&#34;</p><br>"
    )
