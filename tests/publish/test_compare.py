"""`compare`: two mirrors of the same content agree; every kind of difference is reported."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import manifestkit
import pytest
from netkit import http_server

from generator.publish.compare import LIES, compare_sites
from generator.site.layout import MANIFEST_PATH
from generator.trust.errors import ConfigError

from .conftest import BUNDLE_BODY, BUNDLE_FILE, BUNDLE_NUMBER, CONTENT, RECORD_NUMBER, build_site, publish_cli


def edit_manifest(site: Path, number: str, **changes: object) -> None:
    def change(entry: dict[str, object]) -> None:
        if entry["pith_number"] == number:
            entry.update(changes)

    manifestkit.forge(site, change)


def test_two_builds_of_the_same_content_are_identical(built_site: Path, tmp_path: Path) -> None:
    other = build_site(CONTENT, tmp_path / "other")
    result = compare_sites(built_site, other)
    assert result.identical
    assert result.same == 2 and not result.different and not result.missing_in_a and not result.missing_in_b
    cli = publish_cli("compare", built_site, other)
    assert cli.code == 0, cli.out + cli.err
    assert "identical" in cli.out


def test_a_site_with_a_record_removed(built_site: Path, tmp_path: Path) -> None:
    content = tmp_path / "content"
    content.mkdir()
    (content / BUNDLE_FILE).write_bytes((CONTENT / BUNDLE_FILE).read_bytes())
    smaller = build_site(content, tmp_path / "smaller")
    result = compare_sites(built_site, smaller)
    assert not result.identical
    assert result.missing_in_b == (RECORD_NUMBER,)
    assert result.missing_in_a == ()
    assert result.same == 1 and not result.problems_a and not result.problems_b
    assert compare_sites(smaller, built_site).missing_in_a == (RECORD_NUMBER,)
    cli = publish_cli("compare", built_site, smaller)
    assert cli.code == 1
    assert f"only in A: {RECORD_NUMBER}" in cli.out


def test_a_site_serving_another_bundle(built_site: Path, site_copy: Callable[[str], Path]) -> None:
    """Same number, other bundle bytes, manifest consistent with them: the entries differ."""
    site = site_copy("b")
    changed = json.dumps(json.loads((site / "pith" / BUNDLE_BODY / "bundle.json").read_bytes())).encode()
    for path in (
        site / "pith" / BUNDLE_BODY / "bundle.json",
        site / ".well-known/pith" / BUNDLE_BODY / "bundle.json",
    ):
        path.write_bytes(changed)
    edit_manifest(site, BUNDLE_NUMBER, bundle_sha256=hashlib.sha256(changed).hexdigest())
    result = compare_sites(built_site, site)
    assert result.different == {BUNDLE_NUMBER: ("bundle_sha256",)}
    assert not result.problems_b and result.same == 1
    cli = publish_cli("compare", built_site, site)
    assert cli.code == 1
    assert f"differs:   {BUNDLE_NUMBER}: bundle_sha256" in cli.out


def test_a_changed_bundle_file_makes_the_manifest_a_liar(
    built_site: Path, site_copy: Callable[[str], Path]
) -> None:
    site = site_copy("b")
    bundle = site / "pith" / BUNDLE_BODY / "bundle.json"
    bundle.write_bytes(bundle.read_bytes() + b" ")
    result = compare_sites(built_site, site)
    assert result.different == {} and result.same == 2
    assert result.problems_b == (
        f"{BUNDLE_NUMBER}: pith/{BUNDLE_BODY}/bundle.json: {LIES} (sha256 is not bundle_sha256)",
    )
    cli = publish_cli("compare", built_site, site)
    assert cli.code == 1
    assert LIES in cli.out


def test_a_manifest_entry_that_lies(built_site: Path, site_copy: Callable[[str], Path]) -> None:
    site = site_copy("b")
    edit_manifest(site, RECORD_NUMBER, record_sha256="0" * 64, event_count=5)
    result = compare_sites(built_site, site)
    assert result.different == {RECORD_NUMBER: ("record_sha256", "event_count")}
    assert result.problems_b == (
        f"{RECORD_NUMBER}: pith/{RECORD_NUMBER.rsplit(':', 1)[1]}.json: {LIES} (sha256 is not record_sha256)",
        f"{RECORD_NUMBER}: pith/{RECORD_NUMBER.rsplit(':', 1)[1]}/state.json: {LIES} "
        "(its event_count is not the listed one)",
    )
    # the lie is found even when both sides tell it
    assert compare_sites(site, site).problems_a == result.problems_b


def test_a_missing_file_and_an_unlisted_bundle(built_site: Path, site_copy: Callable[[str], Path]) -> None:
    site = site_copy("b")
    (site / ".well-known/pith" / BUNDLE_BODY / "bundle.json").unlink()
    record_body = RECORD_NUMBER.rsplit(":", 1)[1]
    planted = site / "pith" / record_body / "bundle.json"
    planted.write_bytes((site / "pith" / BUNDLE_BODY / "bundle.json").read_bytes())
    problems = compare_sites(built_site, site).problems_b
    assert problems == (
        f"{BUNDLE_NUMBER}: .well-known/pith/{BUNDLE_BODY}/bundle.json: {LIES} (missing)",
        f"{RECORD_NUMBER}: pith/{record_body}/bundle.json: {LIES} "
        "(a bundle is served but the manifest lists none)",
    )


def test_json_output(built_site: Path, site_copy: Callable[[str], Path]) -> None:
    site = site_copy("b")
    edit_manifest(site, BUNDLE_NUMBER, state_sha256="1" * 64)
    cli = publish_cli("compare", built_site, site, "--json")
    assert cli.code == 1
    data = json.loads(cli.out)
    assert data["identical"] is False
    assert data["different"] == {BUNDLE_NUMBER: ["state_sha256"]}
    assert len(data["problems_b"]) == 1 and "state_sha256" in data["problems_b"][0]


def test_a_site_without_a_manifest_is_a_usage_error(built_site: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"no \.well-known/pith/mirror\.json"):
        compare_sites(built_site, empty)
    assert publish_cli("compare", built_site, empty).code == 2
    assert publish_cli("compare", built_site, tmp_path / "nope").code == 2
    (empty / ".well-known/pith").mkdir(parents=True)
    (empty / MANIFEST_PATH).write_text("[]")
    assert publish_cli("compare", built_site, empty).code == 2


@pytest.fixture
def served(built_site: Path) -> Iterator[str]:
    """The built site over HTTP on the loopback interface, under a sub-path."""
    root = built_site.parent
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[method-assign, assignment]
    with http_server(handler) as url:
        yield f"{url}/{built_site.name}"


def test_a_site_by_url(built_site: Path, served: str, site_copy: Callable[[str], Path]) -> None:
    result = compare_sites(served, built_site)
    assert result.identical and result.same == 2
    assert result.a == served
    site = site_copy("b")
    (site / "pith" / BUNDLE_BODY / "state.json").unlink()
    assert compare_sites(served + "/", site).problems_b == (
        f"{BUNDLE_NUMBER}: pith/{BUNDLE_BODY}/state.json: {LIES} (missing)",
    )
    with pytest.raises(ConfigError, match="has no"):
        compare_sites(served + "/pith/", built_site)


def test_the_budget_holds_for_folders_too(built_site: Path, site_copy: Callable[[str], Path]) -> None:
    other = site_copy("site")
    with pytest.raises(ConfigError, match="longer than its budget"):
        compare_sites(built_site, other, budget=0.0)
    result = publish_cli("compare", built_site, other, "--budget", "0.000001")
    assert result.code == 2 and "budget" in result.err
    assert publish_cli("compare", built_site, other).code == 0


def test_a_file_that_cannot_be_read_is_not_called_missing(
    built_site: Path, site_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Unreadable for the user running it: a mode this test's user may ignore, so the
    read itself is made to fail.)"""
    other = site_copy("site")
    from generator.publish import compare

    real = compare.read_at_most

    def refuse(path: Path, limit: int) -> bytes:
        if path.name == "state.json":
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(compare, "read_at_most", refuse)
    with pytest.raises(ConfigError, match=r"cannot read .*state\.json: Permission denied"):
        compare_sites(built_site, other)
