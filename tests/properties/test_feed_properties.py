"""The feed's records are the newest by update time, then number: `newest` picks
them without sorting every record, and must pick exactly what a full sort
would, ties on the time included. Its text is escaped by `xml_escape`, which
must give exactly what the standard library's XML escape gives, for any text XML
can hold."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from random import Random
from xml.sax.saxutils import escape

import factories
from hypothesis import given
from hypothesis import strategies as st

from generator.site.sitewide import newest
from generator.site.templating import xml_escape

_XML_CHAR = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""XML 1.0's Char production (section 2.2 of the specification)."""

# A few times, so that many records share one (the usual case: a batch of events).
times = st.sampled_from(["2021-01-01T00:00:00Z", "2021-01-02T00:00:00Z", "2026-07-09T00:00:01Z", ""])
bodies = st.text(alphabet="AB27", min_size=1, max_size=4)


@given(st.dictionaries(bodies, times, max_size=40), st.integers(1, 12), st.randoms())
def test_newest_is_the_head_of_the_full_order(records: dict[str, str], count: int, random: Random) -> None:
    summaries = [
        factories.summary(pith_number=f"pith:2021:{body}", updated_at=when) for body, when in records.items()
    ]
    random.shuffle(summaries)  # (whatever order they come in)
    expected = sorted(summaries, key=lambda s: (s.updated_at, s.pith_number), reverse=True)[:count]
    assert newest(summaries, count) == expected


@given(st.text(alphabet=st.sampled_from("&<>\"'a;#x é\U0001d11e\t\n\r")) | st.text())
def test_xml_escape_is_the_standard_librarys_where_xml_can_hold_the_text(text: str) -> None:
    """The same as `xml.sax.saxutils.escape`, except that a character XML 1.0 cannot
    hold (which that function passes through, making the document unreadable) is U+FFFD."""
    legal = "".join(c if _XML_CHAR.fullmatch(c) else "\ufffd" for c in text)
    assert xml_escape(text) == escape(legal)


@given(st.text())
def test_xml_escape_output_parses_as_xml(text: str) -> None:
    parsed = ET.fromstring(f"<t>{xml_escape(text)}</t>".encode())
    expected = "".join(c if _XML_CHAR.fullmatch(c) else "\ufffd" for c in text)
    # (an XML parser reads every line break, \r\n and \r too, as \n)
    assert (parsed.text or "") == expected.replace("\r\n", "\n").replace("\r", "\n")
