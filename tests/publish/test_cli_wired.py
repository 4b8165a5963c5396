"""The publishing commands through the real entry point, `python -m generator` (needs cli.py wiring)."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from generator.site.layout import SUMS_PATH

from .conftest import BUNDLE_BODY, CONTENT, RECORD_FILE, build_site, run_module


def test_compare_two_builds_of_the_same_content(built_site: Path, tmp_path: Path) -> None:
    other = build_site(CONTENT, tmp_path / "other")
    result = run_module("compare", built_site, other, cwd=tmp_path)
    assert result.code == 0, result.out + result.err
    assert "identical" in result.out


def test_compare_reports_a_removed_record(built_site: Path, tmp_path: Path) -> None:
    content = tmp_path / "content"
    shutil.copytree(CONTENT, content)
    (content / RECORD_FILE).unlink()
    smaller = build_site(content, tmp_path / "smaller")
    result = run_module("compare", built_site, smaller, "--json", cwd=tmp_path)
    assert result.code == 1, result.err
    assert json.loads(result.out)["missing_in_b"] == ["pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI"]


def test_compare_without_a_manifest_is_a_usage_error(built_site: Path, tmp_path: Path) -> None:
    result = run_module("compare", built_site, tmp_path, cwd=tmp_path)
    assert result.code == 2
    assert "mirror.json" in result.err


def test_keygen_checksums_verify_site(site_copy: Callable[[str], Path], tmp_path: Path) -> None:
    site = site_copy("site")
    key = tmp_path / "mirror-key.json"
    made = run_module("keygen", key, "--key-id", "lab-mirror", cwd=tmp_path)
    assert made.code == 0, made.err
    assert json.loads(made.out)["key_id"] == "lab-mirror"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert run_module("keygen", key, cwd=tmp_path).code == 2

    assert run_module("checksums", site, "--mirror-key", key, cwd=tmp_path).code == 0
    assert run_module("verify-site", site, "--trust", key, cwd=tmp_path).code == 0
    bundle = site / "pith" / BUNDLE_BODY / "bundle.json"
    bundle.write_bytes(bundle.read_bytes() + b" ")
    failed = run_module("verify-site", site, "--trust", key, cwd=tmp_path)
    assert failed.code == 1
    assert f"pith/{BUNDLE_BODY}/bundle.json" in failed.err


def test_keygen_refuses_to_write_the_private_key_into_a_site(
    site_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """A key written into a site pith-mirror built was kept by incremental builds,
    listed in SHA256SUMS and uploaded with the site."""
    site = site_copy("site")
    for target in (site / "mirror-key.json", site / "pith" / "new-folder" / "k.json"):
        made = run_module("keygen", target, cwd=tmp_path)
        assert made.code == 2, made.err
        assert f"is inside the site {site}, which is published" in made.err
        assert not target.exists()


def test_a_private_key_reached_through_a_link_or_handed_to_checksums_stays_out_of_the_site(
    site_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """keygen looked at the path as written: through a link to a folder of the site
    it wrote the key there. checksums signed with a key inside the site it listed,
    so SHA256SUMS named the private key and the upload carried it."""
    site = site_copy("site")
    (tmp_path / "linked").symlink_to(site / "assets", target_is_directory=True)
    made = run_module("keygen", tmp_path / "linked" / "k.json", cwd=tmp_path)
    assert made.code == 2 and f"is inside the site {site}, which is published" in made.err, made.err
    assert not (site / "assets" / "k.json").exists()

    inside = site / "assets" / "mirror-key.json"
    assert run_module("keygen", tmp_path / "outside.json", cwd=tmp_path).code == 0
    shutil.copy(tmp_path / "outside.json", inside)
    signed = run_module("checksums", site, "--mirror-key", inside, cwd=tmp_path)
    assert signed.code == 2 and "is inside the site" in signed.err, signed.err
    assert not (site / SUMS_PATH).exists()
