"""selection: every written form of a Pith number, arXiv ids and DOIs, list files."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.publish.pull_selection import Target, parse_alias, parse_item, read_list

BODY = "GO43K6A5MHLNBUADUVZ3AKFBNI"


@pytest.mark.parametrize(
    ("text", "target"),
    [
        (f"pith:2021:{BODY}", Target("number", BODY)),
        (BODY, Target("number", BODY)),
        (BODY.lower(), Target("number", BODY)),
        (f"pith:{BODY}", Target("number", BODY)),
        (BODY[:8], Target("pith_short_8", BODY[:8])),
        (f"pith:{BODY[:12]}", Target("pith_short_12", BODY[:12])),
        (BODY[:16].lower(), Target("pith_short_16", BODY[:16])),
        ("2111.04007", Target("arxiv", "2111.04007")),
        ("arXiv:2111.04007v2", Target("arxiv_version", "2111.04007v2")),
        ("hep-th/9901001", Target("arxiv", "hep-th/9901001")),
        ("10.48550/arXiv.2111.04007", Target("doi", "10.48550/arxiv.2111.04007")),
        ("https://doi.org/10.1000/XYZ", Target("doi", "10.1000/xyz")),
        ("doi:10.1000/abc", Target("doi", "10.1000/abc")),
    ],
)
def test_each_written_form(text: str, target: Target) -> None:
    assert parse_item(text) == target


@pytest.mark.parametrize("text", ["", "pith:2021:SHORT", "GO43K6A5M", "hello", "10.1/x", "pith:20x1:" + BODY])
def test_what_is_none_of_them(text: str) -> None:
    with pytest.raises(ValueError):
        parse_item(text)


def test_a_forced_kind_accepts_only_that_kind() -> None:
    assert parse_alias("2111.04007", "arxiv") == Target("arxiv", "2111.04007")
    with pytest.raises(ValueError, match="not a DOI"):
        parse_alias("2111.04007", "doi")


def test_a_list_file_with_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "papers.txt"
    path.write_text(f"# our papers\n\n{BODY}  # the first\n  arxiv:2111.04007\n")
    assert read_list(path) == [Target("number", BODY), Target("arxiv", "2111.04007")]
    path.write_text(f"{BODY}\nnot a paper\n")
    with pytest.raises(ValueError, match=r"papers.txt:2: 'not a paper'"):
        read_list(path)
