"""generator/config.py: where settings are found, and the build's one clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.site.config import STORE_CONTENT, apply, build_time, find_config_file, load_config
from generator.trust.errors import ConfigError


def test_a_pyproject_without_a_pith_mirror_table_means_no_settings(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nline-length = 99\n')
    assert find_config_file(None, tmp_path) is None
    (tmp_path / "pyproject.toml").write_text("[tool.pith-mirror]\njobs = 1\n")
    assert find_config_file(None, tmp_path) == (tmp_path / "pyproject.toml", {"jobs": 1})


@pytest.mark.parametrize(
    ("epoch", "time"),
    [
        (None, None),
        ("", None),
        ("0", "1970-01-01T00:00:00Z"),
        ("253402300799", "9999-12-31T23:59:59Z"),
        ("0" * 5000 + "1", "1970-01-01T00:00:01Z"),
    ],
)
def test_build_time_reads_source_date_epoch_up_to_the_last_second_of_9999(
    monkeypatch: pytest.MonkeyPatch, epoch: str | None, time: str | None
) -> None:
    if epoch is None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    assert build_time() == time


@pytest.mark.parametrize("value", ["[" * 1000 + "]" * 1000, "{a=" * 1000 + "1" + "}" * 1000])
def test_a_settings_file_nested_too_deeply_is_a_configuration_error(tmp_path: Path, value: str) -> None:
    """tomllib recurses: without care, a deep array is a RecursionError traceback."""
    path = tmp_path / "pith-mirror.toml"
    path.write_text(f"x = {value}\n")
    with pytest.raises(ConfigError, match="nests arrays or tables too deeply"):
        find_config_file(path, tmp_path)


@pytest.mark.parametrize(
    ("given", "url", "name"),
    [
        ("s3://bucket/mirror/content", "s3://bucket/mirror/content/", "content"),
        ("S3://bucket/mirror/content//", "s3://bucket/mirror/content/", "content"),
        ("gs://bucket/", "gs://bucket/", "bucket"),
        ("az://container/docs/", "az://container/docs/", "docs"),
    ],
)
def test_content_may_name_an_object_store(tmp_path: Path, given: str, url: str, name: str) -> None:
    config = load_config(None, {"content": given}, tmp_path)
    assert config.content_store == url
    # (a path no file can be read from: code that took it for a folder would fail, not read another)
    assert config.content == STORE_CONTENT / name
    # a later setting of a folder takes the store's place
    assert apply(config, {"content": "docs"}).content_store is None


@pytest.mark.parametrize("given", ["s3://", "gs:///", "az://"])
def test_a_store_url_without_a_bucket_is_a_configuration_error(tmp_path: Path, given: str) -> None:
    with pytest.raises(ConfigError, match="names no bucket"):
        load_config(None, {"content": given}, tmp_path)


def test_other_paths_are_folders(tmp_path: Path) -> None:
    for given in ("content", "s3:content", "./s3/x", "./a://b"):
        assert load_config(None, {"content": given}, tmp_path).content_store is None


@pytest.mark.parametrize("key", ["content", "site"])
def test_a_file_url_is_the_folder_it_names(tmp_path: Path, key: str) -> None:
    config = load_config(None, {key: f"file://{tmp_path}/my%20folder/"}, tmp_path)
    assert getattr(config, key) == tmp_path / "my folder" and config.content_store is None
    config = load_config(None, {key: f"file://localhost{tmp_path}/x"}, tmp_path)
    assert getattr(config, key) == tmp_path / "x"
    with pytest.raises(ConfigError, match="names a folder on this machine"):
        load_config(None, {key: "file://elsewhere/x"}, tmp_path)


@pytest.mark.parametrize("given", ["s3://bucket/site/", "gs://b/p", "https://example.org/site/"])
def test_a_site_in_object_storage_is_refused_not_made_a_folder_named_after_it(
    tmp_path: Path, given: str
) -> None:
    """Taken for a path, "s3://bucket/site/" was a folder "s3:/bucket/site" here, and the
    build said it had published into it."""
    with pytest.raises(ConfigError, match="pith-mirror upload SITE"):
        load_config(None, {"site": given}, tmp_path)


def test_content_at_an_http_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a folder"):
        load_config(None, {"content": "https://example.org/content"}, tmp_path)
