"""Two numbers that share their first 8 characters: `pith/<8>` and `paper/<8>`
become a list of both, and go back to one record's pages when the other leaves.

The two titles were found by searching factory records for a 40-bit prefix
collision (about a million tries); the test checks they still collide. Each test runs
with the build state in 32 partitions and in 1,024."""

from __future__ import annotations

from pathlib import Path

import factories as f
import manifestkit
import pytest
from sitekit import Project, assert_same_as_fresh, record_doc

from generator.build import entries

SOURCE = "2310.01010"
TITLES = ("Prefix 734080", "Prefix 1125271")
PREFIX = "TSVXCBQ2"


def number(title: str) -> str:
    return f.pith_number(f.canonical_record(source_id=SOURCE, title=title))


@pytest.fixture(autouse=True, params=["32 partitions", "1,024 partitions"])
def partitions(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test with the build state cut by the body's first character, and by its first
    two (a short form's prefix names its partition either way: see sitewide_write.py)."""
    if request.param == "1,024 partitions":
        monkeypatch.setattr(entries, "WIDE_FROM", 0)
        monkeypatch.setattr(entries, "NARROW_BELOW", 0)


@pytest.fixture(scope="module")
def numbers() -> tuple[str, str]:
    a, b = (number(t) for t in TITLES)
    bodies = a.rsplit(":", 1)[1], b.rsplit(":", 1)[1]
    assert bodies[0][:8] == bodies[1][:8] == PREFIX and bodies[0][:12] != bodies[1][:12]
    return a, b


def test_a_shared_prefix_lists_both_records(tmp_path: Path, numbers: tuple[str, str]) -> None:
    p = Project(tmp_path / "both")
    for i, title in enumerate(TITLES):
        p.add(f"{i}.json", record_doc(source_id=SOURCE, title=title))
    report = p.build()
    assert report.published == 2 and report.rejections == ()
    assert f'url=/pith/{PREFIX}.html"' in p.text(f"pith/{PREFIX}/index.html")
    for page in (f"pith/{PREFIX}.html", f"paper/{PREFIX}.html"):
        text = p.text(page)
        assert "2 records share the short form" in text, page
        assert all(n in text for n in numbers), page
    for n in numbers:  # the 12- and 16-character forms are each one record's
        body = n.rsplit(":", 1)[1]
        assert f"/pith/{body}" in p.text(f"pith/{body[:12]}.html")
        assert "share the short form" not in p.text(f"pith/{body[:16]}.html")
    assert_same_as_fresh(p, tmp_path / "fresh")


@pytest.mark.parametrize("jobs", [1, 2])
def test_short_forms_are_one_file_unless_shared(tmp_path: Path, numbers: tuple[str, str], jobs: int) -> None:
    """A full build writes a record's three short forms, which redirect alike, as
    one file with six names. Where another record shares a form, the site-wide
    stage makes that form a list, and each record's other forms its redirects."""
    p = Project(tmp_path / "three")
    for i, title in enumerate(TITLES):
        p.add(f"{i}.json", record_doc(source_id=SOURCE, title=title))
    p.add("lone.json", record_doc(source_id="2310.02020", title="A record alone"))
    assert p.build(jobs=jobs).published == 3
    lone = next(n for n in manifestkit.numbers(p.site) if n not in numbers)
    body = lone.rsplit(":", 1)[1]
    forms = [p.site / f"pith/{body[:k]}{end}" for k in (8, 12, 16) for end in (".html", "/index.html")]
    assert len({path.stat().st_ino for path in forms}) == 1
    assert f'url=/pith/{body}"' in forms[0].read_text("utf-8")
    for n in numbers:
        body = n.rsplit(":", 1)[1]
        for k in (12, 16):
            assert f'url=/pith/{body}"' in p.text(f"pith/{body[:k]}/index.html")
    assert "2 records share the short form" in p.text(f"pith/{PREFIX}.html")


def test_the_record_s_own_pages_come_back_when_the_other_leaves(
    tmp_path: Path, numbers: tuple[str, str]
) -> None:
    p = Project(tmp_path / "steps")
    p.add("a.json", record_doc(source_id=SOURCE, title=TITLES[0]))
    p.build()
    alone = p.text(f"paper/{PREFIX}.html")
    assert "share the short form" not in alone and TITLES[0] in alone
    p.add("b.json", record_doc(source_id=SOURCE, title=TITLES[1]))
    assert p.build().mode == "incremental"
    assert "2 records share the short form" in p.text(f"paper/{PREFIX}.html")
    assert_same_as_fresh(p, tmp_path / "fresh-both")
    p.remove("b.json")
    assert p.build().mode == "incremental"
    assert p.text(f"paper/{PREFIX}.html") == alone  # restored, not left as a list of one
    assert f'url=/paper/{PREFIX}.html"' in p.text(f"paper/{PREFIX}/index.html")
    assert_same_as_fresh(p, tmp_path / "fresh-alone")


def test_both_records_of_a_shared_prefix_changed_in_one_rebuild(
    tmp_path: Path, numbers: tuple[str, str]
) -> None:
    """Both list the shared paper page among their own files: it is moved into
    the site once, then written as the list."""
    p = Project(tmp_path / "both-changed")
    docs = [record_doc(source_id=SOURCE, title=title) for title in TITLES]
    for i, doc in enumerate(docs):
        p.add(f"{i}.json", doc)
    assert p.build().published == 2
    for i, doc in enumerate(docs):
        doc["paper"]["authors_text"] = f"Changed {i}"  # (unsigned: both stay valid)
        p.add(f"{i}.json", doc)
    report = p.build()
    assert report.mode == "incremental" and report.published == 2, report
    assert "2 records share the short form" in p.text(f"paper/{PREFIX}.html")
    assert_same_as_fresh(p, tmp_path / "fresh")


def test_a_renamed_record_of_a_shared_prefix_keeps_the_list(tmp_path: Path, numbers: tuple[str, str]) -> None:
    """Renamed, a record is rendered again with nothing any site-wide page shows
    changed; its own paper page must not stay over the prefix's list."""
    p = Project(tmp_path / "renamed")
    for i, title in enumerate(TITLES):
        p.add(f"{i}.json", record_doc(source_id=SOURCE, title=title))
    assert p.build().published == 2
    (p.content / "1.json").rename(p.content / "renamed.json")
    assert p.build().mode == "incremental"
    assert "2 records share the short form" in p.text(f"paper/{PREFIX}.html")
    assert_same_as_fresh(p, tmp_path / "fresh")
