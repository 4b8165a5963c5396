"""`relative = true`: every page links relatively to the file it reaches; such a
site is always built whole, and switching the setting either way leaves the same
site a fresh build makes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from sitekit import RECORD_BODY, SUB_BASE_URL, Project, record_doc, tree

from generator.site.relative_links import file_for, relative_page

ABSOLUTE = re.compile(r'\s(href|src|action)="/(?!/)')


def absolute_links(site: Path) -> list[str]:
    return [
        p.relative_to(site).as_posix() for p in site.rglob("*.html") if ABSOLUTE.search(p.read_text("utf-8"))
    ]


def test_links_name_files_relative_to_each_page() -> None:
    files = {
        "index.html",
        "assets/site.css",
        "pith/P.html",
        "pith/P/index.html",
        "pith/P/state.json",
        "b/index.html",
    }
    text = (
        '<html data-base="/"><a href="/pith/P">r</a><a href="/pith/P/state.json">s</a>'
        '<link href="/assets/site.css"><a href="/">h</a><a href="/b/">b</a><a href="/?q=x#y">q</a>'
        '<a href="/gone">g</a><a href="https://x/y">x</a><a href="#main">m</a>'
        '<meta http-equiv="refresh" content="0; url=/pith/P"><div data-keys="/k.json"></div>'
    )
    page = relative_page(text, "pith/P/index.html", "/", files)
    assert page == (
        '<html data-base="../../"><a href="../P.html">r</a><a href="state.json">s</a>'
        '<link href="../../assets/site.css"><a href="../../index.html">h</a>'
        '<a href="../../b/index.html">b</a><a href="../../index.html?q=x#y">q</a>'
        '<a href="../../gone">g</a><a href="https://x/y">x</a><a href="#main">m</a>'
        '<meta http-equiv="refresh" content="0; url=../P.html"><div data-keys="/k.json"></div>'
    )
    assert relative_page(text, "index.html", "/", files).startswith(
        '<html data-base="./"><a href="pith/P.html">'
    )
    assert file_for("pith/P", {"pith/P.html"}) == "pith/P.html"
    assert file_for("caf%C3%A9", {"café/index.html"}) == "caf%C3%A9/index.html"


def test_a_relative_site_is_rebuilt_whole_and_switching_back_is_a_fresh_site(
    project: Project, tmp_path: Path
) -> None:
    project.add_real()
    first = project.build(relative=True, base_url=SUB_BASE_URL)
    assert first.mode == "full" and absolute_links(project.site) == []
    twin, page = project.site / f"pith/{RECORD_BODY}.html", project.site / f"pith/{RECORD_BODY}/index.html"
    assert 'href="../assets/site.css"' in twin.read_text("utf-8")
    assert f'url=../{RECORD_BODY}.html"' in page.read_text("utf-8")  # (its folder twin, sending readers on)
    project.add("new.json", record_doc(source_id="2110.10105"))
    second = project.build(relative=True, base_url=SUB_BASE_URL)
    assert second.mode == "full" and second.published == 3
    assert absolute_links(project.site) == []
    before = tree(project.site)
    assert project.build(relative=True, base_url=SUB_BASE_URL).files_written == 0  # (nothing changed)
    assert tree(project.site) == before
    project.build(base_url=SUB_BASE_URL)
    assert absolute_links(project.site)
    fresh = Project(tmp_path / "fresh")
    shutil.copytree(project.content, fresh.content)
    fresh.build(base_url=SUB_BASE_URL)
    ours, theirs = tree(project.site), tree(fresh.site)
    assert sorted(ours) == sorted(theirs)
    assert [p for p in ours if ours[p] != theirs[p] and not p.startswith("report")] == []
